"""Is a micro-optimisation worth its lack of clarity? Each one against its plain form, in the operation a user waits for.

    python benchmarks/bench_simplifications.py --rounds 7

Every contender pair is timed round by round, interleaved on the same (shared) CPU, in CPU seconds of this
process, and the medians are printed with the difference as a share of the user-visible operation. The plain form
is what the code does; each optimised form is rebuilt here exactly as it was, so the comparison can be rerun:

- **parse**: a successful ``ParsedResponse`` (a NamedTuple) vs the same fields as a frozen dataclass, built by its
  constructor or through ``object.__new__`` and ``__dict__.update`` (skipping ``__init__``); per call, and the
  difference as a share of ``parse_response`` and of an env step (the oracle's responses replayed through
  ``gym.make`` envs, which parse every response; resets untimed).
- **request**: one rollout turn's ``Request``: the hand-built immutable class whose seed is a callable derived on
  first read (read by the random agent, never by the oracle) vs a frozen dataclass given the derived seed; per
  turn, and in the harness rollout (no record written) of the oracle and the random agent on Bandit (one turn)
  and Sokoban (several), with ``harness.rollout.Request`` swapped (the dataclass also pays for the ``partial``
  the rollout builds for the lazy seed: ~0.1 µs).
- **records**: writing a run's episodes.jsonl (encode every line and append it with :class:`EpisodeWriter`):
  orjson (:func:`harness.records.dumps_line`) vs the stdlib's C encoder with the same settings; as a share of the
  rollout that produced the episodes (the random agent on Bandit, Sokoban and Countdown).
- **gc**: ``leaderboard.verify.verify`` of a packed official-suite submission (random agent, 1,408 episodes) with
  the cyclic garbage collector enabled vs disabled for the call.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import tempfile
import time
import timeit
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium as gym

import ragen_envs  # noqa: F401  (registers the ids)
from harness import rollout as rollout_module
from harness.agents import make_agent
from harness.agents.base import Context, Request
from harness.config import EnvPlan, RunConfig
from harness.records import EpisodeWriter, dumps_line, loads_line
from harness.rollout import EnvPool, Job, rollout_chunk
from harness.seeding import ResponseSeeds
from ragen_envs.parsing import ParsedResponse, parse_response

STEP_ENVS = ("ragen/Bandit-v0", "ragen/FrozenLake-v0", "ragen/Sokoban-v0", "ragen/Countdown-v0")
"""The cheapest steps (~25-90 µs): where a fixed per-step saving shows most."""
RECORD_ENVS = ("ragen/Bandit-v0", "ragen/Sokoban-v0", "ragen/Countdown-v0")
EPISODES = 200
ROLLOUT_EPISODES = 1000


def _cpu(fn: Callable[[], Any]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def _medians(contenders: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):  # interleaved: the shared CPU's load hits every contender alike
        for name, fn in contenders.items():
            times[name].append(_cpu(fn))
    return {name: statistics.median(values) for name, values in times.items()}


def _per_call(fn: Callable[[], Any], number: int) -> Callable[[], float]:
    return lambda: timeit.timeit(fn, number=number)


# ---- parse ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FrozenParsed:
    """``ParsedResponse`` as a frozen dataclass (its fields, its defaults)."""

    ok: bool
    thinking: str = ""
    answer: str = ""
    error: str = ""


def success_bypass(thinking: str, answer: str) -> FrozenParsed:
    """The frozen dataclass built without its ``__init__`` (four ``object.__setattr__`` calls)."""
    parsed = object.__new__(FrozenParsed)
    parsed.__dict__.update(ok=True, thinking=thinking, answer=answer, error="")
    return parsed


def oracle_episodes(env_id: str, episodes: int) -> list[list[str]]:
    """The oracle's responses of ``episodes`` seeded episodes."""
    env = gym.make(env_id)
    out = []
    for seed in range(episodes):
        env.reset(seed=seed)
        responses, done = [], False
        while not done:
            responses.append(env.unwrapped.oracle_response())
            _, _, terminated, truncated, _ = env.step(responses[-1])
            done = terminated or truncated
        out.append(responses)
    return out


def step_seconds(env: Any, episodes: list[list[str]]) -> float:
    """CPU seconds of the steps alone (resets untimed) replaying ``episodes``."""
    total = 0.0
    for seed, responses in enumerate(episodes):
        env.reset(seed=seed)
        start = time.process_time()
        for response in responses:
            env.step(response)
        total += time.process_time() - start
    return total


