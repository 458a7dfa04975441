"""Attacks on the bubblewrap sandbox. Each must be contained, give a clear verdict, leave the host unchanged,
and the next run must work (checked by the ``host_unchanged`` fixture after every test)."""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from pathlib import Path

import pytest

from ragen_envs import sandbox
from ragen_envs.sandbox import bwrap, cgroups
from ragen_envs.sandbox.uids import SLOTS, UID_BASE

pytestmark = pytest.mark.skipif(not bwrap.BwrapBackend.available(), reason="bubblewrap cannot run here")

FAST = sandbox.Limits(wall_s=3, cpu_s=2, memory_mb=256, processes=32)


def run(code: str, limits: sandbox.Limits = FAST, **kw) -> sandbox.Result:
    return sandbox.run(code, limits=limits, backend="bwrap", **kw)


def _uid_and_parent(pid: str) -> tuple[int, str] | None:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return None  # gone
    fields = dict(line.split(":", 1) for line in lines if ":" in line)
    return int(fields["Uid"].split()[0]), fields["PPid"].strip()


def _is_sandbox_uid(uid: int) -> bool:
    return UID_BASE <= uid < UID_BASE + SLOTS


def sandbox_uid_processes() -> list[str]:
    """Host processes running as one of the sandbox uids that this test process started or that escaped to init
    (there must be none between runs). Sandboxes of other processes on the machine (the uids are machine-wide and
    other sessions run pools) are left out: their first ancestor outside the sandbox uids is a live process that
    is not this one."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        pid = status.parent.name
        info = _uid_and_parent(pid)
        if info is None or not _is_sandbox_uid(info[0]):
            continue
        owner, seen = info[1], 0
        while (up := _uid_and_parent(owner)) is not None and _is_sandbox_uid(up[0]) and seen < 64:
            owner, seen = up[1], seen + 1
        if owner in (str(os.getpid()), "0", "1") or up is None:
            try:
                found.append(f"{pid}: {status.read_text().splitlines()[0]}")
            except OSError:
                pass
    return found


def leftover_cgroups() -> list[str]:
    found = cgroups.detect()
    if found is None:
        return []
    return [str(p) for parent in found[1].values() for p in parent.glob(f"ragen-sandbox-{os.getpid()}-*")]


@pytest.fixture(autouse=True)
def host_unchanged(tmp_path_factory):
    marker = Path("/tmp") / f"ragen-escape-{os.getpid()}"
    before = set(os.listdir("/tmp"))
    already = set(sandbox_uid_processes())  # e.g. warm-pool sandboxes other tests left running on purpose
    groups = set(leftover_cgroups())
    yield
    deadline = time.monotonic() + 30  # generous: a loaded machine tears pid namespaces down slowly
    while set(sandbox_uid_processes()) - already and time.monotonic() < deadline:
        time.sleep(0.05)  # killed processes are reaped asynchronously
    assert set(sandbox_uid_processes()) - already == set()
    while set(leftover_cgroups()) - groups and time.monotonic() < deadline:
        time.sleep(0.05)
    assert set(leftover_cgroups()) - groups == set()
    assert not marker.exists()
    assert {n for n in set(os.listdir("/tmp")) - before if "escape" in n} == set()
    after = run("print('still works')", sandbox.Limits(wall_s=10))
    assert after.ok and after.stdout == "still works\n", after


def test_fork_bomb():
    res = run("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass")
    assert res.violation in ("processes", "timeout") and res.exit_code != 0


def test_fork_bomb_of_threads():
    res = run("import threading, time\nwhile True:\n    threading.Thread(target=time.sleep, args=(60,)).start()")
    assert res.violation in ("processes", "memory") and res.exit_code != 0, res


def test_memory_bomb_single_allocation():
    res = run("x = bytearray(4 << 30)")
    assert res.violation == "memory" and "MemoryError" in res.stderr


def test_memory_bomb_touching_pages():
    res = run("chunks = []\nwhile True:\n    chunks.append(b'x' * (16 << 20))")
    assert res.violation == "memory"


def test_memory_bomb_many_processes():
    if cgroups.detect() is None:
        pytest.skip("whole-tree memory needs a writable cgroup; rlimits bound each process only")
    code = (
        "import os, time\nfor _ in range(12):\n    if os.fork() == 0:\n        x = b'x' * (120 << 20)\n"
        "        time.sleep(10)\n        os._exit(0)\ntime.sleep(2.5)"
    )
    res = run(code)
    assert res.violation == "memory", res
    assert "cgroup" in res.enforcement


def test_infinite_loop_times_out_at_the_wall_limit():
    res = run("while True:\n    pass", sandbox.Limits(wall_s=1, cpu_s=30))
    assert res.timed_out and res.violation == "timeout" and res.wall_s < 6


def test_cpu_limit_counts_busy_threads():
    code = "import threading\ndef spin():\n    while True:\n        pass\nfor _ in range(4):\n    threading.Thread(target=spin).start()"
    res = run(code, sandbox.Limits(wall_s=20, cpu_s=1))
    assert res.violation == "timeout"  # SIGKILL at 1 CPU-second (or the wall limit on a starved machine)


def test_writes_outside_the_work_folder_fail():
    code = """
import os
denied = []
for path in ['/usr/evil', '/etc/evil', '/evil', '/sandbox/main.py', '/proc/sys/kernel/hostname', '/dev/evil',
             '/usr/lib/python3.11/os.py', '/bin/evil']:
    try:
        with open(path, 'w') as f:
            f.write('x')
    except OSError:
        denied.append(path)
with open('/work/ok.txt', 'w') as f:
    f.write('fine')
