"""Attacks on the warm pool's promise (a run starts as clean as a cold sandbox) and on the syscall filter.

Each hostile program runs on a one-member pool, exits 0 and must be reported as such; the next run on the
same pool must find nothing of it (files, space, System V IPC, processes) and do honest work, and in
CodeExec a hostile episode must not change the verdict of honest episodes after it.
"""

from __future__ import annotations

import pytest

from ragen_envs.sandbox import Limits, bwrap, seccomp
from ragen_envs.sandbox.pool import PoolBackend

pytestmark = pytest.mark.skipif(not bwrap.BwrapBackend.available(), reason="bubblewrap cannot run here")

HOSTILE = {
    "mode 000 folder in /work": """
import os
os.makedirs('/work/locked/inner'); open('/work/locked/inner/f', 'w').write('x' * 1000)
os.chmod('/work/locked/inner', 0); os.chmod('/work/locked', 0)
""",
    "mode 0500 folder in /dev/shm": """
import os
os.makedirs('/dev/shm/ro/sub'); open('/dev/shm/ro/sub/f', 'w').write('x')
os.chmod('/dev/shm/ro/sub', 0o500); os.chmod('/dev/shm/ro', 0o500)
""",
    "folders nested 5000 deep": """
import os
os.chdir('/work')
for i in range(5000):
    os.mkdir('d'); os.chdir('d')
open('leaf', 'w').write('x'); os.chmod('.', 0)
""",
    "pre-created run folders": """
import os
for i in range(1, 400):
    p = f'/work/run{i}'
    if not os.path.exists(p):
        os.mkdir(p, 0) if i % 2 else open(p, 'w').close()
os.mkfifo('/work/main.py'); os.symlink('/nonexistent', '/dev/shm/x')
""",
    "locked pre-created run folders": """
import os
for i in range(1, 400):
    p = f'/work/run{i}'
    if not os.path.exists(p):
        os.makedirs(p + '/x'); os.chmod(p, 0)
""",
    "read-only /work and /dev/shm": """
import os
os.chmod('/work', 0o500); os.chmod('/dev/shm', 0)
""",
    "full tmpfs": """
for d in ('/work', '/dev/shm'):
    try:
        with open(d + '/fill', 'wb') as f:
            while True:
                f.write(b'x' * 65536)
    except OSError:
        pass
""",
    "full tmpfs behind a locked folder": """
import os
for d in ('/work/locked', '/dev/shm/locked'):
    os.makedirs(d, exist_ok=True)
    try:
        with open(d + '/fill', 'wb') as f:
            while True:
                f.write(b'x' * 65536)
    except OSError:
        pass
    os.chmod(d, 0)
""",
    "private SysV segments piling up": """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
for _ in range(4):
    ident = libc.shmget(0, 30 << 20, 0o1000 | 0o600)  # IPC_PRIVATE: a new segment every time
    ctypes.memset(libc.shmat(ident, None, 0), 0x41, 30 << 20)
""",
    "many small files": """
import os
os.mkdir('/work/many')
for i in range(20000):
    open(f'/work/many/{i}', 'w').close()
""",
    "SysV shared memory charged to the member": """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
for key in range(0x1000, 0x1006):
    ident = libc.shmget(key, 20 << 20, 0o1000 | 0o777)  # IPC_CREAT
    addr = libc.shmat(ident, None, 0)
    ctypes.memset(addr, 0x41, 20 << 20)  # touched: charged to the cgroup until removed
    libc.shmctl(ident, 1, None)  # IPC_SET with no buffer: fails, harmless
""",
    "SysV message queue and semaphores": """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
q = libc.msgget(0x2222, 0o1000 | 0o000)  # mode 000: only the owner may remove it
msg = ctypes.create_string_buffer(b'\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00secret', 64)
libc.msgsnd(q, msg, 6, 0)
libc.semget(0x3333, 8, 0o1000 | 0o600)
""",
    "keyrings": """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
for ring in (-4, -3, -2):  # user, user-session, session keyrings
    libc.syscall(NR_ADD_KEY, b"user", b"leak", b"secret", 6, ring)
""",
    "POSIX message queue": """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall(NR_MQ_OPEN, b"leak", 0o100 | 2, 0o777, None)  # O_CREAT | O_RDWR
""",
    "daemonized leftover": """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(0.3); open('/work/late', 'w').write('x'); time.sleep(60)
    os._exit(0)
""",
    "fork bomb leftovers": """
import os, time
for _ in range(30):
    if os.fork() == 0:
        time.sleep(60); os._exit(0)
""",
}

