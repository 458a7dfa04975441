"""What every sandbox backend shares: the limits, the result, and the loop that runs a sandboxed process.

A backend turns ``(code, stdin, limits)`` into a :class:`Result`. The host side of every backend is the same
loop (:func:`supervise`): feed stdin, read stdout and stderr up to the output cap, kill the whole sandbox at
the wall-clock deadline or when the cap is exceeded, and classify what stopped the program.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ragen_envs.core import check_range

VIOLATIONS = ("timeout", "memory", "processes", "output", "file_size")
"""The limits a run can break, as ``Result.violation`` names them."""
START_MARK = "\x1eragen-sandbox: program started\x1e"
"""What the launcher writes to stderr just before the program runs. The host strips it and starts the wall clock
there, so ``wall_s`` is the program's own time on every backend, whatever the backend's set-up took."""
SETUP_S = 30.0
"""The longest a sandbox may take to start the program (namespaces, container, interpreter) before the run is
reported as timed out."""


class SandboxUnavailable(RuntimeError):
    """No backend that can contain untrusted code is available here; the message says what to install."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed run. The defaults suit one test-suite run of a small program.

    Every field means the same on every backend (cold bubblewrap, the warm pool, Docker): the same program under
    the same limits gets the same verdict on each (``tests/ragen_envs/sandbox/test_limits_parity.py``). "The sandbox" is
    every process the program starts, itself included. Whole-sandbox limits (memory, processes, CPU quota) need a
    cgroup: Docker always has one, bubblewrap and the pool when this process may create one (root, or a
    delegated cgroup v2 tree); without it they fall back to per-process rlimits, the same fallback on both, and
    :attr:`Result.enforcement` says so.
    """

    wall_s: float = 5.0
    """Wall-clock seconds from the program's start (the backend's set-up not counted) until the whole sandbox
    (every process in it) is killed."""
    cpu_s: float = 5.0
    """CPU seconds per process (RLIMIT_CPU); threads of one process share it."""
    memory_mb: int = 512
    """Memory of the whole sandbox: all its processes together, files it writes to its tmpfs included (the cgroup's
    charge); also the address space of each process (RLIMIT_AS), which a single process reaches first."""
    processes: int = 64
    """Processes and threads in the sandbox at once, the program's own included (cgroup pids.max when available,
    and RLIMIT_NPROC)."""
    cpus: float = 1.0
    """Cores' worth of CPU time the whole sandbox may use at once (a cgroup CPU quota: 0.5 is half of one core);
    a busy program runs slower, it is not stopped (``cpu_s`` and ``wall_s`` stop it)."""
    file_size_mb: int = 16
    """Largest file a process may write (RLIMIT_FSIZE); also the size of each writable tmpfs folder (``/work``,
    ``/dev/shm``)."""
    output_bytes: int = 64 * 1024
    """Bytes of stdout and of stderr kept; a program that writes more is killed (violation ``"output"``)."""
    open_files: int = 256
    """File descriptors per process (RLIMIT_NOFILE)."""

    def __post_init__(self) -> None:
        check_range("wall_s", self.wall_s, 0.01, 3600)
        check_range("cpu_s", self.cpu_s, 0.01, 3600)
        check_range("memory_mb", self.memory_mb, 32, 1 << 20, integer=True)
        check_range("processes", self.processes, 1, 1 << 16, integer=True)
        check_range("cpus", self.cpus, 0.01, 1024)
        check_range("file_size_mb", self.file_size_mb, 1, 1 << 16, integer=True)
        check_range("output_bytes", self.output_bytes, 1, 1 << 30, integer=True)
        check_range("open_files", self.open_files, 16, 1 << 16, integer=True)


@dataclass(frozen=True)
class Result:
    """The outcome of one sandboxed run."""

    stdout: str
    stderr: str
    exit_code: int
    """The program's exit status; negative ``-N`` when it was killed by signal N (as in ``subprocess``)."""
    timed_out: bool
    violation: str | None
    """``None`` or the limit that stopped the program: one of ``VIOLATIONS``."""
    wall_s: float
    backend: str
    enforcement: str = ""
    """How the limits were enforced in this run (e.g. ``"cgroup-v1 memory+pids, rlimits, uid 61003"``)."""
    unsafe: bool = False
    """True when the run was *not* contained (the opt-in plain-subprocess backend)."""
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        """The program exited 0 within its limits."""
        return self.exit_code == 0 and self.violation is None

    @classmethod
    def from_captured(
        cls,
        captured: Captured,
        violation: str | None,
        *,
        backend: str,
        enforcement: str,
        exit_code: int | None = None,
        wall_s: float | None = None,
        unsafe: bool = False,
    ) -> Result:
        """The result of a supervised run; ``exit_code`` and ``wall_s`` default to what ``captured`` measured."""
        return cls(
            stdout=decode(captured.stdout),
            stderr=decode(captured.stderr),
            exit_code=captured.returncode if exit_code is None else exit_code,
            timed_out=captured.timed_out or violation == "timeout",
            violation=violation,
            wall_s=captured.wall_s if wall_s is None else wall_s,
            backend=backend,
            enforcement=enforcement,
            unsafe=unsafe,
        )


