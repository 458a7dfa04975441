"""Harness costs: overhead per step over the raw env step, 2 workers vs 1, MI family vs rollout time.

Two ways to run it (neither is part of the test command):

    python -m pytest benchmarks/bench_harness.py --benchmark-only   # pytest-benchmark tables
    python benchmarks/bench_harness.py --rounds 5                    # side by side, with ratios

The second form interleaves the contenders round by round on the same (shared) CPU and prints medians and
ratios. Workloads:

- **records**: bytes and JSON-encoding time of an episode line in the record format (format 2: a turn stores
  its new user message) against format 1 (every turn's whole chat), on the same episodes.
- **overhead**: the oracle agent through the harness (context building, seeded request, ``generate``,
  ``step``, the turn record, the JSON line written to a file) against a bare loop that calls
  ``env.step(env.unwrapped.oracle_response())`` on the same ``gym.make`` env and seeds; per step.
- **workers**: ``harness.runner.run`` of ``random`` + ``oracle`` on ``ragen/Sokoban-10x10-v0`` (level
  generation and 20-turn random episodes keep the CPU busy) with ``--workers 1`` and ``--workers 2``; MI off
  (it runs in the parent after the rollouts), no plots; spawn start-up included.
- **mi**: a causal LM (the shipped tiny model when ``baselines/tiny/model`` loads, otherwise a randomly
  initialised Llama of the same shape with a byte-level BPE tokenizer built here) rolls out 64 Bandit
  episodes; the MI family (both schemes, 64 pairs each; exact, and with ``--mi-columns`` 8 and 4) is timed
  against that rollout, and the KV-cache ``score_matrix`` against one full forward per (prompt, reasoning) pair
  on an 8 × 8 block. It also counts the reasoning tokens the exact family teacher-forces against the tokens the
  rollout generated: every reasoning is scored under every column, so that count is ~columns x the reasoning
  tokens, and the time ratio cannot fall below it divided by how much cheaper a teacher-forced token is.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import pytest

import ragen_envs  # noqa: F401  (registers the ids)
from harness.agents import make_agent
from harness.config import EnvPlan, RunConfig
from harness.records import EpisodeWriter, dumps_line
from harness.runner import EnvPool, Job, rollout_chunk, run

OVERHEAD_ENVS = (
    "ragen/Bandit-v0", "ragen/FrozenLake-v0", "ragen/Sokoban-v0", "ragen/Sokoban-8x8-v0", "ragen/Countdown-v0",
    "ragen/MathWord-v0", "ragen/WebShop-v0",
)  # fmt: skip
"""From the cheapest step (~25 µs) to ~100-200 µs ones: where a fixed per-step cost stops mattering."""
OVERHEAD_EPISODES = 200


# ---- overhead ---------------------------------------------------------------------------------------------------
def raw_loop(env_id: str, episodes: int) -> int:
    """The bare env loop with oracle responses; returns the number of steps."""
    env = gym.make(env_id)
    steps = 0
    for seed in range(episodes):
        env.reset(seed=seed)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.unwrapped.oracle_response())
            done = terminated or truncated
            steps += 1
    return steps


_STATE: dict[tuple[str, int], tuple] = {}


def _harness_state(env_id: str, episodes: int) -> tuple:
    """Config, agent and env pool, kept across calls as a run keeps them across chunks (steady state)."""
    key = (env_id, episodes)
    if key not in _STATE:
        config = RunConfig(agents=("oracle",), envs=(EnvPlan(env_id, episodes, 1),), mi_samples=0)
        _STATE[key] = (config, make_agent("oracle"), EnvPool(config))
    return _STATE[key]


def harness_loop(env_id: str, episodes: int, path: Path | None) -> int:
    """The same episodes through the harness's rollout and records, written to ``path`` (JSON encoding and a
    flushed write per episode) unless it is None; returns the number of steps."""
    config, agent, pool = _harness_state(env_id, episodes)
    jobs = [Job("oracle", env_id, seed, 0) for seed in range(episodes)]
    steps = 0
    if path is None:
        for start in range(0, len(jobs), config.batch_size):
            for record in rollout_chunk(agent, config, jobs[start : start + config.batch_size], pool):
                steps += len(record["turns"])
        return steps
    path.unlink(missing_ok=True)
    with EpisodeWriter(path, 0) as writer:
        for start in range(0, len(jobs), config.batch_size):
            for record in rollout_chunk(agent, config, jobs[start : start + config.batch_size], pool):
                writer.write_line(dumps_line(record))
                steps += len(record["turns"])
    return steps


@pytest.mark.parametrize("env_id", OVERHEAD_ENVS)
def test_raw_env_steps(benchmark, env_id):
    benchmark.extra_info["steps"] = raw_loop(env_id, 20)
    benchmark.pedantic(raw_loop, args=(env_id, OVERHEAD_EPISODES), rounds=3, iterations=1)


@pytest.mark.parametrize("env_id", OVERHEAD_ENVS)
def test_harness_steps(benchmark, env_id, tmp_path):
    benchmark.extra_info["steps"] = harness_loop(env_id, 20, tmp_path / "e.jsonl")
    benchmark.pedantic(harness_loop, args=(env_id, OVERHEAD_EPISODES, tmp_path / "e.jsonl"), rounds=3, iterations=1)


# ---- record size ------------------------------------------------------------------------------------------------
def as_format_1(record: dict) -> dict:
    """A record as harness format 1 wrote it: every turn's whole chat under ``prompt``."""
    import copy

    from harness.transcript import record_messages

    old = copy.deepcopy(record)
    prompts = [list(record_messages(old, i)) for i in range(len(old["turns"]))]
    for turn, prompt in zip(old["turns"], prompts, strict=True):
        turn.pop("user")
        turn["prompt"] = prompt
    old.pop("context_turns")
    return old


