"""Sandbox cost: a bare ``python3 -c pass`` host spawn vs bubblewrap vs the warm pool vs Docker, and a CodeExec
step vs RAGEN's unsandboxed method, measured side by side in one run.

    python -m pytest benchmarks/bench_sandbox.py --benchmark-only     # pytest-benchmark tables
    python benchmarks/bench_sandbox.py --rounds 7 [--docker]          # side by side, medians and ratios

Contenders (wall clock: these are process spawns, the parent's CPU time would miss the child's work):

- ``bare python3 -c pass``: ``subprocess.run([/usr/bin/python3, "-c", "pass"])`` on the host, no limits.
- ``bwrap sandbox``: ``sandbox.run("pass")`` — fresh namespaces, cgroup, uid, rlimits, launcher.
- ``warm pool``: the same program through ``PoolBackend`` (fork inside a pre-started sandbox).
- ``warm pool, baseline reset``: the same pool with the earlier cooperative reset and no syscall filter
  (``pool_baseline_zygote.py``): what the proven-clean reset and the filter cost per run.
- ``docker``: one container per run (``--docker`` starts a private dockerd like the tests do).
- ``RAGEN method, 3 tests``: RAGEN DeepCoder's way — candidate + a harness with 3 tests in a temp file,
  ``subprocess.run([python, file], timeout=3)`` on the host, no sandbox (re-measured here, same machine).
- ``CodeExec step, 3 hidden tests``: ``env.step`` of ragen/CodeExec-v0 with ``num_hidden_tests=3`` (the 2
  visible examples run too), through bubblewrap and through the pool.

Throughput on 2 cores (``--parallel 2``): two threads issue runs concurrently; executions/s is reported.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ragen_envs import sandbox
from ragen_envs.code.env import CodeExecEnv

HOST_PYTHON = "/usr/bin/python3"
CANDIDATE = "def add_up(a, b):\n    return a + b\n"
RAGEN_HARNESS = """
{code}
tests = [((1, 2), 3), ((5, 7), 12), ((-1, 1), 0)]
passed = 0
for args, want in tests:
    try:
        passed += add_up(*args) == want
    except Exception:
        pass
print(passed)
"""


WRITER = "import os\nos.mkdir('d')\nfor i in range(200):\n    open(f'd/{i}', 'w').write('x')\n"


def bare_spawn() -> None:
    subprocess.run([HOST_PYTHON, "-c", "pass"], check=True)


def ragen_method(python: str = HOST_PYTHON) -> int:
    """RAGEN DeepCoder: write candidate + tests to a file, run it on the host with a 3 s timeout."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(RAGEN_HARNESS.format(code=CANDIDATE))
        path = f.name
    try:
        done = subprocess.run([python, path], capture_output=True, text=True, timeout=3)
        return int(done.stdout.strip() or 0)
    finally:
        os.unlink(path)


def baseline_pool(size: int):
    """A pool whose members run the earlier zygote (cooperative reset) without the syscall filter."""
    from ragen_envs.sandbox import pool as pool_module
    from ragen_envs.sandbox import seccomp

    old_source, old_memfd = pool_module.ZYGOTE_SOURCE, seccomp.memfd
    pool_module.ZYGOTE_SOURCE = (Path(__file__).parent / "pool_baseline_zygote.py").read_bytes()
    seccomp.memfd = lambda: None
    try:
        return pool_module.PoolBackend(size=size)
    finally:
        pool_module.ZYGOTE_SOURCE, seccomp.memfd = old_source, old_memfd


def codeexec_stepper(backend):
    env = CodeExecEnv(num_hidden_tests=3, backend="pool" if not isinstance(backend, str) else backend)
    if not isinstance(backend, str):
        env._backend = backend
    seeds = iter(range(10**9))

    def step() -> None:
        env.reset(seed=next(seeds) % 50)
        *_, info = env.step(env.oracle_response())
        assert info["success"], info

    return step


