"""Progress bars: one per agent, each timed from its own first finished work, drawn on a terminal or as lines."""

from __future__ import annotations

import io
import os
import time

import pytest

from harness.progress import Progress


def test_each_agent_rate_is_its_own():
    stream = io.StringIO()
    started = time.perf_counter()
    bar = Progress({"fast": 4, "slow": 2}, stream=stream)
    for _ in range(4):
        bar.advance("fast")
    time.sleep(0.3)  # the slow agent starts later: its clock must not include the fast agent's time
    bar.advance("slow")
    time.sleep(0.2)
    bar.advance("slow")
    ended = time.perf_counter()
    bar.close()
    lines = stream.getvalue().splitlines()
    fast = next(line for line in lines if line.startswith("fast") and "4/4" in line)
    slow = next(line for line in lines if line.startswith("slow") and "2/2" in line)
    slow_rate = float(slow.split(",")[-1].split()[0])
    assert slow_rate > 1.3 * 2 / (ended - started), slow  # timed from its first episode, not from the run start
    assert "episodes/s" in fast


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_bars_are_drawn_on_a_terminal_that_reports_no_size():
    master, slave = os.openpty()
    with os.fdopen(slave, "w") as terminal:
        bar = Progress({"random": 3, "tiny": 1}, stream=terminal)
        bar.advance("random", 3)
        bar.advance("tiny", 1)
        bar.close()
    text = os.read(master, 65536).decode("utf-8", "replace")
    os.close(master)
    assert "random: 100%" in text and "3/3 episodes" in text and "tiny  : 100%" in text
