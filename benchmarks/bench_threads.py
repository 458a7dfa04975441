"""The MI phase with the old and the new torch-thread default, on an idle and on a loaded machine.

    python benchmarks/bench_threads.py                  # 64 Bandit episodes of the shipped tiny model
    python benchmarks/bench_threads.py --episodes 8 --spinners 2

Contenders (both generate with one thread; they differ in what teacher forcing, the MI family, uses):

- **old**: the former default, every usable core up to 4 for scoring (``score_threads = min(cores, 4)``);
- **new**: :data:`harness.threads.DEFAULT_THREADS` (one thread for both).

Each runs ``harness.runner.run`` of ``tiny`` on ``ragen/Bandit-v0`` (``--episodes`` seeds x 4 samples, 64 MI
pairs per scheme) and reports the rollout's and the MI family's wall seconds. "Loaded" starts ``--spinners``
busy-looping processes (default: one per usable core) at the benchmark's own priority for the duration of the
contender's run; an untimed one-seed run first takes imports and first-call costs out of the figures. The
rollout is the same for both contenders (one thread), so its two timings show how steady the machine was.
The machine may be shared with other jobs, so "idle" is only as idle as the machine was: the
1-minute load average before each run is printed with it. Not part of the test command.
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
from pathlib import Path

from harness.config import EnvPlan, RunConfig
from harness.runner import run
from harness.threads import usable_cores


def _spin() -> None:
    while True:
        pass


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"


def _one(extra: dict, episodes: int, out: Path, name: str) -> tuple[float, float]:
    from harness.agents import AgentOptions

    config = RunConfig(
        agents=("tiny",),
        envs=(EnvPlan("ragen/Bandit-v0", episodes, 4),),
        agent_options=AgentOptions(device="cpu", max_new_tokens=96, extra=extra),
        mi_samples=64,
    )
    started = time.perf_counter()
    result = run(config, out, run_id=name, progress=False, plots=False)
    total = time.perf_counter() - started
    return total - result.mi_seconds, result.mi_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=16, help="Bandit seeds (x 4 samples); default 16 = 64 episodes")
    parser.add_argument("--spinners", type=int, default=usable_cores(), help="busy processes on the loaded box")
    args = parser.parse_args()
    contenders = {"old": {"score_threads": min(usable_cores(), 4)}, "new": {}}
    print(f"usable cores {usable_cores()}; {args.episodes * 4} Bandit episodes of tiny; MI 64 pairs per scheme")
    print(f"{'box':7} {'default':8} {'load before':>11} {'rollout s':>10} {'MI s':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        _one({}, 1, Path(tmp), "warm-up")  # imports, model load and first-call costs out of the timings
        for box in ("idle", "loaded"):
            for name, extra in contenders.items():
                spinners = []
                if box == "loaded":
                    context = multiprocessing.get_context("spawn")
                    spinners = [context.Process(target=_spin, daemon=True) for _ in range(args.spinners)]
                    for process in spinners:
                        process.start()
                    time.sleep(2.0)
                load = _load()
                try:
                    rollout_s, mi_s = _one(extra, args.episodes, Path(tmp), f"{box}-{name}")
                finally:
                    for process in spinners:
                        process.kill()
                        process.join()
                print(f"{box:7} {name:8} {load:>11} {rollout_s:10.1f} {mi_s:8.1f}", flush=True)
                time.sleep(5.0)  # let the load average of the spinners decay a little


if __name__ == "__main__":
    main()