with open('/tmp/ragen-escape-HOSTPID', 'w') as f:
    f.write('tmp is private')
print(len(denied))
"""
    res = run(code.replace("HOSTPID", str(os.getpid())))
    assert res.ok and res.stdout.strip() == "8", res


def test_tmpfs_is_size_limited():
    res = run(
        "for i in range(100):\n    open(f'/work/f{i}', 'wb').write(b'x' * (1 << 20))", sandbox.Limits(file_size_mb=4)
    )
    assert res.violation == "file_size" and "No space left" in res.stderr


def test_file_size_limit():
    res = run("open('/work/big', 'wb').write(b'x' * (64 << 20))", sandbox.Limits(file_size_mb=8, memory_mb=512))
    assert res.violation == "file_size"


def test_host_files_and_parent_environment_are_invisible(monkeypatch):
    secret = secrets.token_hex(8)
    monkeypatch.setenv("RAGEN_TEST_SECRET", secret)
    code = """
import os
seen = []
for path in ['/etc/passwd', '/etc/shadow', '/root', '/home', '/work/main', '/proc/1/environ', '/var', '/sys']:
    try:
        seen.append(path + ':' + (str(os.listdir(path)) if os.path.isdir(path) else open(path).read()))
    except OSError as e:
        seen.append(path + ':' + type(e).__name__)
print(seen)
print(dict(os.environ))
"""
    res = run(code)
    assert res.ok, res
    assert secret not in res.stdout and "RAGEN_TEST_SECRET" not in res.stdout
    assert "root:x:0" not in res.stdout and "/work/main:FileNotFoundError" in res.stdout
    assert "'/etc/passwd:FileNotFoundError'" in res.stdout


def test_network_is_unreachable():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(4)
    port = server.getsockname()[1]
    accepted = []

    def accept():
        try:
            accepted.append(server.accept())
        except OSError:
            pass

    t = threading.Thread(target=accept)
    t.start()
    code = f"""
import socket
try:
    socket.create_connection(('127.0.0.1', {port}), timeout=1).sendall(b'leak')
    print('connected')
except OSError as e:
    print('blocked', type(e).__name__)
"""
    res = run(code)
    t.join()
    server.close()
    assert res.ok and res.stdout.startswith("blocked"), res
    assert accepted == []


def test_cannot_signal_the_host():
    code = f"""
import os, signal
out = []
for pid in ({os.getpid()}, os.getppid(), -1):
    try:
        os.kill(pid, signal.SIGKILL)
        out.append('sent')
    except OSError as e:
        out.append(type(e).__name__)
print(out)
"""
    res = run(code)
    assert os.getpid() > 0  # we are alive
    assert "ProcessLookupError" in res.stdout, res


def test_huge_output_is_capped_and_stopped():
    res = run(
        "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)", sandbox.Limits(wall_s=10, output_bytes=4096)
    )
    assert res.violation == "output" and len(res.stdout) == 4096 and res.wall_s < 9


def test_daemonized_child_does_not_outlive_the_run():
    code = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(30)
        open('/work/late', 'w').write('still here')
    os._exit(0)
print('parent done')
"""
    res = run(code, sandbox.Limits(wall_s=10))
    assert res.ok and res.stdout == "parent done\n" and res.wall_s < 9, res  # not held for the daemon
    # the host_unchanged fixture asserts no process of a sandbox uid survives


def test_ctypes_cannot_gain_privileges():
    code = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print('setuid', libc.setuid(0), 'unshare', libc.unshare(0x10000000), 'mount', libc.mount(b'none', b'/usr', b'tmpfs', 0, None))
status = open('/proc/self/status').read()
print([l for l in status.splitlines() if l.startswith(('CapEff', 'NoNewPrivs'))], flush=True)
ctypes.string_at(0)
"""
    res = run(code)
    assert "setuid -1 unshare -1 mount -1" in res.stdout, res
    assert "'CapEff:\\t0000000000000000'" in res.stdout and "'NoNewPrivs:\\t1'" in res.stdout
    assert res.exit_code == -11  # the segfault killed only the sandboxed program


def test_proc_shows_only_the_sandbox():
    code = "import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"
    res = run(code)
    assert res.ok and res.stdout.strip() == "[1]", res


def test_symlink_tricks_stay_inside():
    code = """
import os
os.symlink('/usr/lib', '/work/lib')
os.symlink('/proc/1/root/etc', '/work/hostetc')
os.symlink('../../..', '/work/up')
out = []
for path in ['/work/lib/evil', '/work/up/usr/evil', '/work/hostetc/evil']:
    try:
        open(path, 'w').write('x')
        out.append('wrote ' + path)
    except OSError as e:
        out.append(type(e).__name__)
print(out, os.path.realpath('/work/hostetc'), os.listdir('/work/up'))
"""
    res = run(code)
    assert res.ok and "wrote" not in res.stdout, res
    assert "sandbox" in res.stdout  # '/work/up' resolves to the sandbox's own root


def test_open_file_exhaustion_is_contained():
    res = run("fs = [open('/dev/null') for _ in range(100000)]")
    assert res.exit_code == 1 and "Too many open files" in res.stderr


def test_concurrent_sandboxes_do_not_share_process_budgets():
    from concurrent.futures import ThreadPoolExecutor

    bomb = "import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.01)"
    with ThreadPoolExecutor(2) as pool:
        bomb_future = pool.submit(run, bomb, sandbox.Limits(wall_s=3, processes=16))
        time.sleep(0.5)
        ok = pool.submit(run, "import subprocess\nprint(subprocess.run(['/usr/bin/true']).returncode)").result()
        bomb_future.result()
    assert ok.ok and ok.stdout == "0\n", ok
