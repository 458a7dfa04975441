"""Whole-tree memory and process limits through cgroups (v2, or v1 memory + pids controllers).

Per-process rlimits alone let ``processes × memory`` through; a cgroup bounds the sum. We use one only when
this process may create and configure cgroups (usually: root, or a delegated v2 sub-tree); otherwise the
caller falls back to rlimits and says so in :attr:`Result.enforcement`.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from functools import lru_cache
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
_counter = itertools.count()


def _own_path(controller: str | None) -> str:
    """This process's cgroup path for a v1 controller, or the v2 path when ``controller`` is None."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return "/"
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller is None and controllers == "" and line.startswith("0::"):
            return path
        if controller is not None and controller in controllers.split(","):
            return path
    return "/"


def _probe(parent: Path, files: tuple[str, ...]) -> bool:
    """Can we create a child of ``parent`` that has ``files``? (creates and removes one)."""
    probe = parent / f"ragen-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        return all((probe / name).exists() for name in files)
    finally:
        try:
            probe.rmdir()
        except OSError:
            pass


@lru_cache(maxsize=1)
def detect() -> tuple[str, dict[str, Path]] | None:
    """``("v2", {"unified": dir})`` or ``("v1", {"memory": dir, "pids": dir})`` where we may create cgroups."""
    found = _detect()
    if found is not None:
        _sweep_stale(found[1].values())
    return found


def _sweep_stale(parents) -> None:
    """Remove empty sandbox cgroups left by processes that died without cleaning up (e.g. SIGKILLed)."""
    for parent in parents:
        try:
            names = [p.name for p in parent.iterdir() if p.name.startswith("ragen-sandbox-")]
        except OSError:
            continue
        for name in names:
            owner = name.split("-")[2]
            if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                try:
                    (parent / name).rmdir()
                except OSError:
                    pass


def _detect() -> tuple[str, dict[str, Path]] | None:
    if (ROOT / "cgroup.controllers").exists():
        parent = ROOT / _own_path(None).lstrip("/")
        try:
            enabled = (parent / "cgroup.subtree_control").read_text().split()
        except OSError:
            enabled = []
        if {"memory", "pids"} <= set(enabled) and _probe(parent, ("memory.max", "pids.max")):
            return "v2", {"unified": parent}
        return None
    mem, pids = ROOT / "memory", ROOT / "pids"
    if not (mem / "cgroup.procs").exists() or not (pids / "cgroup.procs").exists():
        return None
    mem_parent = mem / _own_path("memory").lstrip("/")
    pids_parent = pids / _own_path("pids").lstrip("/")
    if _probe(mem_parent, ("memory.limit_in_bytes",)) and _probe(pids_parent, ("pids.max",)):
        return "v1", {"memory": mem_parent, "pids": pids_parent}
    return None


class Cgroup:
    """One sandbox's cgroup(s): created with limits, joined by the sandbox's first process, killed, removed."""

    def __init__(self, memory_bytes: int, max_pids: int) -> None:
        found = detect()
        if found is None:
            raise OSError("no writable cgroup hierarchy")
        self.version, parents = found
        name = f"ragen-sandbox-{os.getpid()}-{next(_counter)}"
        self.dirs = [parent / name for parent in parents.values()]
        for d in self.dirs:
            d.mkdir()
        try:
            if self.version == "v2":
                d = self.dirs[0]
                (d / "memory.max").write_text(str(memory_bytes))
                if (d / "memory.swap.max").exists():
                    (d / "memory.swap.max").write_text("0")
                (d / "pids.max").write_text(str(max_pids))
            else:
                mem, pids = self.dirs
                (mem / "memory.limit_in_bytes").write_text(str(memory_bytes))
                if (mem / "memory.memsw.limit_in_bytes").exists():
                    (mem / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
                (pids / "pids.max").write_text(str(max_pids))
        except OSError:
            self.remove()
            raise
        self.procs_files = [str(d / "cgroup.procs") for d in self.dirs]

    @property
    def label(self) -> str:
        """How results name this enforcement, e.g. ``cgroup-v2 memory+pids``."""
        return f"cgroup-{self.version} memory+pids"

    def join(self) -> None:
        """Move the calling process into the cgroup(s). Called in the child between fork and exec."""
        for path in self.procs_files:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

    def memory_event(self) -> str | None:
        """``"oom"`` if the kernel killed a process at the memory limit, ``"limit"`` if usage hit it, else None."""
        d = self.dirs[0]
        try:
            if self.version == "v2":
                events = _keyed(d / "memory.events")
                return "oom" if events.get("oom_kill", 0) else "limit" if events.get("max", 0) else None
            if _keyed(d / "memory.oom_control").get("oom_kill", 0):
                return "oom"
            return "limit" if int((d / "memory.failcnt").read_text()) else None
        except (OSError, ValueError):
            return None

    def counters(self) -> tuple[int, int, int]:
        """Cumulative (OOM kills, memory-limit hits, refused forks): a long-lived cgroup compares them per run."""
        mem, pids = self.dirs[0], self.dirs[-1]
        try:
            if self.version == "v2":
                events = _keyed(mem / "memory.events")
                oom, hits = events.get("oom_kill", 0), events.get("max", 0)
            else:
                oom = _keyed(mem / "memory.oom_control").get("oom_kill", 0)
                hits = int((mem / "memory.failcnt").read_text())
            return oom, hits, _keyed(pids / "pids.events").get("max", 0)
        except (OSError, ValueError):
            return 0, 0, 0

    def pids_event(self) -> bool:
        """True if a fork or thread creation was refused at the process limit."""
        d = self.dirs[-1]
        try:
            return _keyed(d / "pids.events").get("max", 0) > 0
        except (OSError, ValueError):
            return False

    def kill(self) -> None:
        """SIGKILL every process still in the cgroup."""
        d = self.dirs[-1]
        if self.version == "v2" and (d / "cgroup.kill").exists():
            try:
                (d / "cgroup.kill").write_text("1")
                return
            except OSError:
                pass
        for _ in range(100):
            try:
                pids = [int(p) for p in (d / "cgroup.procs").read_text().split()]
            except OSError:
                return
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def remove(self, timeout_s: float = 20.0) -> None:
        """Kill what is left and delete the cgroup(s); never raises (gives up after ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        for d in self.dirs:
            while True:
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    # Killed processes leave the cgroup asynchronously (a pid namespace tears down in the
                    # background); keep killing stragglers until it is empty.
                    if time.monotonic() > deadline:
                        break
                    self.kill()
                    time.sleep(0.002)


def _keyed(path: Path) -> dict[str, int]:
    out = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out