def record_sizes(agent: str, env_id: str, episodes: int = 8) -> dict[str, float]:
    """Bytes and JSON-encoding µs per episode line, format 2 (turn deltas) vs format 1 (every turn's chat)."""
    import timeit

    config = RunConfig(agents=(agent,), envs=(EnvPlan(env_id, episodes, 1),), mi_samples=0)
    jobs = [Job(agent, env_id, seed, 0) for seed in range(episodes)]
    new = list(rollout_chunk(make_agent(agent), config, jobs, EnvPool(config)))
    old = [as_format_1(r) for r in new]
    out = {"turns": sum(len(r["turns"]) for r in new) / episodes}
    for name, records in (("new", new), ("old", old)):
        out[f"{name}_bytes"] = sum(len(dumps_line(r)) for r in records) / episodes
        runs = min(timeit.repeat(lambda: [dumps_line(r) for r in records], number=20, repeat=5)) / 20  # noqa: B023
        out[f"{name}_us"] = 1e6 * runs / episodes
    return out


# ---- workers ----------------------------------------------------------------------------------------------------
def workers_config(seeds: int = 128) -> RunConfig:
    plan = EnvPlan("ragen/Sokoban-10x10-v0", seeds, 4)
    return RunConfig(agents=("random", "oracle"), envs=(plan,), mi_samples=0, batch_size=8)


def run_workers(workers: int, seeds: int = 128) -> float:
    """Wall seconds of one run."""
    return run_workers_cpu(workers, seeds)[0]


def run_workers_cpu(workers: int, seeds: int = 128) -> tuple[float, float, float]:
    """(wall s, parent CPU s, worker processes' CPU s) of one run (children measured after they exit)."""
    import resource

    def cpu(who: int) -> float:
        usage = resource.getrusage(who)
        return usage.ru_utime + usage.ru_stime

    with tempfile.TemporaryDirectory() as out:
        self0, child0, start = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
        run(workers_config(seeds), out, run_id="w", workers=workers, progress=False, plots=False)
        wall = time.perf_counter() - start
        return wall, cpu(resource.RUSAGE_SELF) - self0, cpu(resource.RUSAGE_CHILDREN) - child0


def _spin(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


def machine_parallelism(n: int = 10_000_000) -> float:
    """Speed-up of two spawned processes over one on pure-Python spinning: what the box can give right now."""
    import multiprocessing

    start = time.perf_counter()
    _spin(n), _spin(n)
    serial = time.perf_counter() - start
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_spin, [10, 10])  # start-up excluded
        start = time.perf_counter()
        pool.map(_spin, [n, n])
        return serial / (time.perf_counter() - start)


@pytest.mark.parametrize("workers", [1, 2])
def test_workers(benchmark, workers):
    benchmark.pedantic(run_workers, args=(workers,), rounds=2, iterations=1)


