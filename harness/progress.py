"""Progress on stderr: one ``tqdm`` bar per agent, so each ETA comes from that agent's own rate.

A run's agents differ in speed by orders of magnitude (a scripted agent finishes an episode in microseconds, an
LM in seconds); one bar over all of them averaged those rates and its ETA was wrong by minutes. Each bar's clock
starts at its agent's first finished work (in the parent, agents run one after another), so its rate and ETA
are that agent's own. On a terminal the bars redraw in place; into a file or pipe each agent gets a plain line
every ``FILE_INTERVAL_S`` seconds and one when it finishes (no cursor movements in logs).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TextIO

FILE_INTERVAL_S = 10.0
"""Seconds between an agent's lines when stderr is not a terminal."""

BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}{unit} [{elapsed}<{remaining}, {rate_noinv_fmt}]"


class Progress:
    """``Progress({"random": 32, "tiny": 32})``; ``advance("tiny", n)`` after finished work; ``close()`` at the end.

    ``initial`` (same keys, optional) counts work already done (a resumed run): it is shown, not timed.
    """

    def __init__(
        self,
        totals: Mapping[str, int],
        *,
        initial: Mapping[str, int] | None = None,
        enabled: bool = True,
        stream: TextIO,
        unit: str = "episodes",
    ) -> None:
        self.totals = dict(totals)
        self.done = {name: (initial or {}).get(name, 0) for name in totals}
        self._initial = dict(self.done)
        self.stream, self.unit = stream, f" {unit}"
        self.enabled = enabled and any(totals.values())
        self._tty = bool(getattr(stream, "isatty", lambda: False)())
        self._width = max((len(name) for name in totals), default=0)
        self._started: dict[str, float] = {}
        self._last_line: dict[str, float] = {}
        self._bars: dict = {}
        if self.enabled and self._tty:
            import os

            from tqdm import tqdm

            try:  # a terminal that reports no size (some ptys): tqdm would hide every bar
                size = os.get_terminal_size(stream.fileno())
                sized = size.columns > 0 and size.lines > 0
            except (OSError, ValueError, AttributeError):
                sized = False
            for position, (name, total) in enumerate(totals.items()):
                self._bars[name] = tqdm(
                    total=total, initial=self.done[name], desc=name.ljust(self._width), unit=self.unit,
                    bar_format=BAR_FORMAT, file=stream, position=position, leave=True, dynamic_ncols=sized,
                    ncols=None if sized else 100, nrows=None if sized else len(totals) + 1,
                )  # fmt: skip

    def advance(self, name: str, n: int = 1) -> None:
        """Count ``n`` more units done for agent ``name`` and redraw its bar (or print a line when not a terminal)."""
        self.done[name] += n
        if not self.enabled:
            return
        now = time.perf_counter()
        if name not in self._started:  # the agent's clock starts with its first work, not with the run
            self._started[name] = self._last_line[name] = now - 1e-3
            bar = self._bars.get(name)
            if bar is not None:
                bar.start_t = bar.last_print_t = bar._time() - 1e-3
        bar = self._bars.get(name)
        if bar is not None:
            bar.update(n)
        elif self.done[name] >= self.totals[name] or now - self._last_line.get(name, 0.0) >= FILE_INTERVAL_S:
            self._last_line[name] = now
            self.stream.write(self.line(name, now) + "\n")
            self.stream.flush()

    def line(self, name: str, now: float | None = None) -> str:
        """The agent's bar as one line of text (the file form)."""
        from tqdm import tqdm

        elapsed = (now or time.perf_counter()) - self._started.get(name, now or time.perf_counter())
        fresh = self.done[name] - self._initial[name]
        return tqdm.format_meter(
            self.done[name], self.totals[name], elapsed, ncols=100, prefix=name.ljust(self._width), ascii=True,
            unit=self.unit, bar_format=BAR_FORMAT, rate=fresh / elapsed if elapsed > 0 and fresh else None,
        )  # fmt: skip

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Close the terminal bars."""
        for bar in self._bars.values():
            bar.close()
        self._bars = {}
