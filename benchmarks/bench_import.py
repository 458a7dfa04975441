"""Cold start: a fresh interpreter that imports the package and makes an env, beside Gymnasium's own.

    python -m pytest benchmarks/bench_import.py --benchmark-only   # pytest-benchmark table
    python benchmarks/bench_import.py --rounds 15                  # side by side, with the ratio

Each sample is the wall time of one fresh ``python -c …`` subprocess (page cache warm), so interpreter start-up
is included for both contenders. Rounds alternate the contenders so that load on the shared CPU hits both.
Target: ours ≤ 1.3 × Gymnasium's ``import gymnasium; gym.make("FrozenLake-v1")``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time

import pytest

CONTENDERS = {
    "gymnasium FrozenLake-v1": 'import gymnasium as gym; gym.make("FrozenLake-v1").reset(seed=0)',
    "ragen_envs FrozenLake-v0": 'import gymnasium as gym, ragen_envs; gym.make("ragen/FrozenLake-v0").reset(seed=0)',
    "ragen_envs Bandit-v0": 'import gymnasium as gym, ragen_envs; gym.make("ragen/Bandit-v0").reset(seed=0)',
    "ragen_envs (module prefix)": 'import gymnasium as gym; gym.make("ragen_envs:ragen/FrozenLake-v0").reset(seed=0)',
    "python only": "pass",
}


def cold_start(code: str) -> float:
    """Seconds for one fresh interpreter to run ``code``."""
    return cold_start_times(code)[0]


def cold_start_times(code: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one fresh interpreter running ``code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


@pytest.mark.benchmark(group="cold import + make")
@pytest.mark.parametrize("name", list(CONTENDERS))
def test_cold_import_and_make(benchmark, name):
    benchmark.pedantic(cold_start, args=(CONTENDERS[name],), rounds=10, iterations=1, warmup_rounds=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    wall: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    cpu: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    for code in CONTENDERS.values():  # warm the page cache
        cold_start(code)
    for _ in range(args.rounds):
        for name, code in CONTENDERS.items():
            seconds, cpu_seconds = cold_start_times(code)
            wall[name].append(seconds)
            cpu[name].append(cpu_seconds)
    print(f"{'contender':28} {'wall median ms':>15} {'min':>6} {'max':>6} {'CPU median ms':>14}")
    for name in CONTENDERS:
        w, c = wall[name], cpu[name]
        print(
            f"{name:28} {statistics.median(w) * 1e3:15.0f} {min(w) * 1e3:6.0f} {max(w) * 1e3:6.0f}"
            f" {statistics.median(c) * 1e3:14.0f}"
        )
    for name in ("ragen_envs FrozenLake-v0", "ragen_envs Bandit-v0", "ragen_envs (module prefix)"):
        ratios = [
            statistics.median(samples[name]) / statistics.median(samples["gymnasium FrozenLake-v1"])
            for samples in (wall, cpu)
        ]
        print(f"{name} / gymnasium FrozenLake-v1: wall {ratios[0]:.2f}x, CPU {ratios[1]:.2f}x (target <= 1.3x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
