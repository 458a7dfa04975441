"""Strict template collapse on FrozenLake: exploratory pilots, their settings and stopping rule fixed before any run.

``python -m baselines.ppo.experiments.template_pilots [--jobs 2] [--status]``

Runs the pilots below in their listed order, at most ``--jobs`` (≤ 2) at a time, each in its own process on one
torch thread (:mod:`~baselines.ppo.experiments.driver`). Every finished pilot is one JSON file under
``docs/results/data/template_pilots/``; an interrupted pilot resumes from its checkpoint under
``runs/template_pilots/``, so the search spans sessions: rerun the same command.
``python -m baselines.ppo.experiments.template_pilots_report`` builds ``docs/results/template_pilots.md``.

Why these pilots. The runaway design (:mod:`~baselines.ppo.experiments.runaway`) tests the filter against an entropy
runaway on Bandit, whose reasoning carries one input slot. *Strict* template collapse — well-formed, diverse
reasoning that stops depending on the input while success holds — arose in none of its pilots. The tiny model's
first-turn reasoning on FrozenLake copies several grid cells (retrieval 0.90, MI 0.64 nats/token on 10 prompts × 3
of its own samples) and its success starts near 0.4, so reward spread exists and can shrink. Dr.GRPO and PPO scale
their task gradient with the reward spread (no division by the group's std), which is where a regulariser can
dominate without a runaway; GRPO is the comparison.

Written before any pilot ran:

- Setting: the runaway design's (shipped tiny model, 16 prompts × 4 samples, one on-policy optimiser step per
  iteration, actor lr 2e-4, KL off, T = 1, 24 iterations, the MI family every 2 iterations on the batch and on the
  fixed probe of 16 pairwise-distinguishable env seeds × 4 samples), on ``ragen/FrozenLake-v0`` with its default
  arguments and 128 new tokens per turn (its reasoning lists cells; 64 cuts it). No filter (top-p 1, zero-spread
  groups kept). PPO's critic learns at 1e-4.
- Pilots, seed 0, in this order: Dr.GRPO, PPO and GRPO, each at entropy coefficient 0.07 (the runaway design's c*)
  and at 0 (its control), then each at 0.03 (``PILOTS``).
- Per-pilot reading: the runaway design's strict rule (:func:`runaway.strict_collapse`: over iterations 14-23 the
  probe's raw first-turn retrieval ≤ 0.5 × iteration 0, its reasoning rate ≥ 0.8, success ≥ 0.8 × iteration 0);
  a *runaway* instead when the window's success is ≤ 0.5 × iteration 0 (:func:`ran_away`). Each pilot's curves are
  shown whatever it found.
- Stopping rule: the search stops at the first finished pilot that shows the strict pattern (the runaway design's
  two stages are then to be run in that pilot's setting, as a new pre-registered design); otherwise after the last
  pilot, and the page says the pattern was not found, what was tried and what it cost.
"""

from __future__ import annotations

import sys

from baselines.ppo.experiments import runaway
from baselines.ppo.experiments.driver import MODEL as MODEL  # the model its runs train (a test points it elsewhere)
from baselines.ppo.experiments.driver import ROOT, DesignRun, cli, copy_reused_run, execute_run, load_run, split_done

DATA = ROOT / "docs" / "results" / "data" / "template_pilots"
SCRATCH = ROOT / "runs" / "template_pilots"
COMMAND = "python -m baselines.ppo.experiments.template_pilots --jobs 2"

SETTING = {
    **runaway.SETTING, "env_id": "ragen/FrozenLake-v0", "env_kwargs": {}, "max_new_tokens": 128,
    **runaway.ARMS["no_filter"],
}  # fmt: skip
ARMS = {  # algorithm -> the learner settings that name it
    "drgrpo": {"advantage": "drgrpo"},
    "ppo": {"advantage": "gae", "critic_lr": 1e-4},
    "grpo": {"advantage": "grpo"},
}
PILOTS = (
    ("drgrpo", 0.07), ("drgrpo", 0.0), ("ppo", 0.07), ("ppo", 0.0), ("grpo", 0.07), ("grpo", 0.0),
    ("drgrpo", 0.03), ("ppo", 0.03), ("grpo", 0.03),
)  # fmt: skip
SEED = 0
RAN_AWAY = 0.5
"""A pilot ran away when its window's mean success is at most this fraction of iteration 0's."""


class Run(DesignRun):
    """One pilot (stage 0 throughout: the pilots have no stages)."""


load = load_run
copy_reused = copy_reused_run
execute = execute_run


def planned() -> list[Run]:
    """Every pilot, in the order the search runs them."""
    return [Run(0, arm, coef, SEED) for arm, coef in PILOTS]


def reused_from(run: Run, c_star: float | None) -> Run | None:
    """Pilots reuse no earlier run (the driver asks every design)."""
    return None


def strict(rows: list[dict]) -> bool:
    """Whether a pilot shows strict template collapse: the runaway design's rule, one definition."""
    return runaway.strict_collapse(rows)


def ran_away(rows: list[dict]) -> bool:
    """Whether a pilot's success fell to ≤ ``RAN_AWAY`` × iteration 0 over the window (a runaway, not collapse)."""
    success = runaway.success_change(rows)
    return success is not None and bool(success[1] <= RAN_AWAY * success[0])


def search(finished: dict[Run, list[dict]]) -> tuple[Run | None, str]:
    """The first pilot (in plan order, among the finished ones) showing the strict pattern, and the search's state."""
    for run in planned():
        rows = finished.get(run)
        if rows is not None and strict(rows):
            return run, f"STOP: strict template collapse in {run.name}"
    if all(run in finished for run in planned()):
        return None, f"STOP: no strict template collapse in {len(PILOTS)} pilots"
    return None, "searching"


def finished_rows() -> dict[Run, list[dict]]:
    """The logged rows of every finished pilot."""
    return {run: record["rows"] for run in planned() if (record := load(run)) is not None}


def status() -> tuple[float | None, str, list[Run], list[Run]]:
    """Where the search stands (the driver's shape: no c*, why, the pilots finished and those still to do)."""
    _, why = search(finished_rows())
    done, todo = split_done(planned())
    return None, why, done, [] if why.startswith("STOP") else todo


def main(argv: list[str] | None = None) -> int:
    """Run what is left of the search (``--status``: only list it); returns the exit code."""
    return cli(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
