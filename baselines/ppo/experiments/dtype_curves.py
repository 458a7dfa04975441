"""fp32 against bf16 autocast in the learner: learning curves on the same seeds, and the rule that decides the default.

``python -m baselines.ppo.experiments.dtype_curves [--jobs 2] [--status]``
``python -m baselines.ppo.experiments.dtype_curves_report`` builds ``docs/results/dtype_curves.md``.

Written before any bf16 run:

- Setting: the runaway design's control arm, no filter and no regulariser (:data:`runaway.SETTING`: the shipped
  tiny model, GRPO on Bandit, 16 prompts × 4 samples, 24 iterations, the MI family every 2 iterations on the fixed
  probe), seeds 0-7. ``float32`` is that arm's data (``reused_from``: the same config, run by the runaway design);
  ``bfloat16-autocast`` differs only in ``dtype`` (fp32 weights, gradients and optimiser; the update's forwards and
  backward under bf16 autocast; rollouts and MI in fp32). A third, ``float32`` seed 0 rerun with this design's
  code, checks that the reused fp32 data is what today's code logs (every non-timing value equal).
- Outcomes per run (:data:`OUTCOMES`): mean success over iterations 0-23, and the mean over its MI iterations of
  the probe's MI estimate and of its ITT first-turn retrieval.
- Rule: for each outcome, d_s = bf16 − fp32 on seed s; the margin is the fp32 arm's standard deviation over seeds
  (its seed noise). bf16 is *within seed noise* on an outcome when the 95% bootstrap interval of mean d lies inside
  ± margin (an equivalence reading, not a failure to find a difference), and on the whole when it is on all three.
- The default: ``bfloat16-autocast`` becomes the CPU default only if it is within seed noise **and** faster than
  fp32 on the update (``benchmarks/bench_checkouts.py --dtypes``, docs/benchmarks.md); otherwise ``float32`` stays
  the default and the page says whether the option is safe to use.
"""

from __future__ import annotations

import sys

import numpy as np

from baselines.ppo.experiments import runaway
from baselines.ppo.experiments.driver import MODEL as MODEL  # the model its runs train (a test points it elsewhere)
from baselines.ppo.experiments.driver import ROOT, DesignRun, cli, copy_reused_run, execute_run, load_run, split_done
from baselines.ppo.experiments.stats import bootstrap_ci

DATA = ROOT / "docs" / "results" / "data" / "dtype_curves"
SCRATCH = ROOT / "runs" / "dtype_curves"
COMMAND = "python -m baselines.ppo.experiments.dtype_curves --jobs 2"

SETTING = {**runaway.SETTING, **runaway.ARMS["no_filter"]}
ARMS = {"float32": {"dtype": "float32"}, "bfloat16-autocast": {"dtype": "bfloat16-autocast"}}
SEEDS = runaway.SEEDS
RERUN_SEED = 0
OUTCOMES = {
    "success": "rollout/success",
    "probe MI": "probe_first_turn/mi_estimate",
    "probe ITT retrieval": runaway.PRIMARY,
}
"""Outcome name -> the logged key whose mean over the run's iterations (or its MI iterations) is the outcome."""
LEVEL = 0.95


class Run(DesignRun):
    """One run: stage 0 is the fp32 rerun that checks the reused data, stage 1 the paired comparison."""


load = load_run
copy_reused = copy_reused_run
execute = execute_run


def planned() -> list[Run]:
    """The check first, then both arms seed by seed (a pair finishes together)."""
    pairs = [Run(1, arm, 0.0, seed) for seed in SEEDS for arm in ARMS]
    return [Run(0, "float32", 0.0, RERUN_SEED), *pairs]


def reused_from(run: Run, c_star: float | None) -> runaway.Run | None:
    """A stage-1 fp32 run is the runaway design's control run on the same seed (the same config)."""
    if run.stage == 1 and run.arm == "float32":
        return runaway.Run(1, "no_filter", 0.0, run.seed)
    return None


def status() -> tuple[float | None, str, list[Run], list[Run]]:
    """The driver's shape: no c*, a note, the runs finished and those still to do."""
    done, todo = split_done(planned())
    return None, "no calibration", done, todo


def outcome(rows: list[dict], key: str) -> float:
    """Mean of ``key`` over the iterations that logged it (NaN-free), or NaN when none did."""
    values = [float(r[key]) for r in rows if key in r and np.isfinite(r[key])]
    return float(np.mean(values)) if values else float("nan")


def compare(fp32: dict[int, list[dict]], bf16: dict[int, list[dict]]) -> dict[str, dict]:
    """Per outcome, over the seeds both arms finished: the paired differences, their mean and interval, the
    margin (fp32's seed SD) and whether bf16 is within seed noise."""
    seeds = sorted(set(fp32) & set(bf16))
    out: dict[str, dict] = {}
    for name, key in OUTCOMES.items():
        a = np.array([outcome(fp32[s], key) for s in seeds])
        b = np.array([outcome(bf16[s], key) for s in seeds])
        d = b - a
        margin = float(np.std(a, ddof=1)) if len(seeds) > 1 else float("nan")
        low, high = bootstrap_ci(d, level=LEVEL) if len(seeds) > 1 else (float("nan"), float("nan"))
        within = bool(len(seeds) > 1 and -margin < low and high < margin)
        out[name] = {"seeds": seeds, "fp32": a.tolist(), "bf16": b.tolist(), "mean_difference": float(d.mean()),
                     "ci": (low, high), "margin": margin, "within": within}  # fmt: skip
    return out


def differing_values(reused: list[dict], rerun: list[dict]) -> list[str]:
    """Keys (as ``iteration:key``) whose non-timing logged values differ between the reused and rerun fp32 rows."""
    out = [f"rows: {len(reused)} against {len(rerun)}"] if len(reused) != len(rerun) else []
    for a, b in zip(reused, rerun, strict=False):
        for key in sorted(set(a) | set(b)):
            if key.startswith(("timing/", "perf/")):
                continue
            if a.get(key) != b.get(key) and not (_nan(a.get(key)) and _nan(b.get(key))):
                out.append(f"{a.get('iteration')}:{key}")
    return out


def _nan(value) -> bool:
    return isinstance(value, float) and value != value


def finished() -> dict[str, dict[int, list[dict]]]:
    """Rows of every finished stage-1 run: arm -> seed -> rows."""
    out: dict[str, dict[int, list[dict]]] = {arm: {} for arm in ARMS}
    for run in planned():
        record = load(run) if run.stage == 1 else None
        if record is not None:
            out[run.arm][run.seed] = record["rows"]
    return out


def main(argv: list[str] | None = None) -> int:
    """Run what is left (``--status``: only list it); returns the exit code."""
    return cli(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
