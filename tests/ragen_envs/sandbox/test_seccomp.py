"""The syscall filter, tested from inside bubblewrap and pool sandboxes: every blocked call is refused with the
filter's answer (ENOSYS, where the kernel alone would often have said yes or EPERM), and what Python needs works."""

from __future__ import annotations

import errno
import struct

import pytest

from ragen_envs import sandbox
from ragen_envs.sandbox import bwrap, seccomp

pytestmark = pytest.mark.skipif(
    not bwrap.BwrapBackend.available() or not seccomp.available(), reason="bubblewrap or the filter cannot run here"
)

PROBE = """
import ctypes, os, socket, subprocess, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
out = {}
for name, nr in NUMBERS.items():
    ctypes.set_errno(0)
    out[name] = ctypes.get_errno() if libc.syscall(nr, 0, 0, 0, 0, 0, 0) == -1 else 0
ctypes.set_errno(0)
out["clone_newuser"] = ctypes.get_errno() if libc.syscall(CLONE, 0x10000000 | 17, 0, 0, 0, 0) == -1 else 0
out["clone_newnet"] = ctypes.get_errno() if libc.syscall(CLONE, 0x40000000 | 17, 0, 0, 0, 0) == -1 else 0
try:
    socket.socket(40, socket.SOCK_STREAM)
    out["vsock"] = 0
except OSError as exc:
    out["vsock"] = exc.errno
t = threading.Thread(target=lambda: None); t.start(); t.join()
pid = os.fork()
if pid == 0:
    os._exit(7)
works = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 7, subprocess.run(["/usr/bin/true"]).returncode == 0]
socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close(); socket.socket(socket.AF_INET).close()
status = [l.split()[1] for l in open("/proc/self/status") if l.startswith("Seccomp:")]
print(repr((out, works, status)))
"""


@pytest.fixture(scope="module", params=["bwrap", "pool"])
def seen(request):
    column = 0 if seccomp.machine() == "x86_64" else 1
    numbers = {name: seccomp.SYSCALLS[name][column] for name in seccomp.BLOCKED}
    code = f"NUMBERS = {numbers!r}\nCLONE = {seccomp.SYSCALLS['clone'][column]}\n" + PROBE
    res = sandbox.run(code, backend=request.param)
    assert res.ok, res
    assert "seccomp filter" in res.enforcement
    return eval(res.stdout)  # noqa: S307 - our own probe's repr


@pytest.mark.parametrize("name", seccomp.BLOCKED)
def test_each_blocked_call_is_refused_from_inside(seen, name):
    assert seen[0][name] == errno.ENOSYS, f"{name} answered errno {seen[0][name]}"


def test_namespace_clones_and_vsock_are_refused_but_forks_threads_and_sockets_work(seen):
    out, works, status = seen
    assert out["clone_newuser"] == errno.EPERM and out["clone_newnet"] == errno.EPERM
    assert out["vsock"] == errno.EAFNOSUPPORT
    assert works == [True, True] and status == ["2"]  # 2: a filter is installed


def test_filter_programs_for_both_machines():
    x86, arm = seccomp.program("x86_64"), seccomp.program("aarch64")
    assert len(x86) % 8 == 0 and len(arm) % 8 == 0 and x86 != arm
    code, _, _, k = struct.unpack_from("<HBBI", x86, 8)
    assert k == seccomp.AUDIT_ARCH["x86_64"]  # the first check is the architecture
    with pytest.raises(ValueError, match="no syscall filter"):
        seccomp.program("riscv64")