class Backend:
    """One way of running untrusted code. Subclasses implement :meth:`run` and :meth:`available`."""

    name = "abstract"
    unsafe = False

    @classmethod
    def available(cls) -> bool:
        """Whether this backend can run on this machine (cheap; may probe once)."""
        raise NotImplementedError

    def run(self, code: str, stdin: str | bytes = "", limits: Limits | None = None) -> Result:
        """Run ``code`` as a Python program fed ``stdin`` under ``limits``; returns the :class:`Result` (never raises
        for the program's own failures)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release anything the backend holds (pools, clients)."""


@dataclass
class Captured:
    """What a supervised process left: its output (bytes), exit code, whether it timed out or wrote too much, and
    wall/CPU seconds."""

    stdout: bytes
    stderr: bytes
    returncode: int
    timed_out: bool
    output_exceeded: bool
    wall_s: float
    cpu_s: float = 0.0


def launcher_args(limits: Limits, processes: int | None = None) -> list[str]:
    """The launcher's arguments before the program's path (``launcher.py``): the per-process limits and the start
    mark; ``processes`` overrides the RLIMIT_NPROC value."""
    return [
        str(max(1, round(limits.cpu_s))), str(limits.memory_mb << 20),
        str(limits.processes if processes is None else processes), str(limits.file_size_mb << 20),
        str(limits.open_files), START_MARK,
    ]  # fmt: skip


class WallClock:
    """A run's deadline: ``SETUP_S`` after launch until the launcher's start mark arrives on stderr, then ``wall_s``
    after the mark. Every backend's reader passes the program's stderr through :meth:`stderr`, which removes the
    mark. Output that arrives before any mark (a launcher that failed early) starts the clock too."""

    MARK = START_MARK.encode()

    def __init__(self, wall_s: float, launched: float) -> None:
        self.wall_s = wall_s
        self.deadline = launched + SETUP_S
        self.started: float | None = None
        self._head = b""

    def stderr(self, chunk: bytes) -> bytes:
        """``chunk`` of the program's stderr without the start mark; starts the clock when the mark (or anything
        else) has arrived."""
        if self.started is not None:
            return chunk
        self._head += chunk
        if len(self._head) < len(self.MARK) and self.MARK.startswith(self._head):
            return b""  # part of the mark so far
        self.started = time.monotonic()
        self.deadline = self.started + self.wall_s
        head, self._head = self._head, b""
        return head[len(self.MARK) :] if head.startswith(self.MARK) else head

    def leftover(self) -> bytes:
        """Bytes held back as a possible start of the mark when the stream ended."""
        head, self._head = self._head, b""
        return head


class CappedOutput:
    """A run's stdout and stderr as they arrive, each kept up to ``cap`` bytes (:attr:`exceeded` once a stream
    wrote more): the one reader every backend feeds. Stderr passes through the run's :class:`WallClock`, which
    removes the start mark and starts the clock."""

    def __init__(self, cap: int, clock: WallClock) -> None:
        self.cap = cap
        self.clock = clock
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.exceeded = False

    def add(self, chunk: bytes, *, stderr: bool) -> None:
        """Keep what fits of ``chunk`` of one stream; a chunk that does not fit sets :attr:`exceeded`."""
        if stderr:
            chunk = self.clock.stderr(chunk)
        buf = self.stderr if stderr else self.stdout
        room = self.cap - len(buf)
        buf += chunk[:room]
        if len(chunk) > room:
            self.exceeded = True

    def stderr_closed(self) -> None:
        """The stderr stream ended: keep the bytes held back as a possible start of the mark."""
        self.stderr += self.clock.leftover()

    def captured(self, returncode: int, timed_out: bool, started: float, cpu_s: float = 0.0) -> Captured:
        """What the run left, once it has exited: the kept output, its exit code and its wall time since
        ``started``."""
        return Captured(
            stdout=bytes(self.stdout),
            stderr=bytes(self.stderr),
            returncode=returncode,
            timed_out=timed_out,
            output_exceeded=self.exceeded,
            wall_s=time.monotonic() - started,
            cpu_s=cpu_s,
        )