def bench_parse(rounds: int) -> None:
    print(
        "parse: a successful ParsedResponse as a NamedTuple vs a frozen dataclass, built plainly or bypassing __init__"
    )
    number = 200_000
    med = _medians(
        {
            "namedtuple": _per_call(lambda: ParsedResponse(ok=True, thinking="go", answer="Up"), number),
            "dataclass": _per_call(lambda: FrozenParsed(ok=True, thinking="go", answer="Up"), number),
            "bypass": _per_call(lambda: success_bypass("go", "Up"), number),
            "parse": _per_call(lambda: parse_response("<think>go left</think><answer>Up</answer>"), number),
        },
        rounds,
    )
    us = {name: value / number * 1e6 for name, value in med.items()}
    delta = us["dataclass"] - us["namedtuple"]
    print(
        f"  per call: NamedTuple {us['namedtuple']:.3f} µs, frozen dataclass {us['dataclass']:.3f} µs, dataclass "
        f"bypassing __init__ {us['bypass']:.3f} µs; a parse_response {us['parse']:.2f} µs, of which the dataclass "
        f"would add {delta:.3f} µs ({100 * delta / us['parse']:.0f}%)"
    )
    for env_id in STEP_ENVS:
        episodes = oracle_episodes(env_id, EPISODES)
        env = gym.make(env_id)
        step_us = statistics.median(step_seconds(env, episodes) for _ in range(rounds)) / sum(map(len, episodes)) * 1e6
        print(f"  {env_id:22} step {step_us:6.1f} µs: the dataclass would add {100 * delta / step_us:.1f}%")


# ---- request ----------------------------------------------------------------------------------------------------
LazyRequest = Request  # the kept hand-built request: a callable seed derived on first read


@dataclass(frozen=True)
class PlainRequest:
    context: Context
    seed: int
    episode: Hashable | None = field(default=None, compare=False)


def bench_request(rounds: int) -> None:
    print("request: hand-built class with a lazily derived seed vs a frozen dataclass given the seed")
    number = 20_000
    context = Context(({"role": "user", "content": "x"},), "<think>")
    key = ("oracle", "ragen/Bandit-v0", 3, 0)
    times: dict[str, list[float]] = {"lazy, never read": [], "lazy, read": [], "dataclass": []}
    for _ in range(rounds):
        for name in times:  # fresh seeds each turn: every episode's first turn also hashes its fixed parts
            fresh = [ResponseSeeds(0, "ragen/Bandit-v0", i, 0) for i in range(number)]
            start = time.process_time()
            if name == "lazy, never read":
                for seeds in fresh:
                    LazyRequest(context, partial(seeds, 1), key)
            elif name == "lazy, read":
                for seeds in fresh:
                    LazyRequest(context, partial(seeds, 1), key).seed  # noqa: B018
            else:
                for seeds in fresh:
                    PlainRequest(context, seeds(1), key).seed  # noqa: B018
            times[name].append(time.process_time() - start)
    print("  per turn: " + ", ".join(f"{k} {statistics.median(v) / number * 1e6:.2f} µs" for k, v in times.items()))

    def eager(context: Context, seed: Callable[[], int], episode: Hashable | None = None) -> PlainRequest:
        return PlainRequest(context, seed(), episode)

    for agent_name in ("oracle", "random"):
        for env_id in ("ragen/Bandit-v0", "ragen/Sokoban-v0"):
            config = RunConfig(agents=(agent_name,), envs=(EnvPlan(env_id, ROLLOUT_EPISODES, 1),), mi_samples=0)
            agent, pool = make_agent(agent_name), EnvPool(config)
            jobs = [Job(agent_name, env_id, seed, 0) for seed in range(ROLLOUT_EPISODES)]
            chunks = [jobs[i : i + config.batch_size] for i in range(0, len(jobs), config.batch_size)]
            steps = sum(len(r["turns"]) for chunk in chunks for r in rollout_chunk(agent, config, chunk, pool))

            def roll(request: Callable, agent=agent, config=config, pool=pool, chunks=chunks) -> None:
                rollout_module.Request = request
                try:
                    for chunk in chunks:
                        for _ in rollout_chunk(agent, config, chunk, pool):
                            pass
                finally:
                    rollout_module.Request = Request

            med = _medians({"lazy": partial(roll, Request), "dataclass": partial(roll, eager)}, rounds)
            lazy, plain = (med[k] / steps * 1e6 for k in ("lazy", "dataclass"))
            print(
                f"  {agent_name:6} on {env_id:18} rollout step with the lazy seed {lazy:6.1f} µs, "
                f"with the dataclass {plain:6.1f} µs ({100 * (plain / lazy - 1):+.1f}%)"
            )


