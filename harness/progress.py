"""Progress on stderr: one ``tqdm`` bar per agent, so each ETA comes from that agent's own rate.

A run's agents differ in speed by orders of magnitude (a scripted agent finishes an episode in microseconds, an
LM in seconds); one bar over all of them averaged those rates and its ETA was wrong by minutes. Each bar's clock
starts when its agent starts working (:meth:`Progress.start`; else at its first finished work), so its rate and
ETA are that agent's own.

Work is counted in units of similar cost, not in episodes: a rollout counts turns (one generation each), its
total the turn budget (``max_turns`` per episode), and an episode that ends early gives its unused budget back
(``advance(..., budget=)``), so the total converges on the turns really played. Counted in episodes, a lockstep
batch's one-turn episodes raced ahead of its twenty-turn ones and the fast envs ahead of the slow ones: the bar
said 20 s left at 91% and took 2:30 more. On a terminal the bars redraw in place; into a file or pipe each agent
gets a plain line every ``FILE_INTERVAL_S`` seconds and one when it finishes (no cursor movements in logs).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TextIO

FILE_INTERVAL_S = 10.0
"""Seconds between an agent's lines when stderr is not a terminal."""

BAR_FORMAT = (
    "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}{unit} [{elapsed}<{remaining}, {rate_noinv_fmt}{postfix}]"
)


class Progress:
    """``Progress({"random": 320, "tiny": 320}, unit="turns")``; ``start("tiny")`` when its work begins;
    ``advance("tiny", n, budget=b)`` after finished work; ``close()`` at the end.

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
        self._notes: dict[str, str] = {}
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

    def start(self, name: str) -> None:
        """Start agent ``name``'s clock now (its work began), unless it is running already."""
        if not self.enabled or name in self._started:
            return
        now = time.perf_counter()
        self._started[name] = self._last_line[name] = now - 1e-3
        bar = self._bars.get(name)
        if bar is not None:
            bar.start_t = bar.last_print_t = bar._time() - 1e-3

    def advance(self, name: str, n: int = 1, budget: int | None = None, note: str | None = None) -> None:
        """Count ``n`` more units done for agent ``name`` and redraw its bar (or print a line when not a terminal).

        ``budget``: the units this piece of work was planned at (an episode's turn budget); the total shrinks by
        what it did not use. ``note``: a short text shown after the rate (e.g. episodes done).
        """
        self.done[name] += n
        if budget is not None and budget > n:
            self.totals[name] -= budget - n
        if note is not None:
            self._notes[name] = note
        if not self.enabled:
            return
        self.start(name)  # the agent's clock starts with its first work, not with the run
        now = time.perf_counter()
        bar = self._bars.get(name)
        if bar is not None:
            bar.total = self.totals[name]
            if note is not None:
                bar.set_postfix_str(note, refresh=False)
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
            postfix=self._notes.get(name),
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
