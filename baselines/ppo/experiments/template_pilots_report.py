"""Build ``docs/results/template_pilots.md`` and its curves from whatever pilot data exists.

``python -m baselines.ppo.experiments.template_pilots_report``

Reads ``docs/results/data/template_pilots/`` (written by :mod:`~baselines.ppo.experiments.template_pilots`): one
line per finished pilot in the runaway page's columns (one definition: :func:`runaway_report.run_line`) with its
reading (strict template collapse, runaway, or neither), the search's state under its stopping rule, and every
pilot's curves. Pilots not yet run are listed, never imputed.
"""

from __future__ import annotations

import time

from baselines.ppo.experiments import template_pilots as P
from baselines.ppo.experiments.runaway_report import RESULTS, RUN_HEADER, commits, curves, run_line, write_page

PAGE = RESULTS / "template_pilots.md"
CURVES_PNG = RESULTS / "template_pilots_curves.png"
NAMES = {"drgrpo": "Dr.GRPO", "ppo": "PPO", "grpo": "GRPO"}


def label(run: P.Run) -> str:
    """A pilot's name on the page: algorithm and entropy coefficient."""
    return f"{NAMES[run.arm]} c={run.coef:g}"


def reading(rows: list[dict]) -> str:
    """What a finished pilot showed under the pre-written rules."""
    if P.strict(rows):
        return "strict template collapse"
    return "runaway (success fell)" if P.ran_away(rows) else "neither"


def cost_line(runs: list[P.Run]) -> str:
    """What the finished pilots cost: their wall time in all, from each data file's own record."""
    seconds = [float((P.load(run) or {}).get("wall_s_this_process", 0.0)) for run in runs]
    return (f"**Cost**: {len(runs)} pilots, {sum(seconds) / 60:.0f} min of wall time in all (each on one torch thread, "
            "two at a time on a shared 2-core box; the sum of the runs' own `wall_s_this_process`, which counts any "
            "time a run was paused).")  # fmt: skip


def page() -> str:
    """The results page's markdown."""
    finished = P.finished_rows()
    found, why = P.search(finished)
    todo = [run for run in P.planned() if run not in finished]
    lines = [
        "# Strict template collapse on FrozenLake: pilots",
        "",
        f"*Built by `python -m baselines.ppo.experiments.template_pilots_report` on {time.strftime('%Y-%m-%d')} from "
        f"the data files under docs/results/data/template_pilots (made by `{P.COMMAND}`). The settings, the order and "
        "the stopping rule are the module docstring of `baselines/ppo/experiments/template_pilots.py`, committed "
        "before any pilot ran. Exploratory: one seed per pilot, no test; a finding is confirmed by a new "
        "pre-registered design, not here.*",
        "",
        f"**Search**: {why}. {len(finished)} of {len(P.PILOTS)} pilots finished; not run: "
        f"{', '.join(label(r) for r in todo) or 'none'}. Code commit(s): {', '.join(commits(list(finished))) or 'none yet'}.",
        "",
        "Strict template collapse: over iterations 14-23 the probe's raw first-turn retrieval ≤ 0.5 × iteration 0 "
        "while its reasoning rate stays ≥ 0.8 and success ≥ 0.8 × iteration 0. Runaway: the window's success ≤ "
        f"{P.RAN_AWAY} × iteration 0. The primary columns are the runaway page's (probe ITT first-turn retrieval).",
        "",
        "| pilot | reading | " + RUN_HEADER[0].split("| run | ", 1)[1],
        "|---" + RUN_HEADER[1],
    ]
    for run in P.planned():
        if run in finished:
            line = run_line(label(run), finished[run])
            head, rest = line.split(" | ", 1)
            lines.append(f"{head} | {reading(finished[run])} | {rest}")
    lines += ["", cost_line(list(finished)), ""]
    if found is not None:
        lines += [f"The pattern appeared in {label(found)}: the runaway design's two stages are to be run in its "
                  "setting as a new pre-registered design.", ""]  # fmt: skip
    groups = {label(run): [rows] for run, rows in finished.items()}
    lines += curves(groups, CURVES_PNG, "FrozenLake, tiny model, seed 0: one line per pilot")
    return "\n".join(lines) + "\n"


def main() -> int:
    """Write the page (and the curves once a pilot has finished)."""
    return write_page(PAGE, page())


if __name__ == "__main__":
    raise SystemExit(main())
