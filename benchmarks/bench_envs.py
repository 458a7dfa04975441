"""Env throughput: steps/s (parse + step + text observation) and resets/s, ours beside TextArena's FrozenLake.

Two ways to run it (neither is part of the test command):

    python -m pytest benchmarks/bench_envs.py --benchmark-only        # pytest-benchmark tables
    .venv-bench-frozen/bin/python benchmarks/bench_envs.py --rounds 9  # side by side, with ratios

The second form interleaves the contenders round by round on the same (shared) CPU and prints the median
rate of each plus the ratio ours / peer. Rates are per second of the process's CPU time by default
(``--clock wall`` for elapsed time): with other jobs on the cores, wall time mostly measures the scheduler. TextArena is never our dependency: install it into a separate venv
that also sees this package (``python3 -m venv .venv-bench-frozen --system-site-packages &&
.venv-bench-frozen/bin/pip install textarena``). Without it, its reference figures (docs/benchmarks.md) are printed instead.

Workloads (each step is one model response):

- ``frozenlake step``: 4×4 maps, seeds 0..N-1, one move per response along a shortest path
  (``<think>…</think><answer>Down</answer>``), i.e. the same work per call as TextArena's
  ``step("[down]") + get_observation()`` on its 4×4 FrozenLake-v0 (3 holes, fixed corners).
- ``frozenlake step (oracle)``: our default episode, the oracle's two moves per response.
- ``reset(seed)``: a new seeded episode (map generation + BFS proof + first observation); ``reset()`` without
  a seed skips Gymnasium's ~8 µs SeedSequence/PCG64 construction, as vector-env autoresets do.
- Bandit: one pull per episode, so its step and reset are measured the same way.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import deque

import gymnasium as gym
import pytest

import ragen_envs  # noqa: F401  (registers the ids)
from ragen_envs.frozen_lake import ACTIONS, bfs_layers, shortest_actions

EPISODES = 300
RESETS = 2000
ANCHORS = {"textarena frozenlake step": 28_600.0, "textarena frozenlake reset(seed)": 19_900.0}
"""Peer reference figures (docs/benchmarks.md; steps or resets per second), shown when TextArena is not installed."""


def _think(answer: str) -> str:
    return f"<think>The goal is below me, so I move.</think><answer>{answer}</answer>"


# ---- workloads: each returns (setup, run); run() plays the batch and returns how many calls it made -----------
def frozenlake_steps(env_id: str = "ragen/FrozenLake-v0", one_move: bool = True):
    """Episodes replayed from precomputed responses, so the timed part is only ``env.step``."""
    envs = [gym.make(env_id, max_turns=50).unwrapped for _ in range(EPISODES)]
    if not one_move:
        return replay(envs, oracle_plans(envs))
    plans = []
    for seed, env in enumerate(envs):
        env.reset(seed=seed)
        layers = bfs_layers(env.lake.size, env.lake.holes, env.lake.goal)
        moves = shortest_actions(env.lake, layers, env.lake.start, 10**6)
        plans.append([_think(ACTIONS[a]) for a in moves])
    return replay(envs, plans)


def oracle_plans(envs) -> list[list[str]]:
    """The oracle's episode of each env on its index as seed, as the responses to replay."""
    plans = []
    for seed, env in enumerate(envs):
        env.reset(seed=seed)
        responses, done = [], False
        while not done:
            responses.append(env.oracle_response())
            done = any(env.step(responses[-1])[2:4])
        plans.append(responses)
    return plans


def replay(envs, plans: list[list[str]]):
    """``(setup, run)``: ``setup`` resets each env on its index as seed; ``run`` steps each env through its planned
    responses and returns the steps taken."""

    def setup() -> None:
        for seed, env in enumerate(envs):
            env.reset(seed=seed)

    def run() -> int:
        calls = 0
        for env, responses in zip(envs, plans, strict=True):
            for response in responses:
                env.step(response)
            calls += len(responses)
        return calls

    return setup, run


def resets(env_id: str, seeded: bool = True):
    env = gym.make(env_id).unwrapped
    env.reset(seed=0)

    def run() -> int:
        if seeded:
            for seed in range(RESETS):
                env.reset(seed=seed)
        else:
            for _ in range(RESETS):
                env.reset()
        return RESETS

    return (lambda: None), run


def bandit_steps():
    envs = [gym.make("ragen/Bandit-v0").unwrapped for _ in range(EPISODES)]
    responses = []
    for seed, env in enumerate(envs):
        env.reset(seed=seed)
        responses.append(env.oracle_response())

    def setup() -> None:
        for seed, env in enumerate(envs):
            env.reset(seed=seed)

    def run() -> int:
        for env, response in zip(envs, responses, strict=True):
            env.step(response)
        return len(envs)

    return setup, run


def textarena_steps():
    """TextArena's FrozenLake-v0 (4×4, 3 holes), one ``[move]`` per step along a BFS path, plus the observation."""
    from textarena.envs.FrozenLake.env import FrozenLakeEnv

    envs = [FrozenLakeEnv(size=4, num_holes=3) for _ in range(EPISODES)]
    plans = []
    for seed, env in enumerate(envs):
        env.reset(num_players=1, seed=seed)
        plans.append(_textarena_path(env))

    def setup() -> None:
        for seed, env in enumerate(envs):
            env.reset(num_players=1, seed=seed)

    def run() -> int:
        calls = 0
        for env, moves in zip(envs, plans, strict=True):
            for move in moves:
                env.step(move)
                env.get_observation()
            calls += len(moves)
        return calls

    return setup, run


