"""Does SNR-aware filtering protect input-dependent reasoning where the regulariser does harm? Pre-registered.

``python -m baselines.ppo.experiments.runaway [--jobs 2] [--stage 0|1|all] [--status]``

Runs the design below, one training run per (stage, cell, seed), at most ``--jobs`` (≤ 2) at a time, each in its
own process on one torch thread (:mod:`~baselines.ppo.experiments.driver`). Every finished run is one JSON file
under ``docs/results/data/runaway/``; an interrupted run resumes from its checkpoint under ``runs/runaway/``, so the
experiment spans sessions: rerun the same command. ``python -m baselines.ppo.experiments.runaway_report``
builds ``docs/results/runaway.md`` from whatever data exists.

Why this design. The miniature (``miniature.py``) could not show the effect: its regulariser barely acted (its
calibration picked the coefficient that does least), its primary outcome was capped by how many prompts of each
batch shared the one name the reasoning copies (the batch's retrieval ceiling, set by the env seeds drawn, not by
the policy), and ITT mixed format learning into input dependence. Pilots at c = 0.07 showed the harm the
regulariser does here: an entropy runaway in every no-filter seed, onset at iteration 5-11. This design is fixed
before any of its data exists:

- Setting: the miniature's (shipped tiny model; ``ragen/Bandit-v0`` with ``risky_prob=1``; GRPO; lr 2e-4;
  16 prompts × 4 samples; ≤ 64 tokens; one on-policy optimiser step per iteration; KL off; T = 1), for
  **24 iterations**, the MI family every **2** iterations (0, 2, …, 22) on the batch (first turn, all 64 pairs)
  and on the **fixed probe** (``mi_probe_seeds=16``, 4 samples each: 16 env seeds whose arm names are pairwise
  distinct, so the probe's retrieval ceiling is 1 and its prompts are the same at every reading).
- Stage 0, calibration: no filter, c ∈ {0.06, 0.07, 0.08} × seeds {0, 1, 2}. c* = the smallest c for which at
  least 2 of its 3 seeds show the primary level (below) at or under 0.5 × the run's iteration-0 value. If no c
  qualifies the design stops there and the page says the regulariser did no such harm at c ≤ 0.08 in 24 iterations.
- Stage 1: {no filter @ 0, no filter @ c*, SNR filter @ c*, random drop @ c*} × seeds 0-7, paired by seed (the
  same env seeds and sampling seeds: iteration 0 is identical across arms). Filter = RAGEN's top-p 0.9, linear,
  std, zero-spread groups dropped, eps 0.01; random drop = as many groups as the filter kept, drawn at random;
  no filter = top-p 1 with zero-spread groups kept. The stage-0 runs at c* (seeds 0-2) are the stage-1 cell
  no filter @ c* for those seeds and are reused.
- Primary outcome (per run): the probe's intention-to-treat first-turn retrieval accuracy (a probe first turn
  without reasoning counts as a miss), mean over the MI measurements of iterations 14-23 (14, 16, 18, 20, 22)
  **minus** its iteration-0 value (a change score). Reported beside its factors (the probe's reasoning rate and
  raw retrieval; the batch's raw retrieval against its ceiling), the probe's MI estimate, token entropy, success,
  zero-spread groups.
- Hypotheses on the primary, paired over seeds: (a) no filter @ 0 − no filter @ c* > 0 (the regulariser harms);
  (b1) filter @ c* − no filter @ c* > 0 (the filter protects); (b2) filter @ c* − random drop @ c* > 0 (selection
  by spread, not fewer groups, protects). One-sided exact paired sign-flip tests. **Decision: intersection-union**
  — the effect is shown iff each of (a), (b1), (b2) has p ≤ 0.05 (a conjunction needs no multiplicity
  correction); separate claims about each are Holm-adjusted over the three. Effect sizes: paired mean differences
  with seeded bootstrap 95% intervals.
- Secondary, pre-registered, descriptive: a linear mixed model over every probe measurement, outcome ~ arm ×
  iteration with random intercepts for seed and for the (seed, iteration) batch shared by the arms, showing when
  the arms separate; not used for the decision.
- Naming: this tests protection of input-dependent reasoning against a regulariser runaway. The page calls a run
  *strict template collapse* only where the probe's raw retrieval (among first turns with reasoning) falls to
  ≤ 0.5 × iteration 0 while its reasoning rate stays ≥ 0.8 and success ≥ 0.8 × iteration 0 (window means), and
  counts such runs per cell.
"""

