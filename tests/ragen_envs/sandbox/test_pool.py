"""The warm pool: same containment as a cold sandbox, nothing carried over between runs, broken members replaced."""

from __future__ import annotations

import pytest

from ragen_envs import sandbox
from ragen_envs.sandbox import bwrap

pytestmark = pytest.mark.skipif(not bwrap.BwrapBackend.available(), reason="bubblewrap cannot run here")


@pytest.fixture(scope="module")
def pool():
    from ragen_envs.sandbox.pool import PoolBackend

    p = PoolBackend(size=1)
    yield p
    p.close()


def test_runs_like_a_cold_sandbox(pool):
    res = pool.run("print(input()[::-1])", "abc")
    assert res.ok and res.stdout == "cba\n" and res.backend == "pool" and "warm pool" in res.enforcement
    res = pool.run("import sys\nsys.exit(4)")
    assert res.exit_code == 4
    res = pool.run("raise KeyError('k')")
    assert res.exit_code == 1 and "KeyError" in res.stderr


def test_nothing_carries_over_between_runs(pool):
    first = """
import os, time
open('/work/leftover', 'w').write('x')
open('/dev/shm/leftover', 'w').write('x')
os.mkdir('/work/run999999')
if os.fork() == 0:
    os.setsid()
    time.sleep(60)
print('planted')
"""
    assert pool.run(first).stdout == "planted\n"
    second = "import os\nprint(sorted(os.listdir('/work')), os.listdir('/dev/shm'), sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"
    res = pool.run(second)
    assert res.ok, res
    assert "leftover" not in res.stdout and "run999999" not in res.stdout
    pids = res.stdout.strip().rsplit("[", 1)[1]
    assert len(pids.split(",")) == 2, res.stdout  # the zygote and this program: no daemon left


def test_the_zygote_cannot_be_killed_or_read(pool):
    code = """
import os, signal
out = []
for path in ['/proc/1/mem', '/proc/1/fd/0', '/proc/1/environ']:
    try:
        open(path, 'rb').read(10)
        out.append('read')
    except OSError as e:
        out.append(type(e).__name__)
os.kill(1, signal.SIGKILL)
print(out)
"""
    res = pool.run(code)
    assert res.ok and "read" not in res.stdout.replace("'", " ").split(), res
    assert pool.run("print('alive')").stdout == "alive\n"


@pytest.mark.parametrize(
    "code, limits, violation",
    [
        ("while True:\n    pass", sandbox.Limits(wall_s=1), "timeout"),
        ("while True:\n    print('x' * 1000)", sandbox.Limits(output_bytes=5000), "output"),
        ("x = bytearray(4 << 30)", sandbox.Limits(), "memory"),
        ("import os\nwhile True:\n    os.fork()", sandbox.Limits(processes=16), "processes"),
    ],
)
def test_limits_and_recovery(pool, code, limits, violation):
    res = pool.run(code, limits=limits)
    assert res.violation == violation, res
    assert pool.run("print('next')", limits=sandbox.Limits(wall_s=10)).stdout == "next\n"


def test_codeexec_on_the_pool():
    from ragen_envs.code.env import CodeExecEnv

    env = CodeExecEnv(backend="pool")
    env.reset(seed=9)
    *_, info = env.step(env.oracle_response())
    assert info["success"] and info["sandbox_backend"] == "pool"
