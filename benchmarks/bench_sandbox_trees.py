"""A CodeExec step on each sandbox backend, this checkout beside another one (e.g. a worktree of an earlier commit).

    git worktree add BASE_DIR COMMIT
    python benchmarks/bench_sandbox_trees.py --base BASE_DIR --rounds 5 --steps 10 [--docker]

Each round runs, for each backend (``bwrap``, ``pool``, and ``docker`` with ``--docker``, through a private
dockerd as the tests start it) and for each tree in alternation, a fresh Python process with that tree first on
``PYTHONPATH``: it builds ``ragen/CodeExec-v0`` (3 hidden tests, the 2 visible ones run too) on the backend,
takes one warm-up step, then times ``--steps`` oracle steps. Prints the median ms per step of each
(backend, tree) over the rounds and the ratio this / base.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

STEPPER = """
import sys, time
from ragen_envs.code.env import CodeExecEnv
backend, steps, docker_url = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if backend == "docker":
    from ragen_envs.sandbox.docker_backend import DockerBackend
    env = CodeExecEnv(num_hidden_tests=3, backend="pool")
    env._backend = DockerBackend(base_url=docker_url)
else:
    env = CodeExecEnv(num_hidden_tests=3, backend=backend)
times = []
for seed in range(steps + 1):
    env.reset(seed=seed % 50)
    start = time.perf_counter()
    *_, info = env.step(env.oracle_response())
    times.append(time.perf_counter() - start)
    assert info["success"], info
print(sorted(times[1:])[len(times[1:]) // 2] * 1e3)
"""


def main() -> int:
    """Time both trees round by round on each backend; print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--docker", action="store_true")
    args = parser.parse_args()
    backends = ["bwrap", "pool"]
    dockerd = None
    docker_url = ""
    if args.docker:
        sys.path.insert(0, str(HERE / "benchmarks"))
        from bench_sandbox import start_private_dockerd

        dockerd, docker_url, root = start_private_dockerd()
        backends.append("docker")
    trees = {"this": HERE, "base": args.base.resolve()}
    times: dict[tuple[str, str], list[float]] = {}
    try:
        for _ in range(args.rounds):
            for backend in backends:
                for name, tree in trees.items():
                    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
                    out = subprocess.run(
                        [sys.executable, "-c", STEPPER, backend, str(args.steps), docker_url],
                        capture_output=True, text=True, env=env, cwd=tree, timeout=600, check=True,
                    )  # fmt: skip
                    times.setdefault((backend, name), []).append(float(out.stdout.split()[-1]))
    finally:
        if dockerd is not None:
            os.killpg(dockerd.pid, signal.SIGTERM)
            dockerd.wait(timeout=60)
            shutil.rmtree(root, ignore_errors=True)
    for backend in backends:
        this, base = (statistics.median(times[(backend, name)]) for name in trees)
        print(f"{backend:7s} this {this:7.1f} ms  base {base:7.1f} ms  ratio {this / base:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
