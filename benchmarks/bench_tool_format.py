"""The tool format's cost: ``env.step`` on the oracle's episodes written as tool calls, beside the same episodes
in the default think format.

    python benchmarks/bench_tool_format.py --rounds 9

Each workload replays the oracle's responses (precomputed, so only ``step`` is timed) over 200 seeds of one env,
once per format; the formats alternate round by round on the same CPU and the script prints the median rate of
each and the ratio tool / think. Rates are per second of the process's CPU time (other jobs share the cores). The
difference is the parsing: a ``<tool_call>`` block's JSON decoded and its tool's template applied, against the
``<think>``/``<answer>`` scan and the ``||`` split.
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
from bench_envs import oracle_plans, replay

import ragen_envs  # noqa: F401  (registers the ids)

SEEDS = 200
ENVS = ("ragen/Bandit-v0", "ragen/FrozenLake-v0", "ragen/Sokoban-v0", "ragen/Countdown-v0")
FORMATS = ("think", "tool")


def oracle_steps(env_id: str, response_format: str):
    """``(setup, run)``: ``run`` replays each seed's oracle episode in ``response_format`` and returns the steps."""
    envs = [gym.make(env_id, response_format=response_format).unwrapped for _ in range(SEEDS)]
    return replay(envs, oracle_plans(envs))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    print(f"{'env':24} {'think steps/s':>14} {'tool steps/s':>13} {'tool / think':>13}")
    for env_id in ENVS:
        workloads = {fmt: oracle_steps(env_id, fmt) for fmt in FORMATS}
        rates: dict[str, list[float]] = {fmt: [] for fmt in FORMATS}
        for _ in range(args.rounds):
            for fmt, (setup, run) in workloads.items():
                setup()
                start = time.process_time()
                calls = run()
                rates[fmt].append(calls / (time.process_time() - start))
        think, tool = (statistics.median(rates[fmt]) for fmt in FORMATS)
        print(f"{env_id:24} {think:14,.0f} {tool:13,.0f} {tool / think:13.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
