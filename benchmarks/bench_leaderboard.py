"""Leaderboard verification throughput: episodes verified per second, per env and agent.

Two ways to run it (neither is part of the test command):

    python -m pytest benchmarks/bench_leaderboard.py --benchmark-only --benchmark-timer time.process_time
    python benchmarks/bench_leaderboard.py --rounds 5                   # per-env table with ratios, one core

The episodes are real harness runs (``harness.runner.run``) of the oracle and the random agent: 64 seeds x 4
samples per env. For each (env, agent) three contenders are timed side by side, round by round on the same
(shared) CPU, pinned to one core, in CPU seconds of this process, and the median of each is reported:

- ``bare``: the floor: ``env.reset(seed)`` and ``env.step(response)`` for the recorded responses, nothing
  compared. No peer leaderboard replays episodes (BALROG and SWE-bench trust logs, TextArena needs a live
  model), so the floor is our own env.
- ``replay``: :class:`leaderboard.verify.Replayer` on parsed records: the bare work plus every check
  (prompt rebuilt and compared, observation, reward, flags, info, reasoning, return).
- ``verify``: :func:`leaderboard.verify.verify` on a packed single-env submission: unpack, hash, parse,
  replay, recompute the summary with the harness's metric functions.

Target: >= 1,000 Sokoban episodes verified per second on one core.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from functools import cache
from pathlib import Path

import gymnasium as gym
import pytest

import ragen_envs  # noqa: F401  (registers the ids)
from leaderboard.pack import pack_run
from leaderboard.records import parse_episode, suite_run_config
from leaderboard.suite import Suite, SuiteEntry
from leaderboard.verify import Replayer, verify

SEEDS = tuple(range(10_000, 10_064))
SAMPLES = 4
ENVS = (
    "ragen/Sokoban-v0",
    "ragen/FrozenLake-v0",
    "ragen/Bandit-v0",
    "ragen/Countdown-v0",
    "ragen/MathWord-v0",
    "ragen/WebShop-v0",
)
AGENTS = ("oracle", "random")
WORKDIR = Path(tempfile.mkdtemp(prefix="bench-leaderboard-"))


def _suite(env_id: str) -> Suite:
    return Suite("bench", "1", (SuiteEntry(env_id, SEEDS, SAMPLES),))


@cache
def workload(env_id: str, agent: str) -> tuple[Path, list]:
    """(packed archive, parsed records) of one harness run of ``agent`` on ``env_id``."""
    from harness.runner import run

    suite = _suite(env_id)
    name = f"{env_id.split('/')[1]}-{agent}"
    result = run(suite_run_config(suite, agent, mi_samples=0), WORKDIR, run_id=name, progress=False, plots=False)
    archive = pack_run(result.run_dir, WORKDIR / f"{name}.ragen.tar.gz", model_name=name, org="bench",
                       contact="bench@example.org", suite=suite)  # fmt: skip
    lines = (result.run_dir / "episodes.jsonl").read_text().splitlines()
    records = [parse_episode(i + 1, json.loads(line)) for i, line in enumerate(lines)]
    return archive, records


def run_bare(env_id: str, records: list) -> int:
    env = gym.make(env_id)
    for record in records:
        env.reset(seed=record.seed)
        for turn in record.turns:
            env.step(turn["response"])
    return len(records)


def run_replay(records: list) -> int:
    replayer = Replayer()
    for record in records:
        problem = replayer.replay(record)
        if problem:
            raise AssertionError(problem)
    replayer.close()
    return len(records)


def run_verify(env_id: str, archive: Path) -> int:
    report = verify(archive, suite=_suite(env_id))
    if not report.ok:
        raise AssertionError(report.problems)
    return report.summary["episodes"]


# ---- pytest-benchmark -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("env_id", ENVS)
def test_replay_throughput(benchmark, env_id, agent):
    _, records = workload(env_id, agent)
    count = benchmark.pedantic(run_replay, args=(records,), rounds=3, iterations=1)
    benchmark.extra_info["episodes_per_s"] = count / benchmark.stats.stats.median


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("env_id", ENVS)
def test_verify_throughput(benchmark, env_id, agent):
    archive, _ = workload(env_id, agent)
    count = benchmark.pedantic(run_verify, args=(env_id, archive), rounds=3, iterations=1)
    benchmark.extra_info["episodes_per_s"] = count / benchmark.stats.stats.median


# ---- side by side ---------------------------------------------------------------------------------------------
def _timed(fn, *args) -> float:
    """Episodes per second of *CPU time* of this (single-threaded) process: what one core does, even while
    other processes share it (wall-clock rates on a loaded machine mostly measure the scheduler)."""
    start = time.process_time()
    count = fn(*args)
    return count / (time.process_time() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--core", type=int, default=0, help="pin to this CPU core (one core, as the target says)")
    parser.add_argument("--env", action="append", help="env ids (default: the official suite's and MathWord)")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.core})
    envs = args.env or ENVS
    print(f"{'env':22} {'agent':7} {'eps':>5} {'turns/ep':>8} {'bare eps/s':>11} {'replay eps/s':>13} "
          f"{'verify eps/s':>13} {'verify/bare':>11}")  # fmt: skip
    for env_id in envs:
        for agent in AGENTS:
            archive, records = workload(env_id, agent)
            rates: dict[str, list[float]] = {"bare": [], "replay": [], "verify": []}
            for _ in range(args.rounds):  # interleaved: the shared CPU's load hits all three alike
                rates["bare"].append(_timed(run_bare, env_id, records))
                rates["replay"].append(_timed(run_replay, records))
                rates["verify"].append(_timed(run_verify, env_id, archive))
            med = {k: statistics.median(v) for k, v in rates.items()}
            turns = sum(len(r.turns) for r in records) / len(records)
            print(f"{env_id:22} {agent:7} {len(records):5d} {turns:8.2f} {med['bare']:11,.0f} {med['replay']:13,.0f} "
                  f"{med['verify']:13,.0f} {med['verify'] / med['bare']:11.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