# ---- MI cost ----------------------------------------------------------------------------------------------------
def lm_agent(device: str = "cpu"):
    """The shipped tiny model if it loads, else a same-shape random Llama with a tokenizer built here."""
    from harness.agents import AgentOptions

    options = AgentOptions(max_new_tokens=64, device=device, batch_size=16, temperature=1.0)
    try:
        from baselines.tiny import MODEL_DIR

        return make_agent(f"hf:{MODEL_DIR}", options), "shipped tiny model"
    except Exception:  # not trained/shipped yet: build one of the same shape with the tests' offline builder
        pass
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from tiny_lm import build_tiny_llama

    shape = {"vocab_size": 2048, "hidden": 256, "intermediate": 704, "layers": 4, "heads": 4, "kv_heads": 4}
    model_dir = build_tiny_llama(tempfile.mkdtemp(prefix="bench-tiny-"), corpus_seeds=50, **shape)
    return make_agent(f"hf:{model_dir}", options), "random-init Llama (tiny shape)"


MI_COLUMNS = (8, 4)
"""``--mi-columns`` values timed beside the exact family."""


def mi_costs(agent, episodes: int = 16, samples: int = 4, env_id: str = "ragen/Bandit-v0") -> dict[str, float]:
    """Seconds for the rollout, the MI family (both schemes), and per-pair cost of cached vs naive scoring."""
    import numpy as np
    import torch

    from harness.mi import collapse_for, first_turn_pairs

    config = RunConfig(agents=(agent.spec,), envs=(EnvPlan(env_id, episodes, samples),), batch_size=16)
    pool = EnvPool(config)
    jobs = [Job(agent.spec, env_id, s, k) for s in range(episodes) for k in range(samples)]
    start = time.perf_counter()
    records = [r for i in range(0, len(jobs), 16) for r in rollout_chunk(agent, config, jobs[i : i + 16], pool)]
    rollout = time.perf_counter() - start
    # a random-init model rarely closes </think>: give every first turn a reasoning so the batch is full size
    for r in records:
        for t in r["turns"]:
            t["reasoning"] = t["reasoning"] or t["response"].removeprefix("<think>")[:200] or "empty"
    scored_tokens = 0  # reasoning tokens teacher-forced by the exact family (each under each of its columns)
    score_matrix = agent.score_matrix

    def counting(contexts, texts, wanted=None):
        nonlocal scored_tokens
        lengths = np.array([len(agent._encode(t)) for t in texts])
        scored_tokens += int(lengths.sum() * len(contexts) if wanted is None else (lengths[:, None] * wanted).sum())
        return score_matrix(contexts, texts, wanted=wanted)

    agent.score_matrix = counting
    try:
        start = time.perf_counter()
        collapse_for(agent, records, 0, 64)
        mi = time.perf_counter() - start
    finally:
        del agent.score_matrix  # the class's method again
    subsampled = {}
    for columns in MI_COLUMNS:
        start = time.perf_counter()
        collapse_for(agent, records, 0, 64, mi_columns=columns)
        subsampled[f"mi_s@{columns}"] = time.perf_counter() - start
    pairs = first_turn_pairs(records, np.random.default_rng(0), 8)
    contexts, texts = pairs.contexts[:8], pairs.texts[:8]
    start = time.perf_counter()
    agent.score_matrix(contexts, texts)
    cached = (time.perf_counter() - start) / (len(contexts) * len(texts))
    tokenizer = agent.tokenizer
    start = time.perf_counter()
    with torch.inference_mode():
        for ctx in contexts:
            prompt = tokenizer.apply_chat_template(list(ctx.messages), tokenize=False, add_generation_prompt=True)
            for text in texts:
                ids = tokenizer(prompt + ctx.prefill + text, add_special_tokens=False)["input_ids"]
                agent.model(input_ids=torch.tensor([ids], device=agent.model.device))
        if agent.model.device.type == "cuda":
            torch.cuda.synchronize()
    naive = (time.perf_counter() - start) / (len(contexts) * len(texts))
    return {
        "rollout_s": rollout,
        "mi_s": mi,
        "generated_tokens": sum(t["tokens"] for r in records for t in r["turns"]),
        "scored_tokens": scored_tokens,
        **subsampled,
        "cached_pair_ms": 1e3 * cached,
        "naive_pair_ms": 1e3 * naive,
    }


def test_mi_cost(benchmark):
    pytest.importorskip("transformers")
    agent, _ = lm_agent()
    result = benchmark.pedantic(mi_costs, args=(agent,), rounds=1, iterations=1)
    benchmark.extra_info.update(result)


