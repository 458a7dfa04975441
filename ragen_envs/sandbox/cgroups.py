"""Whole-tree memory, process and CPU limits through cgroups (v2, or the v1 memory, pids and cpu controllers).

Per-process rlimits alone let ``processes × memory`` through; a cgroup bounds the sum, and its CPU quota bounds
how many cores' worth of time the whole tree takes at once. We use one only when this process may create and
configure cgroups (usually: root, or a delegated v2 sub-tree); otherwise the caller falls back to rlimits and
says so in :attr:`Result.enforcement`. The CPU controller is used when it is there (``cpu.max``, or v1
``cpu.cfs_quota_us``); its absence is named in the label.
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
CPU_PERIOD_US = 100_000


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
    """``("v2", {"unified": dir})`` or ``("v1", {"memory": dir, "pids": dir[, "cpu": dir]})`` where we may create
    cgroups (v2's CPU control is in the same folder when ``cpu`` is among its controllers)."""
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
    mem, pids, cpu = ROOT / "memory", ROOT / "pids", ROOT / "cpu"
    if not (mem / "cgroup.procs").exists() or not (pids / "cgroup.procs").exists():
        return None
    mem_parent = mem / _own_path("memory").lstrip("/")
    pids_parent = pids / _own_path("pids").lstrip("/")
    if not (_probe(mem_parent, ("memory.limit_in_bytes",)) and _probe(pids_parent, ("pids.max",))):
        return None
    found = {"memory": mem_parent, "pids": pids_parent}
    cpu_parent = cpu / _own_path("cpu").lstrip("/")
    if (cpu / "cgroup.procs").exists() and _probe(cpu_parent, ("cpu.cfs_quota_us",)):
        found["cpu"] = cpu_parent
    return "v1", found


class Cgroup:
    """One sandbox's cgroup(s): created with limits, joined by the sandbox's first process, killed, removed."""

    def __init__(self, memory_bytes: int, max_pids: int, cpus: float) -> None:
        found = detect()
        if found is None:
            raise OSError("no writable cgroup hierarchy")
        self.version, parents = found
        name = f"ragen-sandbox-{os.getpid()}-{next(_counter)}"
        self.dirs = [parent / name for parent in parents.values()]
        named = dict(zip(parents, self.dirs, strict=True))
        self.memory_dir = named.get("memory", self.dirs[0])
        self.pids_dir = named.get("pids", self.dirs[0])
        self.cpu_dir = named.get("cpu")
        for d in self.dirs:
            d.mkdir()
        if self.version == "v2" and (self.dirs[0] / "cpu.max").exists():
            self.cpu_dir = self.dirs[0]
        try:
            self.set_limits(memory_bytes, max_pids, cpus)
        except OSError:
            self.remove()
            raise
        self.procs_files = [str(d / "cgroup.procs") for d in self.dirs]

    def set_limits(self, memory_bytes: int, max_pids: int, cpus: float) -> None:
        """Set (or change, for a long-lived sandbox) the memory, process and CPU limits of the whole tree."""
        mem = self.memory_dir
        if self.version == "v2":
            (mem / "memory.max").write_text(str(memory_bytes))
            if (mem / "memory.swap.max").exists():
                (mem / "memory.swap.max").write_text("0")
        else:
            limit, memsw = mem / "memory.limit_in_bytes", mem / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                # memory+swap may never be below memory alone: raise it first when growing, last when shrinking
                try:
                    memsw.write_text(str(memory_bytes))
                    limit.write_text(str(memory_bytes))
                except OSError:
                    limit.write_text(str(memory_bytes))
                    memsw.write_text(str(memory_bytes))
            else:
                limit.write_text(str(memory_bytes))
        (self.pids_dir / "pids.max").write_text(str(max_pids))
        if self.cpu_dir is not None:
            quota = max(1000, round(cpus * CPU_PERIOD_US))  # the kernel's smallest quota is 1 ms per period
            if self.version == "v2":
                (self.cpu_dir / "cpu.max").write_text(f"{quota} {CPU_PERIOD_US}")
            else:
                (self.cpu_dir / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
                (self.cpu_dir / "cpu.cfs_quota_us").write_text(str(quota))

    @property
    def label(self) -> str:
        """How results name this enforcement, e.g. ``cgroup-v2 memory+pids+cpu``."""
        return f"cgroup-{self.version} memory+pids" + ("+cpu" if self.cpu_dir is not None else " (no CPU quota)")

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
        d = self.memory_dir
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
        mem, pids = self.memory_dir, self.pids_dir
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
        d = self.pids_dir
        try:
            return _keyed(d / "pids.events").get("max", 0) > 0
        except (OSError, ValueError):
            return False

    def kill(self) -> None:
        """SIGKILL every process still in the cgroup."""
        d = self.pids_dir
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
