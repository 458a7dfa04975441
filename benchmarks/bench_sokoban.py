"""Sokoban throughput (pytest-benchmark; not part of the test command).

    python -m pytest benchmarks/bench_sokoban.py --benchmark-only --benchmark-columns=median,ops

Every generated level is solver-verified inside ``generate_level`` (exact reverse BFS or A* where
affordable, replay plus a proven lower bound otherwise), so levels/s here are verified levels/s. For the
side-by-side comparison with gym-sokoban, reasoning-gym and TextArena see ``benchmarks/peers_sokoban.py``.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import ragen_envs  # noqa: F401
from ragen_envs.sokoban import SokobanConfig, generate_level

SIZES = {  # the registered variants' generation settings
    "6x6/1": SokobanConfig(rows=6, cols=6, num_boxes=1, difficulty=3, max_moves=10),
    "8x8/2": SokobanConfig(rows=8, cols=8, num_boxes=2, difficulty=8, max_moves=30),
    "10x10/3": SokobanConfig(rows=10, cols=10, num_boxes=3, difficulty=10, max_moves=100),
}
BATCH = {"6x6/1": 500, "8x8/2": 100, "10x10/3": 100}


@pytest.mark.parametrize("size", SIZES)
def test_generate_levels(benchmark, size):
    """A batch of levels from one generator; ops/s × batch = levels/s."""
    config, batch = SIZES[size], BATCH[size]
    seeds = iter(range(10**9))

    def generate_batch():
        rng = np.random.default_rng(next(seeds))
        return [generate_level(rng, config) for _ in range(batch)]

    levels = benchmark(generate_batch)
    assert len(levels) == batch
    benchmark.extra_info["levels_per_call"] = batch
    benchmark.extra_info["median_solution_moves"] = float(np.median([lv.solution_moves for lv in levels]))


@pytest.mark.parametrize("env_id", ["ragen/Sokoban-v0", "ragen/Sokoban-10x10-v0"])
def test_step(benchmark, env_id):
    """One ``env.step(response)``: parse, move, incremental render, info. 1000 steps per call."""
    env = gym.make(env_id, max_turns=10**9, max_actions_per_turn=1)
    env.reset(seed=0)
    responses = [f"<think>go</think><answer>{a}</answer>" for a in ("Up", "Left", "Down", "Right")]
    state = {"i": 0}

    def thousand_steps():
        for _ in range(1000):
            _, _, terminated, _, _ = env.step(responses[state["i"] & 3])
            state["i"] += 1
            if terminated:
                env.reset(seed=state["i"])

    benchmark(thousand_steps)
    benchmark.extra_info["steps_per_call"] = 1000


@pytest.mark.parametrize("env_id", ["ragen/Sokoban-v0", "ragen/Sokoban-8x8-v0", "ragen/Sokoban-10x10-v0"])
def test_reset(benchmark, env_id):
    """``env.reset(seed)``: generate and verify a level, render it, build the prompt."""
    env = gym.make(env_id)
    seeds = iter(range(10**9))
    benchmark(lambda: env.reset(seed=next(seeds)))
