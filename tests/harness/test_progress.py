"""Progress bars: one per agent, each timed from its own first finished work, drawn on a terminal or as lines."""

from __future__ import annotations

import io
import os
import select
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
    chunks = []  # a pseudo-terminal hands its output over in pieces: read until nothing more is waiting
    while select.select([master], [], [], 0.5)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the other end is closed and drained
            break
        if not chunk:
            break
        chunks.append(chunk)
    text = b"".join(chunks).decode("utf-8", "replace")
    os.close(master)
    assert "random: 100%" in text and "3/3 episodes" in text and "tiny  : 100%" in text


def test_an_episode_that_ends_early_gives_back_its_unused_turn_budget():
    stream = io.StringIO()
    bar = Progress({"tiny": 3 * 20}, stream=stream, unit="turns")  # three episodes of up to 20 turns
    bar.advance("tiny", 1, budget=20, note="1/3 episodes")  # solved in one turn
    assert bar.totals["tiny"] == 41 and bar.done["tiny"] == 1
    bar.advance("tiny", 20, budget=20, note="2/3 episodes")
    bar.advance("tiny", 5, budget=20, note="3/3 episodes")
    bar.close()
    last = stream.getvalue().splitlines()[-1]
    assert "26/26 turns" in last and "3/3 episodes" in last


def test_a_run_names_its_folder_first_and_counts_turns_and_mi_pairs(tmp_path, capsys):
    import json

    from harness.cli import main

    args = ["run", "random", "--env", "ragen/Sokoban-v0,ragen/Bandit-v0", "--episodes", "3", "--samples", "2"]
    assert main([*args, "--out", str(tmp_path), "--run-id", "r", "--no-plots"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith(f"harness: writing {tmp_path / 'r'}/")
    records = [json.loads(line) for line in (tmp_path / "r" / "episodes.jsonl").read_text().splitlines()]
    turns = sum(len(r["turns"]) for r in records)
    rollout = [line for line in lines if " turns " in line]
    assert f"{turns}/{turns} turns" in rollout[-1] and "12/12 episodes" in rollout[-1]
    rows = json.loads((tmp_path / "r" / "summary.json").read_text())["rows"]
    pairs = sum(r["metrics"][f"{s}/mi_estimate"]["n"] for r in rows for s in ("first_turn", "trajectory"))
    scoring = [line for line in lines if "MI pairs" in line]
    assert f"{pairs}/{pairs} MI pairs" in scoring[-1] and "envs" not in scoring[-1]
