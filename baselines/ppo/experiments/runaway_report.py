"""Build ``docs/results/runaway.md`` and its plot from whatever runaway data exists.

``python -m baselines.ppo.experiments.runaway_report``

Reads ``docs/results/data/runaway/`` (written by :mod:`~baselines.ppo.experiments.runaway`) and applies that
module's pre-registered analysis to the seeds whose stage-1 cells are all complete: the paired sign-flip tests and
the intersection-union decision, bootstrap intervals, the mixed model over iterations (secondary) and the strict
template-collapse count. Every table says how many runs or seeds it rests on; missing runs are listed, never
imputed.
"""

from __future__ import annotations

import time

import numpy as np

from baselines.ppo.experiments import runaway as R
from baselines.ppo.experiments.driver import ROOT
from baselines.ppo.experiments.stats import fmt, hypothesis_lines, paired_tests
from harness.training_report import plot_curves

RESULTS = ROOT / "docs" / "results"
PAGE = RESULTS / "runaway.md"
CURVES_PNG = RESULTS / "runaway_curves.png"
CURVE_KEYS = (
    (R.PRIMARY, "probe first-turn retrieval (ITT)"),
    ("probe_first_turn/retrieval_accuracy", "probe retrieval among reasonings"),
    ("probe_first_turn/valid_rate", "probe first turns with reasoning"),
    ("probe_first_turn/mi_estimate", "probe MI estimate (nats)"),
    ("actor/token_entropy", "token entropy (nats)"),
    ("rollout/success", "success"),
)


def cells(c_star: float | None) -> dict[str, dict[int, list[dict]]]:
    """Stage-1 cell name (``arm@0`` / ``arm@c*``) -> seed -> rows, for the finished runs."""
    out: dict[str, dict[int, list[dict]]] = {}
    for arm, coef in R.CELLS:
        name = f"{arm}@{coef}"
        out[name] = {}
        value = 0.0 if coef == "0" else c_star
        if value is None:
            continue
        for seed in R.SEEDS:
            record = R.load(R.Run(1, arm, value, seed))
            if record is not None:
                out[name][seed] = record["rows"]
    return out


def run_line(label: str, rows: list[dict]) -> str:
    """One table line of a run: the primary's start, window level and change, its factors and the rest."""
    entropy = [r["actor/token_entropy"] for r in rows if "actor/token_entropy" in r]
    success = [r["rollout/success"] for r in rows if R.WINDOW[0] <= r["iteration"] <= R.WINDOW[1]]
    cells_ = [
        fmt(R.start_value(rows)), fmt(R.window_mean(rows)), fmt(R.primary(rows)),
        fmt(R.window_mean(rows, "probe_first_turn/valid_rate")),
        fmt(R.window_mean(rows, "probe_first_turn/retrieval_accuracy")),
        fmt(R.window_mean(rows, "probe_first_turn/mi_estimate")),
        fmt(max(entropy) if entropy else None), fmt(float(np.mean(success)) if success else None),
        "yes" if R.strict_collapse(rows) else "no", str(len(rows)),
    ]  # fmt: skip
    return f"| {label} | " + " | ".join(cells_) + " |"


RUN_HEADER = [
    "| run | primary at 0 | window mean | change | reasoning rate | raw retrieval | probe MI | max token entropy "
    "| success (window) | strict collapse | iterations |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
]


def hypotheses(by_cell: dict[str, dict[int, list[dict]]]) -> tuple[list[str], dict]:
    """The pre-registered tests on the seeds complete in every cell a hypothesis needs."""
    results = paired_tests(R.HYPOTHESES, by_cell, R.SEEDS, R.primary)
    return hypothesis_lines(R.HYPOTHESES, results), results


def decision(results: dict) -> str:
    """The pre-registered intersection-union decision (incomplete below 8 seeds per hypothesis)."""
    have = min(results[n]["n"] for n in R.HYPOTHESES)
    if have < len(R.SEEDS):
        return f"**Incomplete**: the decision needs {len(R.SEEDS)} complete seeds per hypothesis, {have} so far."
    failing = [n for n in R.HYPOTHESES if not results[n]["p"] <= R.ALPHA]
    if not failing:
        return "**Effect shown**: (a), (b1) and (b2) each have p ≤ 0.05 (intersection-union test)."
    return f"**Effect not shown**: ({'), ('.join(failing)}) p > 0.05 (intersection-union test)."


