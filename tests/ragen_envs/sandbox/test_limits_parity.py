"""One limit, one meaning: the same programs under the same :class:`Limits` get the same verdict on every
backend (cold bubblewrap, the warm pool, Docker through a private daemon when one can start here).

Each program sits just inside or just outside one limit, where a backend that scoped the limit differently
(per process instead of the whole sandbox, the pool's limits instead of the run's, no CPU quota) would give
the other verdict.
"""

from __future__ import annotations

import pytest

from ragen_envs.sandbox import Limits, cgroups
from ragen_envs.sandbox.bwrap import BwrapBackend
from ragen_envs.sandbox.pool import PoolBackend
from tests.ragen_envs.sandbox.test_docker import daemon  # noqa: F401 - the private dockerd fixture

pytestmark = pytest.mark.skipif(not BwrapBackend.available(), reason="bubblewrap cannot build a sandbox here")

HOLD = "import os, time\n"  # the programs below keep what they allocate until every process has allocated

TWO_PROCESSES = (
    HOLD
    + """
mb = int(input())
child = os.fork()
data = b'x' * (mb << 20)
time.sleep(0.5)
if child == 0:
    os._exit(0)
_, status = os.waitpid(child, 0)
print('both held', mb, 'MiB')
raise SystemExit(0 if status == 0 else 1)
"""
)

ONE_PROCESS = "data = b'x' * (int(input()) << 20)\nprint(len(data))"

THREADS = """
import threading
event = threading.Event()
threads = [threading.Thread(target=event.wait) for _ in range(int(input()))]
for thread in threads:
    thread.start()
event.set()
for thread in threads:
    thread.join()
print('started', len(threads))
"""

FORKS = """
import os, time
children = []
for _ in range(int(input())):
    pid = os.fork()
    if pid == 0:
        time.sleep(0.3)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
print('forked', len(children))
"""

FILES = """
count, mb = map(int, input().split())
for i in range(count):
    with open(f'f{i}', 'wb') as f:
        f.write(b'x' * (mb << 20))
print('wrote', count * mb, 'MiB')
"""

BURN = "import time\nwhile time.process_time() < 0.2:\n    pass\nprint('burned')"
SLEEP = "import time\ntime.sleep(float(input()))\nprint('slept')"

# (name, program, stdin, limits, expected verdict: None = ok, else the violation)
PROGRAMS = [
    ("one process 600 MiB under 1024", ONE_PROCESS, "600", Limits(memory_mb=1024), None),
    ("one process 300 MiB under 256", ONE_PROCESS, "300", Limits(memory_mb=256), "memory"),
    ("two processes x 80 MiB under 256", TWO_PROCESSES, "80", Limits(memory_mb=256), None),
    ("two processes x 150 MiB under 256", TWO_PROCESSES, "150", Limits(memory_mb=256), "memory"),
    ("7 threads + main under 8", THREADS, "7", Limits(processes=8), None),
    ("8 threads + main under 8", THREADS, "8", Limits(processes=8), "processes"),
    ("3 children + parent under 4", FORKS, "3", Limits(processes=4), None),
    ("4 children + parent under 4", FORKS, "4", Limits(processes=4), "processes"),
    ("2 files x 12 MiB in a 32 MiB folder", FILES, "2 12", Limits(file_size_mb=32), None),
    ("3 files x 12 MiB in a 32 MiB folder", FILES, "3 12", Limits(file_size_mb=32), "file_size"),
    ("one 40 MiB file over 32", FILES, "1 40", Limits(file_size_mb=32), "file_size"),
    # at least 10 s at 2% of a core; at a whole core ~0.2 s alone, a few seconds on a loaded 2-core box
    ("0.2 CPU-s at a whole core", BURN, "", Limits(cpus=1.0, wall_s=6, cpu_s=10), None),
    ("0.2 CPU-s at 2% of a core", BURN, "", Limits(cpus=0.02, wall_s=6, cpu_s=10), "timeout"),
    ("sleep 1 s under 2", SLEEP, "1.0", Limits(wall_s=2), None),
    ("sleep 5 s under 2", SLEEP, "5", Limits(wall_s=2), "timeout"),
]


