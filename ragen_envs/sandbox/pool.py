"""A warm pool of bubblewrap sandboxes: pay the sandbox start once, then fork per execution inside it.

Each pool member is a long-lived sandbox built exactly like a cold ``bwrap`` run (same namespaces, mounts,
uid, cgroup, capabilities) whose pid 1 is ``zygote.py``, a Python server with the interpreter already
started. A run sends the program, stdin and the write ends of two pipes to the zygote over a socket
(``SCM_RIGHTS``); the zygote forks, the child applies the run's rlimits and executes the program through
the launcher in a fresh work folder. Afterwards the zygote kills every other process in the sandbox and
resets the member without the program's cooperation (``zygote.py``: files, System V IPC, proven empty),
so nothing carries over to the next run; a member it cannot prove clean is replaced, and the run that
dirtied it keeps its own result. A run that times out, floods its output or breaks the protocol gets its
whole sandbox killed and replaced; members are also recycled every ``recycle_after`` runs.

Every :class:`Limits` field means what it means on a cold run: before each run the member's cgroup is set to the
run's memory, process count and CPU quota (the zygote, one process more than a cold sandbox holds, is
allowed for), the child's rlimits are the run's, and a run whose ``file_size_mb`` (the size of the tmpfs
folders, fixed when a sandbox is built) differs from the member's gets a member built to its size. Runs are
serialized per member; ``size`` members run in parallel.
"""

from __future__ import annotations

import atexit
import marshal
import os
import queue
import selectors
import socket
import subprocess
import threading
import time
from pathlib import Path

from ragen_envs.sandbox import cgroups, seccomp
from ragen_envs.sandbox.base import (
    Backend,
    CappedOutput,
    Captured,
    Limits,
    Result,
    WallClock,
    as_bytes,
    classify,
    launcher_args,
)
from ragen_envs.sandbox.bwrap import BWRAP_PROCESSES, LAUNCHER_SOURCE, BwrapBackend, _enter, _memfd
from ragen_envs.sandbox.uids import UidSlot

ZYGOTE_SOURCE = (Path(__file__).parent / "zygote.py").read_bytes()
ZYGOTE_PROCESSES = 1
"""The zygote, pid 1 of a member: in the member's cgroup and of the program's uid, so the run's process limits
count it on top of the program's."""


def _cgroup_limits(limits: Limits) -> tuple[int, int, float]:
    """The member cgroup's (memory bytes, pids, cpus) for a run under ``limits``."""
    return limits.memory_mb << 20, limits.processes + BWRAP_PROCESSES + ZYGOTE_PROCESSES, limits.cpus


class _Member:
    """One warm sandbox: its bwrap process, control socket, cgroup and uid."""

    def __init__(self, base: BwrapBackend, limits: Limits) -> None:
        self.slot = UidSlot() if base.is_root else None
        uid = self.slot.uid if self.slot else os.getuid()
        self.group = None
        if base.use_cgroups and cgroups.detect() is not None:
            try:
                self.group = cgroups.Cgroup(*_cgroup_limits(limits))
            except OSError:
                self.group = None
        self.enforcement = ", ".join(
            [
                self.group.label
                if self.group
                else "no cgroup: memory and processes bounded per process by rlimits only",
                "rlimits",
                f"uid {uid}" if self.slot else "host uid (not root: no uid switch)",
                "warm pool",
                *(["seccomp filter"] if seccomp.available() else []),
            ]
        )
        host_end, sandbox_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        fds = [_memfd("launcher", LAUNCHER_SOURCE), _memfd("zygote", ZYGOTE_SOURCE)]
        filter_fd = seccomp.memfd()
        if filter_fd is not None:
            fds.append(filter_fd)
        cmd = base.command(limits, uid, fds[0], fds[1], filter_fd)
        # Same sandbox as a cold run, but pid 1 is the zygote (fed the launcher's path) instead of the launcher.
        at = cmd.index(base.python)
        cmd[at:] = [base.python, "-I", "-S", "/sandbox/main.py", "/sandbox/launcher.py", str(sandbox_end.fileno())]
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=[*fds, sandbox_end.fileno()],
            env={},
            start_new_session=True,
            preexec_fn=_enter(self.group, uid if self.slot else None),
        )
        for fd in fds:
            os.close(fd)
        sandbox_end.close()
        self.chan = host_end
        self.file_size_mb = limits.file_size_mb
        self.runs = 0
        self.broken = False

    def fit(self, limits: Limits) -> bool:
        """Set the member's cgroup to ``limits``; False when this member cannot run under them (its tmpfs has
        another size, or the kernel refused the new limits)."""
        if limits.file_size_mb != self.file_size_mb:
            return False
        if self.group is not None:
            try:
                self.group.set_limits(*_cgroup_limits(limits))
            except OSError:
                return False
        return True

    def stop(self) -> None:
        """Kill every process of the member (its cgroup stays until :meth:`kill`, for the event counters)."""
        try:
            os.killpg(self.proc.pid, 9)
        except (ProcessLookupError, PermissionError):
            pass
        if self.group is not None:
            self.group.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def kill(self) -> None:
        self.stop()
        self.chan.close()
        if self.group is not None:
            self.group.remove()
        if self.slot:
            self.slot.release()


