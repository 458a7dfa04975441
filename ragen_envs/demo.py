"""``python -m ragen_envs.demo``: the oracle plays seeded episodes of every registered env; prints a table.

A quick, honest check that the suite installs and every env is solvable; ``harness run baseline`` is the
full evaluation.
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym

import ragen_envs


def play_oracle(env_id: str, seeds: range) -> tuple[int, float, float]:
    """Return (successes, mean return, mean turns) of the oracle over ``seeds``."""
    env = gym.make(env_id)
    wins, total_return, total_turns = 0, 0.0, 0
    for seed in seeds:
        env.reset(seed=seed)
        done, info = False, {}
        while not done:
            _, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_response())
            total_return += reward
            done = terminated or truncated
        wins += bool(info["success"])
        total_turns += info["turn"]
    env.close()
    return wins, total_return / len(seeds), total_turns / len(seeds)


def main(argv: list[str] | None = None) -> int:
    """``python -m ragen_envs.demo``: play every registered env with its oracle and print success, return and turns;
    exit code 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20, help="seeds 0..N-1 per env")
    args = parser.parse_args(argv)
    seeds = range(args.episodes)
    print(f"{'env':28} {'success':>9} {'return':>8} {'turns':>6} {'s':>6}")
    for env_id in ragen_envs.registered_ids():
        start = time.perf_counter()
        wins, mean_return, mean_turns = play_oracle(env_id, seeds)
        print(
            f"{env_id:28} {wins:>4}/{len(seeds):<4} {mean_return:8.3f} {mean_turns:6.2f} {time.perf_counter() - start:6.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
