"""How many CPU threads torch may use: the one default every LM agent and learner path reads.

Default: one thread. On an idle machine more intra-op threads make teacher forcing (the MI family) up to ~1.8x
faster for the tiny model, but on a machine whose cores are busy with other jobs a second OpenMP thread spins at
barriers waiting for a core it does not get: the MI family of 64 Bandit episodes took 413 s with two threads
against 35 s with one on a shared 2-core box under load (``benchmarks/bench_threads.py``; figures in
docs/benchmarks.md). One thread never loses by more than the idle-machine speed-up; more threads can lose 10x, and whether
the cores are idle is something only the user knows (a load average lags and other jobs start later). So more threads
are opt-in: ``--threads N``, or ``--threads auto`` for the cores idle now (a snapshot of the load average).
The count does not change which tokens are sampled beyond float rounding of the scores.
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


def resolve_threads(value: int | str | None) -> int:
    """The thread count for ``value``: None → :data:`DEFAULT_THREADS`, ``"auto"`` → :func:`idle_cores`, or N >= 1."""
    if value is None:
        return DEFAULT_THREADS
    if isinstance(value, str):
        if value.strip().lower() == AUTO:
            return idle_cores()
        try:
            value = int(value)
        except ValueError:
            raise ValueError(f"threads must be a number >= 1 or 'auto', got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"threads must be a number >= 1 or 'auto', got {value!r}")
    return value


def threads_argument(text: str) -> int | str:
    """argparse ``type=`` for ``--threads``: N >= 1 or ``auto`` (kept as text so config.json records the choice)."""
    if text.strip().lower() == AUTO:
        return AUTO
    try:
        return resolve_threads(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).replace("threads", "--threads", 1)) from None


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