def mixed_model(by_cell: dict[str, dict[int, list[dict]]]) -> list[str]:
    """The pre-registered secondary: outcome ~ arm × iteration, random intercepts for seed and for the (seed,
    iteration) batch the arms share; descriptive."""
    data = [(cell, seed, i, v) for cell, runs in by_cell.items() for seed, rows in runs.items()
            for i, v in R.measurements(rows).items()]  # fmt: skip
    if len({d[0] for d in data}) < 2 or len({d[1] for d in data}) < 3:
        return ["Not fitted yet: it needs at least two cells with three seeds each."]
    try:
        import pandas as pd
        import statsmodels.formula.api as smf
    except ImportError:
        return ["Not fitted: needs pandas and statsmodels (pip install 'ragen-envs[report]')."]
    frame = pd.DataFrame(data, columns=["cell", "seed", "iteration", "y"])
    frame["arm"] = pd.Categorical(
        frame["cell"], categories=["no_filter@c*", *sorted(set(frame.cell) - {"no_filter@c*"})]
    )
    frame["batch"] = frame["seed"].astype(str) + ":" + frame["iteration"].astype(str)
    model = smf.mixedlm("y ~ arm * iteration", frame, groups=frame["seed"], vc_formula={"batch": "0 + C(batch)"})
    try:
        fit = model.fit(reml=True, method="lbfgs")
    except (ValueError, np.linalg.LinAlgError) as error:
        return [f"Not fitted: {type(error).__name__}: {error}"]
    lines = ["| term (reference: no_filter@c*) | estimate | 95% CI | p |", "|---|---|---|---|"]
    ci = fit.conf_int()
    for term in fit.fe_params.index:
        lines.append(f"| {term} | {fmt(fit.fe_params[term])} | [{fmt(ci.loc[term, 0])}, {fmt(ci.loc[term, 1])}] | "
                     f"{fmt(fit.pvalues[term], 4)} |")  # fmt: skip
    lines += ["", f"{len(frame)} probe measurements, {frame.seed.nunique()} seeds. The arm × iteration terms say when "
              "the arms separate; p-values here rest on normality and on the random effects capturing the runs' "
              "autocorrelation, which the sign-flip tests above do not need."]  # fmt: skip
    return lines


def commits(runs: list) -> list[str]:
    """The distinct code commits the finished runs were made at."""
    return sorted({(R.load(run) or {}).get("code_commit", "unknown") for run in runs})


def page() -> str:
    """The results page's markdown."""
    c_star, why, done, todo = R.status()
    lines = [
        "# Does SNR-aware filtering protect input-dependent reasoning where the regulariser does harm?",
        "",
        f"*Built by `python -m baselines.ppo.experiments.runaway_report` on {time.strftime('%Y-%m-%d')} from "
        f"the data files under docs/results/data/runaway (made by `{R.COMMAND}`). The design is the module docstring of "
        "`baselines/ppo/experiments/runaway.py`, committed before any of its data.*",
        "",
        "This tests protection of input-dependent reasoning against a regulariser runaway (an entropy term that, "
        "with few groups carrying reward spread, pushes the policy off its format). It is called template collapse "
        "only for runs that meet the strict pattern (input dependence lost with format and success kept).",
        "",
        f"**Status**: c* = {c_star} ({why}); {len(done)} runs finished, {len(todo)} to go. Code commit(s) of the "
        f"finished runs: {', '.join(commits(done)) or 'none yet'} (a run's data file records its commit, model and "
        "command; continue the design from the same code so every seed's arms share it).",
        "",
        "## Stage 0: calibration (no filter)",
        "",
        *RUN_HEADER,
    ]
    for c in R.CALIBRATION:
        for seed in R.CALIBRATION_SEEDS:
            record = R.load(R.Run(0, "no_filter", c, seed))
            if record is not None:
                harmed = "harmed" if R.harmed(record["rows"]) else "not harmed"
                lines.append(run_line(f"c={c:g} seed {seed} ({harmed})", record["rows"]))
    missing = [r.name for r in todo if r.stage == 0]
    lines += ["", f"Primary = the probe's ITT first-turn retrieval; window = iterations {R.WINDOW[0]}-{R.WINDOW[1]}. "
              f"Harmed: window mean ≤ {R.HARMED} × iteration 0. Not finished: {', '.join(missing) or 'none'}.", ""]  # fmt: skip
    by_cell = cells(c_star)
    lines += ["## Stage 1", ""]
    if c_star is None:
        lines += ["Waiting for c* (or stopped by the calibration rule).", ""]
    else:
        lines += [*RUN_HEADER]
        for cell, runs in by_cell.items():
            for seed, rows in sorted(runs.items()):
                lines.append(run_line(f"{cell} seed {seed}", rows))
        table, results = hypotheses(by_cell)
        lines += ["", "### Hypotheses (primary: change of the probe's ITT retrieval, window minus iteration 0)", "",
                  *table, "", decision(results), "", "### Secondary: mixed model over iterations", "",
                  *mixed_model(by_cell), ""]  # fmt: skip
        groups = {cell: list(runs.values()) for cell, runs in by_cell.items() if runs}
        lines += curves(groups, CURVES_PNG, "Bandit, tiny model, GRPO at c*: mean, band = min-max")
    return "\n".join(lines) + "\n"


def curves(groups: dict[str, list[list[dict]]], path, title: str) -> list[str]:
    """The page's lines showing the runs' curves (plotted to ``path``), or none while no run has finished."""
    if not groups:
        return []
    plot = plot_curves(groups, path, CURVE_KEYS, title)
    return [f"![curves]({plot.name})" if plot else "(plots need matplotlib)", ""]


def write_page(path, text: str) -> int:
    """Write a results page and say so; the exit code."""
    path.write_text(text)
    print(f"wrote {path.relative_to(ROOT)}")
    return 0


def main() -> int:
    """Write the page (and the curves once stage 1 has data)."""
    return write_page(PAGE, page())


if __name__ == "__main__":
    raise SystemExit(main())