@pytest.fixture(scope="module")
def backends(request):
    """The backends to compare: bwrap and the pool always, Docker when a private daemon starts here."""
    found = {"bwrap": BwrapBackend(), "pool": PoolBackend(size=1)}
    try:
        url, _ = request.getfixturevalue("daemon")
    except pytest.skip.Exception as skipped:
        found["docker: skipped"] = str(skipped)
    else:
        from ragen_envs.sandbox.docker_backend import DockerBackend

        found["docker"] = DockerBackend(base_url=url)
    yield found
    for backend in found.values():
        if not isinstance(backend, str):
            backend.close()


def verdict(result) -> str | None:
    """What a CodeExec reward depends on: the limit that stopped the program, or None for a clean exit 0."""
    if result.violation is None and result.exit_code != 0:
        return f"exit {result.exit_code}"
    return result.violation


@pytest.mark.parametrize(("name", "code", "stdin", "limits", "expected"), PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_every_backend_gives_the_same_verdict(backends, name, code, stdin, limits, expected):
    if cgroups.detect() is None and name.startswith(("two processes", "0.2 CPU-s at 2%")):
        pytest.skip("whole-sandbox memory and the CPU quota need a writable cgroup; rlimits bound each process only")
    verdicts, details = {}, {}
    for backend_name, backend in backends.items():
        if isinstance(backend, str):
            continue
        result = backend.run(code, stdin, limits)
        verdicts[backend_name] = verdict(result)
        details[backend_name] = (result.stdout[-200:], result.stderr[-300:], result.enforcement)
    assert verdicts == dict.fromkeys(verdicts, expected), details


COUNT_FILES = """
import os
opened = []
try:
    while True:
        opened.append(os.open('/dev/null', os.O_RDONLY))
except OSError:
    pass
print(len(opened))
"""

COUNT_THREADS = """
import threading
event, started = threading.Event(), []
try:
    while True:
        thread = threading.Thread(target=event.wait)
        thread.start()
        started.append(thread)
except RuntimeError:
    pass
event.set()
print(len(started))
"""

# (name, program, limits, what it prints on every backend)
MEASURES = [
    ("descriptors under open_files=32 (0, 1, 2 are taken)", COUNT_FILES, Limits(open_files=32), "29"),
    ("threads beside the main one under processes=8", COUNT_THREADS, Limits(processes=8), "7"),
]


@pytest.mark.parametrize(("name", "code", "limits", "expected"), MEASURES, ids=[m[0] for m in MEASURES])
def test_every_backend_measures_the_same(backends, name, code, limits, expected):
    if cgroups.detect() is None and "threads" in name:
        pytest.skip("without a cgroup the process limit is RLIMIT_NPROC alone")
    printed = {
        backend_name: backend.run(code, "", limits).stdout.strip()
        for backend_name, backend in backends.items()
        if not isinstance(backend, str)
    }
    assert printed == dict.fromkeys(printed, expected)


def test_without_a_cgroup_bubblewrap_and_the_pool_still_agree():
    """Where no cgroup can be made, both fall back to per-process rlimits: the whole-sandbox verdicts change (two
    processes of 150 MiB pass, no CPU quota), but the two backends still give one verdict and one count."""
    bwrap, pool = BwrapBackend(use_cgroups=False), PoolBackend(size=1, use_cgroups=False)
    try:
        cases = [(p[0], p[1], p[2], p[3]) for p in PROGRAMS] + [(m[0], m[1], "", m[2]) for m in MEASURES]
        for name, code, stdin, limits in cases:
            cold, warm = bwrap.run(code, stdin, limits), pool.run(code, stdin, limits)
            assert "no cgroup" in cold.enforcement and "no cgroup" in warm.enforcement
            assert (verdict(cold), cold.stdout) == (verdict(warm), warm.stdout), (name, cold, warm)
    finally:
        pool.close()


def test_docker_leg(backends):
    """Says, in the test report, whether the comparison included Docker."""
    if "docker: skipped" in backends:
        pytest.skip(f"Docker leg not run: {backends['docker: skipped']}")
    assert "docker" in backends