from __future__ import annotations

import sys

import numpy as np

from baselines.ppo.experiments import miniature
from baselines.ppo.experiments.driver import MODEL as MODEL  # the model its runs train (a test points it elsewhere)
from baselines.ppo.experiments.driver import (
    ROOT,
    DesignRun,
    cli,
    copy_reused_run,
    execute_run,
    load_run,
    split_done,
)

DATA = ROOT / "docs" / "results" / "data" / "runaway"
SCRATCH = ROOT / "runs" / "runaway"
COMMAND = "python -m baselines.ppo.experiments.runaway --jobs 2"

# the miniature's setting and arms, for 24 iterations with MI every 2 on the fixed probe (no gradient buckets)
SETTING = {
    **miniature.SETTING, "iterations": 24, "mi_every": 2, "mi_probe_seeds": 16, "mi_probe_samples": 4,
    "grad_buckets_every": 0,
}  # fmt: skip
ARMS = miniature.ARMS
CALIBRATION = (0.06, 0.07, 0.08)
CALIBRATION_SEEDS = (0, 1, 2)
HARMED = 0.5
"""A calibration run is harmed when its primary level falls to at most this fraction of iteration 0."""
HARMED_SEEDS = 2
SEEDS = tuple(range(8))
CELLS = (("no_filter", "0"), ("no_filter", "c*"), ("filter", "c*"), ("random_drop", "c*"))

PRIMARY = "probe_first_turn/retrieval_accuracy_itt"
WINDOW = (14, 23)
"""Iterations (inclusive) whose MI measurements the primary outcome averages."""
HYPOTHESES = {  # name -> (description, {cell: weight}); the paired difference is Σ weight·outcome(cell)
    "a": ("no filter: c = 0 minus c* (the regulariser harms)", {"no_filter@0": 1, "no_filter@c*": -1}),
    "b1": ("at c*: filter minus no filter (the filter protects)", {"filter@c*": 1, "no_filter@c*": -1}),
    "b2": ("at c*: filter minus random drop (selection by spread)", {"filter@c*": 1, "random_drop@c*": -1}),
}
ALPHA = 0.05
STRICT = dict(retrieval_drop=0.5, reasoning_rate=0.8, success_kept=0.8)
"""Strict template collapse, per run (window means against iteration 0): probe raw retrieval ≤ 0.5×, probe
reasoning rate ≥ 0.8, success ≥ 0.8×."""


class Run(DesignRun):
    """One training run of the runaway experiment."""


load = load_run


def measurements(rows: list[dict], key: str = PRIMARY) -> dict[int, float]:
    """iteration -> the value of ``key`` at every MI measurement of the probe (ITT retrieval is 0 where no probe
    first turn had reasoning, which the learner logs as such)."""
    return {row["iteration"]: float(row[key]) for row in rows if key in row and np.isfinite(row[key])}


def window_mean(rows: list[dict], key: str = PRIMARY) -> float:
    """The mean of ``key`` over the measurements in the window (NaN while there are none)."""
    values = [v for i, v in measurements(rows, key).items() if WINDOW[0] <= i <= WINDOW[1]]
    return float(np.mean(values)) if values else float("nan")


def start_value(rows: list[dict], key: str = PRIMARY) -> float:
    """``key`` at iteration 0 (NaN when not measured)."""
    return measurements(rows, key).get(0, float("nan"))


def primary(rows: list[dict]) -> float:
    """The primary outcome: window mean minus iteration 0 (NaN until both exist)."""
    return window_mean(rows) - start_value(rows)


def harmed(rows: list[dict]) -> bool:
    """Whether a calibration run's primary level fell to ≤ ``HARMED`` × its iteration-0 value."""
    start, late = start_value(rows), window_mean(rows)
    return bool(np.isfinite(start) and np.isfinite(late) and late <= HARMED * start)