def textarena_resets():
    from textarena.envs.FrozenLake.env import FrozenLakeEnv

    env = FrozenLakeEnv(size=4, num_holes=3)

    def run() -> int:
        for seed in range(RESETS):
            env.reset(num_players=1, seed=seed)
        return RESETS

    return (lambda: None), run


def _textarena_path(env) -> list[str]:
    state = env.state.game_state
    grid, start, goal, size = state["grid"], state["player_pos"], state["goal_pos"], env.size
    came_from = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if cell == goal:
            break
        for name, (d_row, d_col) in env.actions.items():
            nxt = (cell[0] + d_row, cell[1] + d_col)
            if 0 <= nxt[0] < size and 0 <= nxt[1] < size and nxt not in came_from and grid[nxt[0]][nxt[1]] != "H":
                came_from[nxt] = (cell, name)
                queue.append(nxt)
    path, cell = [], goal
    while came_from[cell] is not None:
        cell, name = came_from[cell]
        path.append(f"[{name}]")
    return path[::-1]


# ---- pytest-benchmark ---------------------------------------------------------------------------------------
def _bench(benchmark, workload, rounds: int = 15) -> None:
    setup, run = workload
    calls = run_count = 0

    def timed() -> None:
        nonlocal calls, run_count
        calls += run()
        run_count += 1

    benchmark.pedantic(timed, setup=setup, rounds=rounds, iterations=1, warmup_rounds=1)
    benchmark.extra_info["calls_per_round"] = calls // max(run_count, 1)
    benchmark.extra_info["calls_per_s"] = benchmark.extra_info["calls_per_round"] / benchmark.stats["median"]


@pytest.mark.benchmark(group="frozenlake step")
def test_frozenlake_step(benchmark):
    _bench(benchmark, frozenlake_steps())


@pytest.mark.benchmark(group="frozenlake step")
def test_frozenlake_step_oracle_two_moves(benchmark):
    _bench(benchmark, frozenlake_steps(one_move=False))


@pytest.mark.benchmark(group="frozenlake step")
def test_frozenlake_8x8_step(benchmark):
    _bench(benchmark, frozenlake_steps("ragen/FrozenLake-8x8-v0"))


@pytest.mark.benchmark(group="frozenlake step")
def test_textarena_frozenlake_step(benchmark):
    pytest.importorskip("textarena")
    _bench(benchmark, textarena_steps())


@pytest.mark.benchmark(group="reset")
@pytest.mark.parametrize("env_id", ["ragen/FrozenLake-v0", "ragen/FrozenLake-8x8-v0", "ragen/Bandit-v0"])
def test_reset_seeded(benchmark, env_id):
    _bench(benchmark, resets(env_id), rounds=7)


@pytest.mark.benchmark(group="reset")
def test_frozenlake_reset_unseeded(benchmark):
    _bench(benchmark, resets("ragen/FrozenLake-v0", seeded=False), rounds=7)


@pytest.mark.benchmark(group="reset")
def test_textarena_frozenlake_reset(benchmark):
    pytest.importorskip("textarena")
    _bench(benchmark, textarena_resets(), rounds=7)


@pytest.mark.benchmark(group="bandit step")
def test_bandit_step(benchmark):
    _bench(benchmark, bandit_steps())


# ---- side by side -------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="cpu: this process's CPU time (robust when other jobs share the cores); wall: elapsed time",
    )
    args = parser.parse_args(argv)
    try:
        import textarena  # noqa: F401

        have_textarena = True
    except ImportError:
        have_textarena = False
    contenders = {
        "frozenlake step": frozenlake_steps(),
        "frozenlake step (oracle, 2 moves)": frozenlake_steps(one_move=False),
        "frozenlake 8x8 step": frozenlake_steps("ragen/FrozenLake-8x8-v0"),
        "frozenlake reset(seed)": resets("ragen/FrozenLake-v0"),
        "frozenlake reset()": resets("ragen/FrozenLake-v0", seeded=False),
        "frozenlake 8x8 reset(seed)": resets("ragen/FrozenLake-8x8-v0"),
        "bandit step": bandit_steps(),
        "bandit reset(seed)": resets("ragen/Bandit-v0"),
    }
    if have_textarena:
        contenders["textarena frozenlake step"] = textarena_steps()
        contenders["textarena frozenlake reset(seed)"] = textarena_resets()
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    for _ in range(args.rounds):  # interleaved: every contender once per round, so load hits all alike
        for name, (setup, run) in contenders.items():
            setup()
            start = clock()
            calls = run()
            rates[name].append(calls / (clock() - start))
    median = {name: statistics.median(values) for name, values in rates.items()}
    source = "measured" if have_textarena else "the reference figures in docs/benchmarks.md (textarena not installed)"
    for name, value in ANCHORS.items():
        median.setdefault(name, value)
    print(f"per second of {args.clock} time, {args.rounds} interleaved rounds")
    print(f"{'contender':36} {'median /s':>12} {'min /s':>12} {'max /s':>12}")
    for name, values in rates.items():
        print(f"{name:36} {median[name]:12,.0f} {min(values):12,.0f} {max(values):12,.0f}")
    print(f"\nratios vs TextArena ({source}):")
    for ours, peer in (
        ("frozenlake step", "textarena frozenlake step"),
        ("frozenlake step (oracle, 2 moves)", "textarena frozenlake step"),
        ("frozenlake reset(seed)", "textarena frozenlake reset(seed)"),
        ("frozenlake reset()", "textarena frozenlake reset(seed)"),
    ):
        print(f"  {ours:34} / {peer:34} = {median[ours] / median[peer]:5.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
