"""How many CPU threads torch may use, and how many worker processes ``harness run`` starts: the one default each.

Default: one thread. On an idle machine more intra-op threads make teacher forcing (the MI family) up to ~1.8x
faster for the tiny model, but on a machine whose cores are busy with other jobs a second OpenMP thread spins at
barriers waiting for a core it does not get: the MI family of 64 Bandit episodes took 413 s with two threads
against 35 s with one on a shared 2-core box under load (``benchmarks/bench_threads.py``; figures in
docs/benchmarks.md). One thread never loses by more than the idle-machine speed-up; more threads can lose 10x, and whether
the cores are idle is something only the user knows (a load average lags and other jobs start later). So more threads
are opt-in: ``--threads N``, or ``--threads auto`` for the cores idle now (a snapshot of the load average).
The count does not change which tokens are sampled beyond float rounding of the scores.

Worker processes are another matter: ``harness run --workers`` defaults to ``auto``, the cores idle at start (at most
one per chunk of the run; one on a box whose load average already fills its cores). A worker runs one thread and
works for seconds between results, so when other jobs take the cores it waits its turn instead of spinning at a
barrier: two workers forced onto a busy 2-core box took as long as one (with Linux's autogroup scheduling the
cores are shared between sessions, so the two split their session's share), not 10x longer (figures in
docs/benchmarks.md, "harness run baseline"). On idle cores they divide the work. Their cost is memory: each worker loads its own agents (about
1 GB each for the baseline's tiny LM and torch, against 1.2 GB for one process). ``--workers N`` sets the count;
the episodes and the summary are the same for any count.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
from collections.abc import Iterator

DEFAULT_THREADS = 1
"""Torch intra-op threads when nothing says otherwise (see the module docstring)."""

AUTO = "auto"

DEFAULT_WORKERS = AUTO
"""``harness run``'s worker processes when nothing says otherwise (see the module docstring)."""


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask, not the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def idle_cores(loadavg_path: str = "/proc/loadavg") -> int:
    """Usable cores minus the 1-minute load average (runnable tasks), at least 1; all usable cores if unknown."""
    cores = usable_cores()
    try:
        with open(loadavg_path, encoding="ascii") as handle:
            load = float(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return cores
    return max(1, min(cores, math.floor(cores - load + 0.5)))


def _count(name: str, value: int | str) -> int:
    """``value`` as a count >= 1, or a ValueError naming ``name`` and the allowed values."""
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            raise ValueError(f"{name} must be a number >= 1 or 'auto', got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a number >= 1 or 'auto', got {value!r}")
    return value


def _is_auto(value: object) -> bool:
    return isinstance(value, str) and value.strip().lower() == AUTO


def resolve_threads(value: int | str | None) -> int:
    """The thread count for ``value``: None → :data:`DEFAULT_THREADS`, ``"auto"`` → :func:`idle_cores`, or N >= 1."""
    if value is None:
        return DEFAULT_THREADS
    return idle_cores() if _is_auto(value) else _count("threads", value)


def resolve_workers(value: int | str, work_units: int) -> int:
    """The worker process count for ``value``: ``"auto"`` → :func:`idle_cores`, at most ``work_units`` (the run's
    chunks or MI batches, whichever are more) and at least 1; or N >= 1 as given."""
    if _is_auto(value):
        return max(1, min(idle_cores(), work_units))
    return _count("workers", value)


def _argument(flag: str, text: str) -> int | str:
    if _is_auto(text):
        return AUTO
    try:
        return _count(flag, text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def threads_argument(text: str) -> int | str:
    """argparse ``type=`` for ``--threads``: N >= 1 or ``auto`` (kept as text so config.json records the choice)."""
    return _argument("--threads", text)


def workers_argument(text: str) -> int | str:
    """argparse ``type=`` for ``--workers``: N >= 1 or ``auto`` (kept as text so config.json records the choice)."""
    return _argument("--workers", text)


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run the block with ``count`` torch intra-op threads, then restore the previous count."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
