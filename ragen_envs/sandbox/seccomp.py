"""The syscall filter of bubblewrap and pool sandboxes: a classic-BPF seccomp program, built here in Python.

bubblewrap installs it (``--seccomp FD``) right before it executes the sandboxed program, after building the
namespaces it needs, so everything inside (the program, its children, the pool's zygote) runs under it and
cannot remove it. It allows everything except a list of calls that enlarge the kernel surface and that no
stdlib program needs:

- whole calls, answered ``ENOSYS`` (as a kernel without them would; callers such as io_uring users fall
  back): io_uring, bpf, perf_event_open, userfaultfd, the key-management calls (keyctl, add_key,
  request_key: keyrings outlive a process and are shared by a uid), ptrace and its relatives
  (process_vm_readv/writev, kcmp, pidfd_getfd), kexec and module loading, the mount family (mount, umount2,
  pivot_root and the new mount API), namespace changes (unshare, setns), POSIX message queues (mq_*: they
  live in the IPC namespace and no file lists them), swapon/swapoff, reboot, acct, quotactl,
  name_to_handle_at/open_by_handle_at, lookup_dcookie, personality; ``clone3`` too, whose flags a classic
  filter cannot read (glibc then falls back to ``clone``);
- ``clone`` with any ``CLONE_NEW*`` flag (a new namespace): ``EPERM``; plain forks and threads pass;
- ``socket(AF_VSOCK, ...)``: ``EAFNOSUPPORT`` (vsock reaches the hypervisor, outside any network namespace);
- any syscall of another ABI (i386 through ``int 0x80`` on x86_64, x32): the process is killed or the call
  answered ``ENOSYS``, since the numbers above would not mean the same calls there.

Syscall numbers are the kernel's for x86_64 (``asm/unistd_64.h``) and aarch64 (``asm-generic/unistd.h``,
which arm64 uses); on another machine the filter is not built and sandboxes run without it (``available``).
"""

from __future__ import annotations

import errno
import os
import platform
import struct

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_SYSCALL_BIT = 0x40000000

BLOCKED = (
    "io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open", "userfaultfd",
    "keyctl", "add_key", "request_key", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr", "unshare", "setns", "clone3",
    "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
    "swapon", "swapoff", "reboot", "acct", "quotactl", "name_to_handle_at", "open_by_handle_at",
    "lookup_dcookie", "personality",
)  # fmt: skip
"""Calls refused with ENOSYS."""

SYSCALLS = {
    # name: (x86_64, aarch64)
    "socket": (41, 198), "clone": (56, 220), "clone3": (435, 435), "unshare": (272, 97), "setns": (308, 268),
    "mount": (165, 40), "umount2": (166, 39), "pivot_root": (155, 41), "move_mount": (429, 429),
    "open_tree": (428, 428), "fsopen": (430, 430), "fsconfig": (431, 431), "fsmount": (432, 432),
    "fspick": (433, 433), "mount_setattr": (442, 442), "io_uring_setup": (425, 425), "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427), "bpf": (321, 280), "perf_event_open": (298, 241), "userfaultfd": (323, 282),
    "keyctl": (250, 219), "add_key": (248, 217), "request_key": (249, 218), "ptrace": (101, 117),
    "process_vm_readv": (310, 270), "process_vm_writev": (311, 271), "kcmp": (312, 272), "pidfd_getfd": (438, 438),
    "kexec_load": (246, 104), "kexec_file_load": (320, 294), "init_module": (175, 105), "finit_module": (313, 273),
    "delete_module": (176, 106), "mq_open": (240, 180), "mq_unlink": (241, 181), "mq_timedsend": (242, 182),
    "mq_timedreceive": (243, 183), "mq_notify": (244, 184), "mq_getsetattr": (245, 185), "swapon": (167, 224),
    "swapoff": (168, 225), "reboot": (169, 142), "acct": (163, 89), "quotactl": (179, 60),
    "name_to_handle_at": (303, 264), "open_by_handle_at": (304, 265), "lookup_dcookie": (212, 18),
    "personality": (135, 92),
}  # fmt: skip

AF_VSOCK = 40
CLONE_NEW_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x80
"""CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME."""

# classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h)
_LD_ABS_W, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _KILL_PROCESS, _ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_NR, _ARCH, _ARG0_LOW = 0, 4, 16  # offsets in struct seccomp_data (little-endian: an argument's low word first)


def machine() -> str | None:
    """The filter's name for this machine's syscall ABI, or None where there is no filter for it."""
    name = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine().lower())
    return name if name in AUDIT_ARCH else None


def available() -> bool:
    """Whether there is a syscall filter for this machine's ABI."""
    return machine() is not None


def program(arch: str | None = None) -> bytes:
    """The filter as an array of ``struct sock_filter`` (what ``bwrap --seccomp`` reads)."""
    arch = arch or machine()
    if arch not in AUDIT_ARCH:
        raise ValueError(f"no syscall filter for {arch!r}; known: {sorted(AUDIT_ARCH)}")
    column = 0 if arch == "x86_64" else 1

    def nr(name: str) -> int:
        return SYSCALLS[name][column]

    code: list[tuple[int, int, int, int]] = [
        (_LD_ABS_W, 0, 0, _ARCH),
        (_JEQ, 1, 0, AUDIT_ARCH[arch]),
        (_RET, 0, 0, _KILL_PROCESS),  # another ABI: its numbers mean other calls
        (_LD_ABS_W, 0, 0, _NR),
    ]
    if arch == "x86_64":
        code += [(_JGE, 0, 1, X32_SYSCALL_BIT), (_RET, 0, 0, _ERRNO | errno.ENOSYS)]
    for name in BLOCKED:
        code += [(_JEQ, 0, 1, nr(name)), (_RET, 0, 0, _ERRNO | errno.ENOSYS)]
    code += [
        (_JEQ, 0, 4, nr("clone")),
        (_LD_ABS_W, 0, 0, _ARG0_LOW),
        (_JSET, 0, 1, CLONE_NEW_FLAGS),
        (_RET, 0, 0, _ERRNO | errno.EPERM),
        (_RET, 0, 0, _ALLOW),
        (_JEQ, 0, 4, nr("socket")),
        (_LD_ABS_W, 0, 0, _ARG0_LOW),
        (_JEQ, 0, 1, AF_VSOCK),
        (_RET, 0, 0, _ERRNO | errno.EAFNOSUPPORT),
        (_RET, 0, 0, _ALLOW),
        (_RET, 0, 0, _ALLOW),
    ]
    return b"".join(struct.pack("<HBBI", *insn) for insn in code)


_PROGRAM: bytes | None = None


def memfd() -> int | None:
    """A file descriptor (not close-on-exec) holding the filter for ``bwrap --seccomp``, or None without one."""
    global _PROGRAM
    if not available():
        return None
    if _PROGRAM is None:
        _PROGRAM = program()
    fd = os.memfd_create("seccomp", 0)
    os.write(fd, _PROGRAM)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