def supervise(proc: subprocess.Popen, limits: Limits, kill: Callable[[], None], started: float) -> Captured:
    """Read ``proc``'s stdout/stderr (pipes) until it exits, killing it at the deadline or on too much output.

    ``kill`` must take down every process of the sandbox, not just ``proc``. ``started`` is the launch; the wall
    clock runs from the program's start (:class:`WallClock`). The exit status and the CPU time of the whole
    reaped tree come from ``wait4``.
    """
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    sel = selectors.DefaultSelector()
    for fd in (out_fd, err_fd):
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    clock = WallClock(limits.wall_s, started)
    output = CappedOutput(limits.output_bytes, clock)
    timed_out = False
    try:
        while sel.get_map():
            remaining = clock.deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            for key, _ in sel.select(timeout=remaining):
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    if key.fd == err_fd:
                        output.stderr_closed()
                    sel.unregister(key.fd)
                    continue
                output.add(chunk, stderr=key.fd == err_fd)
            if output.exceeded:
                break
        if timed_out or output.exceeded:
            kill()
        status, cpu_s = _wait(proc, clock.deadline)
        if status is None:
            timed_out = True
            kill()
            status, cpu_s = _wait(proc, None)
    finally:
        sel.close()
        proc.stdout.close()
        proc.stderr.close()
    return output.captured(status, timed_out, started, cpu_s)


def _wait(proc: subprocess.Popen, deadline: float | None) -> tuple[int | None, float]:
    """``wait4`` on ``proc`` until ``deadline`` (None: forever); (None, 0) if it is still running then."""
    while True:
        pid, status, usage = os.wait4(proc.pid, 0 if deadline is None else os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage.ru_utime + usage.ru_stime
        if time.monotonic() >= deadline:
            return None, 0.0
        time.sleep(0.001)


def kill_process_group(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc``'s process group (it was started in its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def as_bytes(data: str | bytes) -> bytes:
    """``data`` as bytes (str encoded as UTF-8, lone surrogates kept)."""
    return data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")


def decode(data: bytes) -> str:
    """Program output as text (invalid UTF-8 replaced)."""
    return data.decode("utf-8", errors="replace")


def classify(
    captured: Captured,
    *,
    exit_code: int,
    memory_event: str | bool | None = None,
    pids_event: bool = False,
    cpu_limit_s: float = float("inf"),
) -> str | None:
    """Name the limit that stopped the program, from what the kernel and the supervisor saw.

    ``memory_event``: ``"oom"`` (a process was OOM-killed: always a violation), ``"limit"`` or True (usage
    reached the limit: a violation if the program failed). Kernel-side evidence (cgroup events, the output
    cap, the deadline, signals) comes first; the tail of
    stderr is only a hint used when there is no cgroup (a program can only make its own result look worse
    by faking it).
    """
    tail = captured.stderr[-2048:]
    memory_hint = b"MemoryError" in tail or b"Cannot allocate memory" in tail
    process_hint = b"Resource temporarily unavailable" in tail or b"can't start new thread" in tail
    if captured.output_exceeded:
        return "output"
    if memory_event == "oom" or (memory_event and exit_code != 0):
        return "memory"
    if pids_event and (exit_code != 0 or captured.timed_out):
        return "processes"
    if (
        captured.timed_out
        or exit_code == -signal.SIGXCPU
        or (
            exit_code == -signal.SIGKILL and captured.cpu_s >= 0.9 * cpu_limit_s  # tick-granular accounting
        )
    ):
        # A program that hit a limit and then hung (e.g. waiting on its threads) is reported by the limit.
        return "processes" if process_hint else "memory" if memory_hint else "timeout"
    if exit_code == 0:
        return None
    if exit_code == -signal.SIGXFSZ:
        return "file_size"
    if memory_hint:
        return "memory"
    if b"File too large" in tail or b"No space left on device" in tail:
        return "file_size"
    if process_hint:
        return "processes"
    return None
