"""Cold start: a fresh interpreter that imports the package and makes an env, beside Gymnasium's own.

    python -m pytest benchmarks/bench_import.py --benchmark-only   # pytest-benchmark table
    python benchmarks/bench_import.py --rounds 15                  # side by side, with the ratio

Each sample is the wall time of one fresh ``python -c …`` subprocess (page cache warm), so interpreter start-up
is included for both contenders. Rounds alternate the contenders so that load on the shared CPU hits both.
Target: ours ≤ 1.3 × Gymnasium's ``import gymnasium; gym.make("FrozenLake-v1")``.
"""

from __future__ import annotations

import argparse
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
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    return time.perf_counter() - start


@pytest.mark.benchmark(group="cold import + make")
@pytest.mark.parametrize("name", list(CONTENDERS))
def test_cold_import_and_make(benchmark, name):
    benchmark.pedantic(cold_start, args=(CONTENDERS[name],), rounds=10, iterations=1, warmup_rounds=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    samples: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    for code in CONTENDERS.values():  # warm the page cache
        cold_start(code)
    for _ in range(args.rounds):
        for name, code in CONTENDERS.items():
            samples[name].append(cold_start(code))
    median = {name: statistics.median(values) for name, values in samples.items()}
    print(f"{'contender':28} {'median ms':>10} {'min ms':>8} {'max ms':>8}")
    for name, values in samples.items():
        print(f"{name:28} {median[name] * 1e3:10.0f} {min(values) * 1e3:8.0f} {max(values) * 1e3:8.0f}")
    base = median["gymnasium FrozenLake-v1"]
    for name in ("ragen_envs FrozenLake-v0", "ragen_envs Bandit-v0", "ragen_envs (module prefix)"):
        print(f"{name} / gymnasium FrozenLake-v1 = {median[name] / base:.2f}x (target <= 1.3x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