def start_private_dockerd() -> tuple[subprocess.Popen, str, Path]:
    root = Path(tempfile.mkdtemp(prefix="ragen-bench-dockerd-"))
    sock = f"unix://{root}/docker.sock"
    proc = subprocess.Popen(
        [
            "dockerd",
            "--bridge=none",
            "--iptables=false",
            "--ip6tables=false",
            "--ip-forward=false",
            "--data-root",
            str(root / "data"),
            "--exec-root",
            str(root / "exec"),
            "--host",
            sock,
            "--pidfile",
            str(root / "docker.pid"),
        ],  # fmt: skip
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    import docker

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if docker.DockerClient(base_url=sock, timeout=10).ping():
                return proc, sock, root
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("dockerd did not start")


# ---- pytest-benchmark -----------------------------------------------------------------------------------
pytestmark = pytest.mark.skipif("bwrap" not in sandbox.available_backends(), reason="bubblewrap cannot run here")


def test_bare_python_spawn(benchmark):
    benchmark(bare_spawn)


def test_bwrap_sandbox(benchmark):
    benchmark(lambda: sandbox.run("pass", backend="bwrap"))


def test_warm_pool(benchmark):
    from ragen_envs.sandbox.pool import PoolBackend

    pool = PoolBackend(size=1)
    try:
        benchmark(lambda: pool.run("pass"))
    finally:
        pool.close()


def test_ragen_method_3_tests(benchmark):
    assert benchmark(ragen_method) == 3


def test_codeexec_step_bwrap(benchmark):
    benchmark(codeexec_stepper("bwrap"))


def test_codeexec_step_pool(benchmark):
    benchmark(codeexec_stepper("pool"))


# ---- side by side -----------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20, help="calls per contender per round")
    parser.add_argument("--docker", action="store_true", help="also start a private dockerd and time Docker")
    parser.add_argument("--parallel", type=int, default=2, help="threads for the executions/s figures")
    args = parser.parse_args(argv)

    from ragen_envs.sandbox.pool import PoolBackend

    pool = PoolBackend(size=args.parallel)
    sandbox._cache[f"pool@{os.getpid()}"] = pool  # CodeExec's backend="pool" uses this one
    baseline = baseline_pool(args.parallel)
    contenders = {
        "bare python3 -c pass": bare_spawn,
        "bwrap sandbox": lambda: sandbox.run("pass", backend="bwrap"),
        "warm pool": lambda: pool.run("pass"),
        "warm pool, baseline reset": lambda: baseline.run("pass"),
        "warm pool, writes 200 files": lambda: pool.run(WRITER),
        "baseline reset, writes 200 files": lambda: baseline.run(WRITER),
        "RAGEN method, 3 tests (no sandbox)": ragen_method,
        "CodeExec step, 3 hidden (bwrap)": codeexec_stepper("bwrap"),
        "CodeExec step, 3 hidden (pool)": codeexec_stepper("pool"),
        "CodeExec step, 3 hidden (baseline pool)": codeexec_stepper(baseline),
    }
    dockerd = None
    if args.docker:
        from ragen_envs.sandbox.docker_backend import DockerBackend

        dockerd = start_private_dockerd()
        docker_backend = DockerBackend(base_url=dockerd[1])
        contenders["docker"] = lambda: docker_backend.run("pass")
    try:
        for fn in contenders.values():
            fn()  # warm-up (image import, pool start, imports)
        per_call: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.rounds):
            for name, fn in contenders.items():
                calls = max(2, args.calls // 10) if name == "docker" else args.calls
                t0 = time.perf_counter()
                for _ in range(calls):
                    fn()
                per_call[name].append((time.perf_counter() - t0) / calls)
        throughput = {}
        for name, fn in contenders.items():
            calls = 2 * args.parallel if name == "docker" else 10 * args.parallel
            with ThreadPoolExecutor(args.parallel) as ex:
                t0 = time.perf_counter()
                list(ex.map(lambda _, f=fn: f(), range(calls)))
                throughput[name] = calls / (time.perf_counter() - t0)
    finally:
        pool.close()
        baseline.close()
        if dockerd is not None:
            dockerd[0].send_signal(signal.SIGTERM)
            dockerd[0].wait(timeout=60)
            shutil.rmtree(dockerd[2], ignore_errors=True)
    bare = statistics.median(per_call["bare python3 -c pass"])
    ragen = statistics.median(per_call["RAGEN method, 3 tests (no sandbox)"])
    print(f"{args.rounds} rounds x {args.calls} calls, wall clock, {os.cpu_count()} CPUs; load: {os.getloadavg()}")
    print(
        f"{'contender':40s} {'median ms':>10s} {'[min-max]':>17s} {'vs bare':>8s} {'vs RAGEN':>9s} {'exec/s x' + str(args.parallel):>10s}"
    )
    for name, values in per_call.items():
        med = statistics.median(values)
        print(
            f"{name:40s} {med * 1e3:10.1f} [{min(values) * 1e3:6.1f}-{max(values) * 1e3:7.1f}] "
            f"{med / bare:7.2f}x {med / ragen:8.2f}x {throughput[name]:10.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