# ---- side by side -----------------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip", nargs="*", default=[], choices=["overhead", "records", "workers", "mi"])
    parser.add_argument("--mi-env", action="append", help="env(s) of the MI measurement (default Bandit, Sokoban)")
    parser.add_argument("--device", default="cpu", help="torch device of the MI measurement's model (e.g. cuda)")
    args = parser.parse_args()
    if "overhead" not in args.skip:
        print(
            "overhead per step (oracle agent), median CPU µs/step over rounds (rollout only / with the written record):"
        )
        with tempfile.TemporaryDirectory() as tmp:
            for env_id in OVERHEAD_ENVS:
                episodes = OVERHEAD_EPISODES
                raw, bare, ours = [], [], []
                for _ in range(args.rounds):
                    t = time.process_time()
                    steps = raw_loop(env_id, episodes)
                    raw.append((time.process_time() - t) / steps * 1e6)
                    t = time.process_time()
                    harness_loop(env_id, episodes, None)
                    bare.append((time.process_time() - t) / steps * 1e6)
                    t = time.process_time()
                    assert harness_loop(env_id, episodes, Path(tmp) / "e.jsonl") == steps
                    ours.append((time.process_time() - t) / steps * 1e6)
                r, b, h = statistics.median(raw), statistics.median(bare), statistics.median(ours)
                print(
                    f"  {env_id:24} raw {r:8.1f}  harness rollout {b:8.1f} ({100 * (b / r - 1):+6.1f}%)  "
                    f"with record {h:8.1f} ({100 * (h / r - 1):+6.1f}%)"
                )
    if "records" not in args.skip:
        print("episode line, format 2 (each turn's new user message) vs format 1 (each turn's whole chat):")
        for agent, env_id in [
            ("oracle", "ragen/Bandit-v0"),
            ("random", "ragen/Sokoban-v0"),
            ("random", "ragen/Sokoban-10x10-v0"),
        ]:
            r = record_sizes(agent, env_id)
            print(
                f"  {agent:6} {env_id:24} {r['turns']:4.1f} turns: {r['new_bytes']:8.0f} B vs {r['old_bytes']:8.0f} B "
                f"({r['old_bytes'] / r['new_bytes']:.1f}x smaller); JSON {r['new_us']:7.1f} µs vs {r['old_us']:7.1f} µs "
                f"({r['old_us'] / r['new_us']:.1f}x faster)"
            )
    if "workers" not in args.skip:
        one, two = [], []
        for _ in range(max(1, args.rounds // 2)):
            one.append(run_workers_cpu(1))
            two.append(run_workers_cpu(2))
        a, b = statistics.median(r[0] for r in one), statistics.median(r[0] for r in two)
        cpu_one = statistics.median(r[1] for r in one)
        parent, children = statistics.median(r[1] for r in two), statistics.median(r[2] for r in two)
        print(
            f"workers (Sokoban-10x10, 1024 episodes): 1 worker {a:.2f} s, 2 workers {b:.2f} s, wall speed-up {a / b:.2f}x; "
            f"CPU: 1 worker {cpu_one:.2f} s, 2 workers parent {parent:.2f} s + workers {children:.2f} s, so on two idle "
            f"cores the bound is {cpu_one / max(parent, children / 2):.2f}x (plain 2-process CPU spin on this box "
            f"now: {machine_parallelism():.2f}x)"
        )
    if "mi" not in args.skip:
        agent, what = lm_agent(args.device)
        what += f" on {args.device}"
        for env_id in args.mi_env or ["ragen/Bandit-v0", "ragen/Sokoban-v0"]:
            costs = mi_costs(agent, env_id=env_id)
            print(
                f"MI with {what} on {env_id}: rollout of 64 episodes {costs['rollout_s']:.2f} s, MI family "
                f"(2 schemes x 64 pairs) {costs['mi_s']:.2f} s = {100 * costs['mi_s'] / costs['rollout_s']:.1f}% of "
                f"the rollout; per scored pair {costs['cached_pair_ms']:.2f} ms with the prompt's KV cache vs "
                f"{costs['naive_pair_ms']:.2f} ms with a full forward ({costs['naive_pair_ms'] / costs['cached_pair_ms']:.1f}x)"
            )
            ratio = costs["scored_tokens"] / costs["generated_tokens"]
            print(
                f"  the exact family teacher-forced {costs['scored_tokens']} reasoning tokens, {ratio:.1f}x the "
                f"{costs['generated_tokens']} tokens the rollout generated: a teacher-forced token cost "
                f"{ratio * costs['rollout_s'] / costs['mi_s']:.0f}x less than a generated one, and 10% would need "
                f"{10 * ratio:.0f}x"
            )
            print(
                "  with --mi-columns: "
                + ", ".join(
                    f"{c} columns {costs[f'mi_s@{c}']:.2f} s = {100 * costs[f'mi_s@{c}'] / costs['rollout_s']:.1f}%"
                    for c in MI_COLUMNS
                )
            )


if __name__ == "__main__":
    main()