class PoolBackend(Backend):
    """Warm bubblewrap sandboxes; see the module docstring."""

    name = "pool"

    def __init__(
        self, size: int = 2, limits: Limits | None = None, recycle_after: int = 200, use_cgroups: bool = True
    ) -> None:
        self.base = BwrapBackend(use_cgroups=use_cgroups)
        self.limits = limits or Limits()
        self.recycle_after = recycle_after
        self._idle: queue.Queue[_Member] = queue.Queue()
        self._members: set[_Member] = set()
        self._lock = threading.Lock()
        self._closed = False
        for _ in range(size):
            self._spawn()
        atexit.register(self.close)

    @classmethod
    def available(cls) -> bool:
        """Backend protocol's available: wherever the bubblewrap backend is."""
        return BwrapBackend.available()

    def _spawn(self) -> None:
        member = _Member(self.base, self.limits)
        with self._lock:
            self._members.add(member)
        self._idle.put(member)

    def _rebuild(self, member: _Member, limits: Limits) -> _Member:
        """Replace ``member`` by a new one built for ``limits`` (used at once, not queued)."""
        with self._lock:
            self._members.discard(member)
        member.kill()
        fresh = _Member(self.base, limits)
        with self._lock:
            self._members.add(fresh)
        return fresh

    def _retire(self, member: _Member) -> None:
        with self._lock:
            self._members.discard(member)
        member.kill()
        if not self._closed:
            self._spawn()

    def run(self, code: str, stdin: str | bytes = "", limits: Limits | None = None) -> Result:
        """Backend protocol's run: execute ``code`` as a Python program fed ``stdin``, under ``limits`` (default
        :class:`Limits`), in an idle warm sandbox of the pool; returns the :class:`Result`. Raises ``RuntimeError`` once
        closed."""
        if self._closed:
            raise RuntimeError("the sandbox pool is closed")
        limits = limits or Limits()
        member = self._idle.get()
        if not member.fit(limits):
            try:
                member = self._rebuild(member, limits)
            except BaseException:
                if not self._closed:
                    self._spawn()  # the pool keeps its size
                raise
        before = member.group.counters() if member.group else (0, 0, 0)
        started = time.monotonic()
        try:
            captured, healthy = self._execute(member, code, stdin, limits, started)
        except BaseException:
            self._retire(member)
            raise
        after = member.group.counters() if member.group else (0, 0, 0)
        oom, hits, refused = (a - b for a, b in zip(after, before, strict=True))
        violation = classify(
            captured,
            exit_code=captured.returncode,
            memory_event="oom" if oom else "limit" if hits else None,
            pids_event=refused > 0,
            cpu_limit_s=max(1, round(limits.cpu_s)),
        )
        member.runs += 1
        if healthy and member.runs < self.recycle_after:
            self._idle.put(member)
        else:
            self._retire(member)
        return Result.from_captured(captured, violation, backend=self.name, enforcement=member.enforcement)

    def _execute(self, member: _Member, code: str, stdin, limits: Limits, started: float) -> tuple[Captured, bool]:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        program = _memfd("program", code.encode("utf-8", "surrogatepass"))
        stdin_fd = _memfd("stdin", as_bytes(stdin))
        spec = tuple(launcher_args(limits, processes=limits.processes + ZYGOTE_PROCESSES))
        try:
            socket.send_fds(member.chan, [marshal.dumps(spec)], [program, stdin_fd, out_w, err_w])
        finally:
            for fd in (program, stdin_fd, out_w, err_w):
                os.close(fd)
        sel = selectors.DefaultSelector()
        for fd in (out_r, err_r):
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        member.chan.setblocking(False)
        sel.register(member.chan, selectors.EVENT_READ)
        clock = WallClock(limits.wall_s, started)
        output = CappedOutput(limits.output_bytes, clock)
        status = None
        timed_out = broken = False
        try:
            while status is None or len(sel.get_map()) > 1:
                remaining = clock.deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                for key, _ in sel.select(timeout=remaining):
                    if key.fileobj is member.chan:
                        msg = member.chan.recv(4096)
                        sel.unregister(member.chan)
                        try:
                            status = marshal.loads(msg)
                        except (EOFError, ValueError, TypeError):
                            broken = True
                        if broken or not msg:
                            broken = True
                            status = (-9, 0.0)
                        continue
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        if key.fd == err_r:
                            output.stderr_closed()
                        sel.unregister(key.fd)
                        continue
                    output.add(chunk, stderr=key.fd == err_r)
                if output.exceeded or broken:
                    break
        finally:
            sel.close()
            member.chan.setblocking(True)
            os.close(out_r)
            os.close(err_r)
        if status is not None and not (isinstance(status, tuple) and len(status) in (2, 3)):
            broken, status = True, (-9, 0.0)
        exit_code, cpu_s, clean = (*status, True)[:3] if status is not None else (-9, 0.0, False)
        # A member whose reset could not prove it clean is replaced; the run's own result stands either way.
        healthy = not (timed_out or output.exceeded or broken) and status is not None and clean is True
        if not healthy:
            member.stop()  # the run is still going, the zygote is gone or the member is dirty: it is discarded
        return output.captured(int(exit_code), timed_out, started, float(cpu_s)), healthy

    def close(self) -> None:
        """Backend protocol's close: kill every pool member (further runs raise)."""
        self._closed = True
        with self._lock:
            members = list(self._members)
            self._members.clear()
        for member in members:
            member.kill()