# ---- records ----------------------------------------------------------------------------------------------------
def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return repr(value)


_C_ENCODE = json.encoder.c_make_encoder(
    None, _json_default, json.encoder.encode_basestring, None, ":", ",", False, False, False
)


def dumps_line_stdlib(record: dict) -> bytes:
    """The stdlib's C encoder with an episode line's settings (compact, UTF-8, no circular check)."""
    return ("".join(_C_ENCODE(record, 0)) + "\n").encode("utf-8")


def bench_records(rounds: int) -> None:
    print("records: a run's episodes.jsonl written with orjson vs the stdlib's C encoder (random agent)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "episodes.jsonl"
        for env_id in RECORD_ENVS:
            config = RunConfig(agents=("random",), envs=(EnvPlan(env_id, EPISODES, 1),), mi_samples=0, batch_size=32)
            agent, pool = make_agent("random"), EnvPool(config)
            jobs = [Job("random", env_id, seed, 0) for seed in range(EPISODES)]
            records: list = []

            def rollout(config=config, agent=agent, pool=pool, jobs=jobs, records=records) -> None:
                records[:] = [
                    r for i in range(0, len(jobs), 32) for r in rollout_chunk(agent, config, jobs[i : i + 32], pool)
                ]

            rollout()

            def write(encode: Callable, records=records) -> None:
                path.unlink(missing_ok=True)
                with EpisodeWriter(path, 0) as writer:
                    for record in records:
                        writer.write_line(encode(record))

            assert [loads_line(dumps_line(r)) for r in records] == [json.loads(dumps_line_stdlib(r)) for r in records]
            med = _medians(
                {"rollout": rollout, "orjson": partial(write, dumps_line), "stdlib": partial(write, dumps_line_stdlib)},
                rounds,
            )
            line = sum(len(dumps_line(r)) for r in records) / len(records)
            print(
                f"  {env_id:22} {line:6.0f} B/line: rollout {med['rollout'] * 1e3:6.1f} ms, writing the lines with "
                f"orjson {med['orjson'] * 1e3:5.1f} ms ({100 * med['orjson'] / med['rollout']:.1f}% of it), with the "
                f"stdlib {med['stdlib'] * 1e3:5.1f} ms ({100 * med['stdlib'] / med['rollout']:.1f}%); "
                f"{med['stdlib'] / med['orjson']:.1f}x"
            )


# ---- gc ---------------------------------------------------------------------------------------------------------
def bench_gc(rounds: int) -> None:
    from harness.runner import run
    from leaderboard.pack import pack_run
    from leaderboard.records import suite_run_config
    from leaderboard.suite import OFFICIAL
    from leaderboard.verify import verify

    print("gc: leaderboard verify with the cyclic GC enabled vs disabled during the call")
    with tempfile.TemporaryDirectory() as tmp:
        config = suite_run_config(OFFICIAL, "random", mi_samples=0)
        result = run(config, tmp, run_id="sub", progress=False, plots=False)
        archive = pack_run(result.run_dir, Path(tmp) / "sub.ragen.tar.gz", model_name="bench", org="bench",
                           contact="bench@example.org", suite=OFFICIAL)  # fmt: skip
        episodes = []

        def enabled() -> None:
            report = verify(archive)
            assert report.ok, report.problems
            episodes.append(report.summary["episodes"])

        def disabled() -> None:
            gc.disable()
            try:
                enabled()
            finally:
                gc.enable()

        assert gc.isenabled()
        med = _medians({"enabled": enabled, "disabled": disabled}, rounds)
        print(
            f"  {episodes[0]} episodes ({archive.stat().st_size / 1e3:.0f} kB archive): GC enabled "
            f"{med['enabled']:.3f} s, disabled {med['disabled']:.3f} s ({100 * (med['enabled'] / med['disabled'] - 1):+.1f}%)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--only", nargs="*", default=["parse", "request", "records", "gc"])
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name in args.only:
        {"parse": bench_parse, "request": bench_request, "records": bench_records, "gc": bench_gc}[name](args.rounds)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
