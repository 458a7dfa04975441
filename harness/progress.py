"""A dependency-free progress bar on stderr: redrawn in place on a terminal, a line per 10% otherwise."""

from __future__ import annotations

import time
from typing import TextIO


class Progress:
    """``Progress(total)``; ``advance(n)`` after each batch of finished episodes; ``close()`` at the end."""

    def __init__(self, total: int, *, initial: int = 0, enabled: bool = True, stream: TextIO, label: str = "episodes"):
        self.total, self.done, self.label, self.stream = total, initial, label, stream
        self.enabled = enabled and total > 0
        self._start = time.perf_counter()
        self._initial = initial
        self._last_draw = 0.0
        self._tty = bool(getattr(stream, "isatty", lambda: False)())
        self._next_decile = (10 * initial // max(total, 1) + 1) if total else 11

    def advance(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.perf_counter()
        if self._tty:
            if now - self._last_draw >= 0.1 or self.done >= self.total:
                self._last_draw = now
                self.stream.write("\r" + self.line(now))
                self.stream.flush()
        elif 10 * self.done >= self._next_decile * self.total:
            self._next_decile = 10 * self.done // self.total + 1
            self.stream.write(self.line(now) + "\n")
            self.stream.flush()

    def line(self, now: float | None = None) -> str:
        elapsed = (now or time.perf_counter()) - self._start
        fresh = self.done - self._initial
        rate = fresh / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else float("nan")
        width = 30
        filled = int(width * self.done / self.total) if self.total else width
        eta = f"eta {left:5.0f}s" if left == left else "eta     ?"
        return (
            f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {self.label} "
            f"{rate:7.1f}/s {eta} {elapsed:6.1f}s"
        )

    def close(self) -> None:
        if self.enabled and self._tty:
            self.stream.write("\n")
            self.stream.flush()