def success_change(rows: list[dict]) -> tuple[float, float] | None:
    """(iteration 0's success, the window's mean success), or None until the run has both."""
    by_iteration = {row["iteration"]: row for row in rows}
    late = [by_iteration[i]["rollout/success"] for i in range(WINDOW[0], WINDOW[1] + 1) if i in by_iteration]
    if not late or 0 not in by_iteration:
        return None
    return by_iteration[0]["rollout/success"], float(np.mean(late))


def strict_collapse(rows: list[dict]) -> bool:
    """Whether a run shows strict template collapse (``STRICT``): input dependence lost, format and success kept."""
    raw = "probe_first_turn/retrieval_accuracy"
    rate = "probe_first_turn/valid_rate"
    success = success_change(rows)
    if success is None:
        return False
    start, late = success
    return bool(
        window_mean(rows, raw) <= STRICT["retrieval_drop"] * start_value(rows, raw)
        and window_mean(rows, rate) >= STRICT["reasoning_rate"]
        and late >= STRICT["success_kept"] * start
    )


def calibrate(stage0: dict[float, dict[int, list[dict]]]) -> tuple[float | None, str]:
    """c* from the stage-0 rows (coefficient -> seed -> rows), and why; None while not yet determined.

    The smallest harmful c is decided as soon as it has ≥ ``HARMED_SEEDS`` harmed seeds and every smaller c is
    complete and not harmful; "none" needs every run."""
    for c in CALIBRATION:  # ascending
        runs = stage0.get(c, {})
        count = sum(harmed(rows) for rows in runs.values())
        if count >= HARMED_SEEDS:
            return c, f"smallest c with ≥ {HARMED_SEEDS} of {len(CALIBRATION_SEEDS)} seeds harmed"
        if len(runs) < len(CALIBRATION_SEEDS):
            return None, "calibration incomplete"
    return None, f"STOP: no c ≤ {max(CALIBRATION)} harmed ≥ {HARMED_SEEDS} seeds in {SETTING['iterations']} iterations"


def stage0_rows() -> dict[float, dict[int, list[dict]]]:
    """The logged rows of each finished calibration run: coefficient -> seed -> rows."""
    out: dict[float, dict[int, list[dict]]] = {}
    for c in CALIBRATION:
        for seed in CALIBRATION_SEEDS:
            record = load(Run(0, "no_filter", c, seed))
            if record is not None:
                out.setdefault(c, {})[seed] = record["rows"]
    return out


def planned(c_star: float | None, stopped: bool = False) -> list[Run]:
    """Every run of the design in execution order (a coefficient of -1 marks a run waiting for c*).

    Stage 0 coefficient by coefficient, ascending, so c* is decided as early as it can be; then stage 1 in
    complete seed blocks; then the stage-0 runs of coefficients above c*, which cannot change c* (descriptive,
    last). Nothing of stage 1 when calibration stopped the design.
    """
    stage0 = [Run(0, "no_filter", c, seed) for c in CALIBRATION for seed in CALIBRATION_SEEDS]
    if stopped:
        return stage0
    stage1 = []
    for seed in SEEDS:
        for arm, coef in CELLS:
            value = 0.0 if coef == "0" else (-1.0 if c_star is None else c_star)
            stage1.append(Run(1, arm, value, seed))
    if c_star is None:
        return stage0 + stage1
    return [r for r in stage0 if r.coef <= c_star] + stage1 + [r for r in stage0 if r.coef > c_star]


def reused_from(run: Run, c_star: float | None) -> Run | None:
    """The stage-0 run identical to a stage-1 run (no filter at c*, a calibration seed), if any."""
    if (
        run.stage == 1 and run.arm == "no_filter" and c_star is not None and run.coef == c_star
        and run.seed in CALIBRATION_SEEDS
    ):  # fmt: skip
        return Run(0, "no_filter", c_star, run.seed)
    return None


copy_reused = copy_reused_run


execute = execute_run


def status() -> tuple[float | None, str, list[Run], list[Run]]:
    """Where the experiment stands: c* and why, the runs finished and the runs still to do."""
    c_star, why = calibrate(stage0_rows())
    return c_star, why, *split_done(planned(c_star, stopped=why.startswith("STOP")))


def main(argv: list[str] | None = None) -> int:
    """Run what is left of the design (``--status``: only list it); returns the exit code."""
    return cli(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
