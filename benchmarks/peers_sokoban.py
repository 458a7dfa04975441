"""Sokoban side by side with its peers, interleaved in one run (the CPU is shared, so only ratios mean much).

Peers are never our dependencies: install them into a separate venv that also sees this package, e.g.

    python3 -m venv .venv-bench-sokoban --system-site-packages
    .venv-bench-sokoban/bin/pip install gym-sokoban textarena reasoning-gym
    .venv-bench-sokoban/bin/python benchmarks/peers_sokoban.py [--rounds 5]

Measured (median over rounds, each round timing a batch of each contender back to back):

- generation 6×6/1 box: ours (``generate_level``, optimal length proven) vs gym-sokoban ``generate_room``
  (the generator RAGEN wraps; retried on its RuntimeError as its env does). RAGEN itself is not packaged:
  its anchor, 426 levels/s on this machine, is printed beside.
- generation 10×10/3 boxes: ours vs reasoning-gym ``SokobanDataset`` items at width = height = 10, 3 boxes
  (each verified by its A*); ours verifies every level by replay and a proven lower bound.
- step to text: ours ``env.step(response)`` (parse + move + observation; through ``gym.make``'s wrappers
  and unwrapped) vs TextArena
  ``step("[up]") + get_observation()``, both on 6×6/1-box levels, one move per call.

A peer that fails to import is reported as missing and its reference figure (docs/benchmarks.md) is shown instead.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

ANCHORS = {"ragen_gen_6x6_1": 426.0, "rg_gen_10x10_3": 31.5, "textarena_step": 14600.0, "gym_sokoban_gen_6x6_1": 301.0}


def _rate(fn, n: int) -> float:
    start = time.perf_counter()
    fn(n)
    return n / (time.perf_counter() - start)


# ---- ours ----------------------------------------------------------------------------------------------------
def ours_gen(rows: int, boxes: int, difficulty: int, max_moves: int):
    from ragen_envs.sokoban import SokobanConfig, generate_level

    config = SokobanConfig(rows=rows, cols=rows, num_boxes=boxes, difficulty=difficulty, max_moves=max_moves)
    seed = [0]

    def run(n: int) -> None:
        rng = np.random.default_rng(seed[0])  # one generator per batch, as an env holds one
        seed[0] += 1
        for _ in range(n):
            generate_level(rng, config)

    return run


def ours_step(env_id: str = "ragen/Sokoban-v0", unwrapped: bool = False):
    import gymnasium as gym

    import ragen_envs  # noqa: F401

    env = gym.make(env_id, max_turns=10**9, max_actions_per_turn=1)
    if unwrapped:  # without gymnasium's checker/order wrappers, as TextArena's env is called
        env = env.unwrapped
    env.reset(seed=0)
    responses = [f"<think>go</think><answer>{a}</answer>" for a in ("Up", "Left", "Down", "Right")]
    state = {"i": 0, "seed": 0}

    def run(n: int) -> None:
        for _ in range(n):
            _, _, terminated, _, _ = env.step(responses[state["i"] & 3])
            state["i"] += 1
            if terminated:
                state["seed"] += 1
                env.reset(seed=state["seed"])

    return run


# ---- peers ---------------------------------------------------------------------------------------------------
def gym_sokoban_gen():
    import random

    from gym_sokoban.envs.room_utils import generate_room

    random.seed(0)
    np.random.seed(0)

    def run(n: int) -> None:
        made = 0
        while made < n:
            try:
                generate_room(dim=(6, 6), num_steps=int(1.7 * 12), num_boxes=1)
                made += 1
            except (RuntimeError, RuntimeWarning):
                pass

    return run


def reasoning_gym_gen():
    from reasoning_gym.games.sokoban import SokobanConfig, SokobanDataset

    config = SokobanConfig(min_w=10, max_w=10, min_h=10, max_h=10, min_boxes=3, max_boxes=3, seed=0, size=10**6)
    dataset = SokobanDataset(config)
    state = {"i": 0}

    def run(n: int) -> None:
        for _ in range(n):
            dataset[state["i"]]
            state["i"] += 1

    return run


def textarena_step():
    from textarena.envs.Sokoban.env import SokobanEnv

    env = SokobanEnv(dim_room=(6, 6), num_boxes=1, max_turns=10**9)
    env.reset(num_players=1, seed=0)
    actions = ["[up]", "[left]", "[down]", "[right]"]
    state = {"i": 0, "seed": 0}

    def run(n: int) -> None:
        for _ in range(n):
            done, _ = env.step(actions[state["i"] & 3])
            env.get_observation()
            state["i"] += 1
            if done:
                state["seed"] += 1
                env.reset(num_players=1, seed=state["seed"])

    return run


def _maybe(factory):
    try:
        return factory()
    except Exception as error:  # a peer that will not import or run is reported, not fatal
        print(f"  ({factory.__name__} unavailable: {type(error).__name__}: {error})")
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", help="write the medians here")
    args = parser.parse_args(argv)
    contenders = {
        # name: (callable, batch size)
        "ours_gen_6x6_1": (ours_gen(6, 1, 3, 10), 2000),
        "gym_sokoban_gen_6x6_1": (_maybe(gym_sokoban_gen), 100),
        "ours_gen_8x8_2": (ours_gen(8, 2, 8, 30), 300),
        "ours_gen_10x10_3": (ours_gen(10, 3, 10, 100), 200),
        "rg_gen_10x10_3": (_maybe(reasoning_gym_gen), 20),
        "ours_step_6x6_1": (ours_step(), 20000),
        "ours_step_6x6_1_unwrapped": (ours_step(unwrapped=True), 20000),
        "ours_step_10x10_3": (ours_step("ragen/Sokoban-10x10-v0"), 20000),
        "textarena_step": (_maybe(textarena_step), 5000),
    }
    rates: dict[str, list[float]] = {name: [] for name, (fn, _) in contenders.items() if fn is not None}
    for fn, n in contenders.values():  # warm-up (imports, caches)
        if fn is not None:
            fn(max(1, n // 20))
    for r in range(args.rounds):
        for name, (fn, n) in contenders.items():
            if fn is not None:
                rates[name].append(_rate(fn, n))
        print(f"round {r + 1}/{args.rounds} done", flush=True)
    med = {name: statistics.median(v) for name, v in rates.items()}
    spread = {name: (min(v), max(v)) for name, v in rates.items()}
    print(f"\n{'contender':24} {'median/s':>12} {'min':>10} {'max':>10}")
    for name in med:
        print(f"{name:24} {med[name]:12.1f} {spread[name][0]:10.1f} {spread[name][1]:10.1f}")

    def ratio(ours: str, peer: str) -> str:
        if peer in med:
            return f"{med[ours] / med[peer]:.1f}x (measured side by side)"
        return f"{med[ours] / ANCHORS[peer]:.1f}x (vs the reference figure {ANCHORS[peer]})"

    print("\nratios:")
    print(f"  generation 6x6/1   ours / gym-sokoban        {ratio('ours_gen_6x6_1', 'gym_sokoban_gen_6x6_1')}")
    print(f"  generation 6x6/1   ours / RAGEN anchor 426   {med['ours_gen_6x6_1'] / ANCHORS['ragen_gen_6x6_1']:.1f}x")
    print(f"  generation 10x10/3 ours / reasoning-gym      {ratio('ours_gen_10x10_3', 'rg_gen_10x10_3')}")
    print(f"  step 6x6/1         ours / TextArena          {ratio('ours_step_6x6_1', 'textarena_step')}")
    print(f"  step 6x6/1 unwrapped ours / TextArena        {ratio('ours_step_6x6_1_unwrapped', 'textarena_step')}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"median": med, "min_max": spread}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