PROBE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
here = os.getcwd()
left = [p for p in os.listdir('/work') if os.path.join('/work', p) != here] + os.listdir('/dev/shm')
ipc = [line for k in ('shm', 'msg', 'sem') for line in open(f'/proc/sysvipc/{k}').read().splitlines()[1:]]
known = [libc.shmget(0x1000, 0, 0), libc.msgget(0x2222, 0), libc.semget(0x3333, 0, 0)]
keys = [libc.syscall(NR_KEYCTL, 10, ring, b"user", b"leak", 0) for ring in (-4, -3, -2)]  # KEYCTL_SEARCH
queue = libc.syscall(NR_MQ_OPEN, b"leak", 2, 0, None)
procs = [p for p in os.listdir('/proc') if p.isdigit() and p not in ('1', str(os.getpid()))]
vfs = os.statvfs('/dev/shm')
open('/work/data', 'wb').write(b'y' * (8 << 20))  # honest work: space and memory
block = bytearray(150 << 20)
print(left, ipc, known + keys + [queue], procs, vfs.f_blocks == vfs.f_bfree, oct(os.stat('/work').st_mode))
"""
CLEAN = "[] [] [-1, -1, -1, -1, -1, -1, -1] [] True 0o40755"
_COLUMN = 0 if seccomp.machine() == "x86_64" else 1
NUMBERS = "".join(
    f"NR_{name.upper()} = {seccomp.SYSCALLS[name][_COLUMN]}\n" for name in ("add_key", "keyctl", "mq_open")
)


def _run(pool, code, **limits):
    return pool.run(NUMBERS + code, limits=Limits(memory_mb=256, wall_s=20, cpu_s=20, **limits))


@pytest.fixture(scope="module")
def pool():
    p = PoolBackend(size=1, limits=Limits(memory_mb=256))
    yield p
    p.close()


@pytest.mark.parametrize("attack", sorted(HOSTILE))
def test_nothing_survives_from_one_run_to_the_next(pool, attack):
    hostile = _run(pool, HOSTILE[attack])
    assert hostile.exit_code == 0 and hostile.violation is None, hostile  # exit 0 is reported as exit 0
    for _ in range(2):  # the run after, and the one after that
        probe = _run(pool, PROBE)
        assert probe.ok, probe
        assert probe.stdout.strip() == CLEAN, probe.stdout


def test_a_member_that_cannot_be_proven_clean_is_replaced_and_the_run_keeps_its_result(monkeypatch):
    from ragen_envs.sandbox import pool as pool_module

    # A reset budget of 50 entries stands in for any state the reset cannot undo.
    source = pool_module.ZYGOTE_SOURCE.replace(b"WIPE_BUDGET = 200_000", b"WIPE_BUDGET = 50")
    assert source != pool_module.ZYGOTE_SOURCE
    monkeypatch.setattr(pool_module, "ZYGOTE_SOURCE", source)
    small = PoolBackend(size=1, limits=Limits(memory_mb=256))
    try:
        first = set(small._members)
        hostile = _run(small, "for i in range(500):\n    open(f'/work/{i}', 'w').close()\nprint('done')")
        assert hostile.ok and hostile.stdout == "done\n", hostile
        assert set(small._members).isdisjoint(first), "the dirty member must have been replaced"
        probe = _run(small, PROBE)
        assert probe.ok and probe.stdout.strip() == CLEAN, probe
    finally:
        small.close()


VERDICT_ATTACKS = (
    "locked pre-created run folders",  # on the earlier reset: every honest answer after it scored 0
    "full tmpfs behind a locked folder",
    "private SysV segments piling up",
    "pre-created run folders",
    "folders nested 5000 deep",
    "read-only /work and /dev/shm",
)


@pytest.mark.parametrize("attack", VERDICT_ATTACKS)
def test_a_hostile_episode_never_changes_other_episodes_verdicts(attack):
    from ragen_envs.code.env import CodeExecEnv

    env = CodeExecEnv(families=["moving_average"], backend="pool")
    env._backend = one_member = PoolBackend(size=1, limits=Limits(memory_mb=256))  # every run on the same member
    body = "\n        ".join(HOSTILE[attack].strip().splitlines())
    # the poison runs once per run (not once per test, which would only get the run itself killed)
    code = f"def NAME(nums):\n    if not globals().get('done'):\n        globals()['done'] = 1\n        {body}\n    return []"
    scores, hostile = [], []
    for seed in range(5):
        env.reset(seed=seed)
        info = env.step(
            f"<think>t</think><answer>```python\n{code.replace('NAME', env.problem.name, 1)}\n```</answer>"
        )[4]
        hostile.append("tests_total" in info)  # the poisoned answer was run
        env.reset(seed=seed)
        scores.append(env.step(env.oracle_response())[1])
    one_member.close()
    assert all(hostile), "the poisoned answers must have run"
    assert scores == [1.0] * 5
