"""The bubblewrap backend: the default on Linux.

Each run is a fresh set of namespaces (``--unshare-all``: user, pid, network, ipc, uts, cgroup, mount):

- **files**: the host's ``/usr`` read-only (the system interpreter lives there), no ``/home``, ``/etc``
  (except the dynamic linker cache), ``/root``, ``/var`` or ``/sys``; a private ``/proc`` that shows only the
  sandbox's processes; a minimal read-only ``/dev``; a size-limited tmpfs ``/work`` (also ``/tmp``) as
  the only writable folder; the program and the launcher as read-only files under ``/sandbox``.
- **network**: a new network namespace with only an unconfigured loopback: nothing is reachable.
- **identity**: an unprivileged uid of its own outside the sandbox (when we are root; see ``uids.py``) and
  inside; no capabilities; ``--disable-userns`` so the program cannot build namespaces of its own; a new
  session (no terminal injection); an empty environment except ``PATH``, ``HOME`` and ``LANG``.
- **syscalls**: a seccomp filter (``seccomp.py``) refuses io_uring, bpf, perf events, userfaultfd, keyrings,
  ptrace, kexec and modules, the mount family, namespace creation, POSIX message queues and vsock sockets.
- **limits**: a cgroup per run for memory, pids and a CPU quota of the whole tree when this process may create
  one (``cgroups.py``), plus rlimits per process (CPU, address space, processes, file size, open files) set by
  ``launcher.py`` inside the sandbox.
- **lifetime**: the program is pid 1 of its pid namespace (``--as-pid-1``), so when it exits the kernel kills
  every process it left behind, daemonized ones included: a run ends when the program does. On timeout or
  too much output the host kills bwrap's process group and the cgroup; ``--die-with-parent`` takes the pid
  namespace down with bwrap.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from functools import lru_cache
from pathlib import Path

from ragen_envs.sandbox import cgroups, seccomp
from ragen_envs.sandbox.base import (
    Backend,
    Limits,
    Result,
    as_bytes,
    classify,
    kill_process_group,
    launcher_args,
    supervise,
)
from ragen_envs.sandbox.uids import UidSlot

LAUNCHER_SOURCE = (Path(__file__).parent / "launcher.py").read_bytes()
SANDBOX_PYTHON = "/usr/bin/python3"
BWRAP_PROCESSES = 2
"""bubblewrap's own processes in the sandbox's cgroup (the monitor outside and its child), not the program's."""


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, 0)  # not CLOEXEC: passed to bwrap through pass_fds
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _root_links() -> list[str]:
    """Mirror the host's top-level /bin, /lib* and /sbin (symlinks into /usr on merged-/usr systems)."""
    args: list[str] = []
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{name}"]
    return args


