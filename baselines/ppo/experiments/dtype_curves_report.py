"""Build ``docs/results/dtype_curves.md`` and its curves from whatever dtype data exists.

``python -m baselines.ppo.experiments.dtype_curves_report``

Reads ``docs/results/data/dtype_curves/`` (written by :mod:`~baselines.ppo.experiments.dtype_curves`): the check
that the reused fp32 data is what today's code logs, a line per run, the per-outcome equivalence reading over the
seeds both arms finished, and both arms' curves. Runs not yet finished are listed, never imputed.
"""

from __future__ import annotations

import time

from baselines.ppo.experiments import dtype_curves as D
from baselines.ppo.experiments.runaway_report import RESULTS, RUN_HEADER, commits, curves, run_line, write_page
from baselines.ppo.experiments.stats import fmt

PAGE = RESULTS / "dtype_curves.md"
CURVES_PNG = RESULTS / "dtype_curves_curves.png"


def check_line() -> str:
    """What the fp32 rerun showed against the reused fp32 run of the same seed."""
    rerun = D.load(D.Run(0, "float32", 0.0, D.RERUN_SEED))
    reused = D.load(D.Run(1, "float32", 0.0, D.RERUN_SEED))
    if rerun is None or reused is None:
        return "**Check of the reused fp32 data**: not run yet."
    differ = D.differing_values(reused["rows"], rerun["rows"])
    head = (f"**Check of the reused fp32 data**: seed {D.RERUN_SEED} rerun at {rerun.get('code_commit')} against the "
            f"reused run made at {reused.get('code_commit')}: ")  # fmt: skip
    if not differ:
        return head + f"every non-timing value of all {len(rerun['rows'])} logged iterations is equal."
    return head + f"{len(differ)} values differ, e.g. {', '.join(differ[:5])}."


def page() -> str:
    """The results page's markdown."""
    _, _, done, todo = D.status()
    by_arm = D.finished()
    results = D.compare(by_arm["float32"], by_arm["bfloat16-autocast"])
    lines = [
        "# The learner in fp32 and in bf16 autocast: learning curves on the same seeds",
        "",
        f"*Built by `python -m baselines.ppo.experiments.dtype_curves_report` on {time.strftime('%Y-%m-%d')} from the "
        f"data files under docs/results/data/dtype_curves (made by `{D.COMMAND}`). The design and its rule are the "
        "module docstring of `baselines/ppo/experiments/dtype_curves.py`, committed before any bf16 run.*",
        "",
        f"**Status**: {len(done)} runs finished, {len(todo)} to go"
        + (f" ({', '.join(r.name for r in todo)})" if todo else "")
        + f". Code commit(s): {', '.join(commits(done)) or 'none yet'}.",
        "",
        check_line(),
        "",
        "## Outcomes (bf16 − fp32, paired by seed)",
        "",
        "| outcome | seeds | fp32 mean | bf16 mean | mean difference | 95% CI | margin (fp32 seed SD) | within seed noise |",
        "|---|---:|---:|---:|---:|---|---:|---|",
    ]
    for name, r in results.items():
        n = len(r["seeds"])
        if n == 0:
            lines.append(f"| {name} | 0 | | | | | | |")
            continue
        fp32, bf16 = sum(r["fp32"]) / n, sum(r["bf16"]) / n
        low, high = r["ci"]
        lines.append(f"| {name} | {n} | {fmt(fp32)} | {fmt(bf16)} | {fmt(r['mean_difference'])} | "
                     f"[{fmt(low)}, {fmt(high)}] | {fmt(r['margin'])} | {'yes' if r['within'] else 'no'} |")  # fmt: skip
    complete = bool(results) and all(len(r["seeds"]) == len(D.SEEDS) for r in results.values())
    within = complete and all(r["within"] for r in results.values())
    verdict = (
        "bf16 autocast is within seed noise on all three outcomes" if within
        else "bf16 autocast is not shown to be within seed noise" if complete
        else "the comparison is not complete yet"
    )  # fmt: skip
    lines += ["", f"**Reading**: {verdict}. The default changes only if bf16 is also faster on the update, which "
              "docs/benchmarks.md has not shown on CPU, so `float32` stays the CPU default.", "",
              "## Runs", "", *RUN_HEADER]  # fmt: skip
    for arm, runs in by_arm.items():
        for seed, rows in sorted(runs.items()):
            lines.append(run_line(f"{arm} seed {seed}", rows))
    lines.append("")
    groups = {arm: list(runs.values()) for arm, runs in by_arm.items() if runs}
    lines += curves(groups, CURVES_PNG, "Bandit, tiny model, GRPO, no regulariser: mean, band = min-max")
    return "\n".join(lines) + "\n"


def main() -> int:
    """Write the page (and the curves once a run has finished)."""
    return write_page(PAGE, page())


if __name__ == "__main__":
    raise SystemExit(main())