class BwrapBackend(Backend):
    """Run code under bubblewrap with the limits described in the module docstring."""

    name = "bwrap"

    def __init__(self, python: str = SANDBOX_PYTHON, use_cgroups: bool = True) -> None:
        if not python.startswith("/usr/"):
            raise ValueError(f"python must be an interpreter under /usr (the only host folder mounted), got {python!r}")
        self.python = python
        self.use_cgroups = use_cgroups
        self.is_root = os.geteuid() == 0

    @classmethod
    def available(cls) -> bool:
        """Backend protocol's available: whether bubblewrap works here (probed once)."""
        return _probe()

    def command(
        self, limits: Limits, uid: int, launcher_fd: int, program_fd: int, seccomp_fd: int | None = None
    ) -> list[str]:
        """The bwrap command line for one run (the program, launcher and syscall filter arrive through memfds)."""
        disk = str(limits.file_size_mb << 20)
        seccomp_args = [] if seccomp_fd is None else ["--seccomp", str(seccomp_fd)]
        return [
            "bwrap",
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            "--as-pid-1",
            "--new-session",
            "--cap-drop", "ALL",
            "--hostname", "sandbox",
            "--uid", str(uid),
            "--gid", str(uid),
            "--clearenv",
            "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
            "--setenv", "HOME", "/work",
            "--setenv", "LANG", "C.UTF-8",
            "--ro-bind", "/usr", "/usr",
            *_root_links(),
            "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
            "--proc", "/proc",
            "--dev", "/dev",
            "--size", disk, "--tmpfs", "/dev/shm",
            "--size", disk, "--tmpfs", "/work",
            "--symlink", "/work", "/tmp",
            "--ro-bind-data", str(launcher_fd), "/sandbox/launcher.py",
            "--ro-bind-data", str(program_fd), "/sandbox/main.py",
            "--remount-ro", "/dev",
            "--remount-ro", "/",
            "--chdir", "/work",
            *seccomp_args,
            self.python, "-I", "-S", "/sandbox/launcher.py", *launcher_args(limits), "/sandbox/main.py",
        ]  # fmt: skip

    def run(self, code: str, stdin: str | bytes = "", limits: Limits | None = None) -> Result:
        """Backend protocol's run: execute ``code`` as a Python program fed ``stdin``, under ``limits`` (default
        :class:`Limits`), in a fresh bubblewrap sandbox; returns the :class:`Result`."""
        limits = limits or Limits()
        slot = UidSlot() if self.is_root else None
        uid = slot.uid if slot else os.getuid()
        group = None
        notes = []
        if self.use_cgroups and cgroups.detect() is not None:
            try:
                group = cgroups.Cgroup(limits.memory_mb << 20, limits.processes + BWRAP_PROCESSES, limits.cpus)
                notes.append(group.label)
            except OSError:
                group = None
        if group is None:
            notes.append("no cgroup: memory and processes bounded per process by rlimits only")
        notes.append("rlimits")
        notes.append(f"uid {uid}" if slot else "host uid (not root: no uid switch)")
        fds = [_memfd("launcher", LAUNCHER_SOURCE), _memfd("program", code.encode("utf-8", "surrogatepass"))]
        filter_fd = seccomp.memfd()
        if filter_fd is not None:
            fds.append(filter_fd)
            notes.append("seccomp filter")
        stdin_fd = _memfd("stdin", as_bytes(stdin)) if stdin else subprocess.DEVNULL
        try:
            proc = subprocess.Popen(
                self.command(limits, uid, *fds[:2], filter_fd),
                stdin=stdin_fd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=fds,
                env={},
                close_fds=True,
                start_new_session=True,
                preexec_fn=_enter(group, uid if slot else None),
            )
        except BaseException:
            for fd in fds:
                os.close(fd)
            if isinstance(stdin_fd, int) and stdin_fd >= 0:
                os.close(stdin_fd)
            if group is not None:
                group.remove()
            if slot:
                slot.release()
            raise
        started = time.monotonic()
        for fd in fds:
            os.close(fd)
        if isinstance(stdin_fd, int) and stdin_fd >= 0:
            os.close(stdin_fd)

        def kill() -> None:
            kill_process_group(proc)
            if group is not None:
                group.kill()

        try:
            captured = supervise(proc, limits, kill, started)
        finally:
            kill()
            memory_event = group.memory_event() if group else None
            pids_event = group.pids_event() if group else False
            if group is not None:
                group.remove()
            if slot:
                slot.release()
        exit_code = captured.returncode
        if exit_code > 128:  # bwrap reports a signal death of the program as 128 + N
            exit_code = -(exit_code - 128)
        violation = classify(
            captured,
            exit_code=exit_code,
            memory_event=memory_event,
            pids_event=pids_event,
            cpu_limit_s=max(1, round(limits.cpu_s)),
        )
        return Result.from_captured(
            captured, violation, backend=self.name, enforcement=", ".join(notes), exit_code=exit_code
        )


def _enter(group: cgroups.Cgroup | None, uid: int | None):
    """The function run in the child between fork and exec: join the cgroup, then drop to ``uid``."""

    def enter() -> None:
        if group is not None:
            group.join()
        if uid is not None:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)

    return enter


@lru_cache(maxsize=1)
def _probe() -> bool:
    """bwrap is installed and can build a sandbox here (user namespaces allowed)."""
    if shutil.which("bwrap") is None or not os.path.exists(SANDBOX_PYTHON):
        return False
    try:
        done = subprocess.run(
            ["bwrap", "--unshare-all", "--unshare-user", "--ro-bind", "/usr", "/usr", *_root_links(), "/usr/bin/true"],
            capture_output=True,
            timeout=10,
            env={},
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0
