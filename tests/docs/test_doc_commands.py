"""Every ``bash`` and ``python`` block of the README and the docs runs as written (tests/docs/doc_blocks.py says
how a block marks what cannot run here, and why).

Each page runs in a scratch folder holding links to the virtual environment (``.venv``) and the folders the
commands read (``baselines``, ``examples``, ``scripts``, ``benchmarks``, ``tests``), so what they write
(``runs/``, ``site/``, ``leaderboard/submissions/``) stays there; bare ``harness``, ``leaderboard`` and ``python``
are the venv's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from doc_blocks import RUNNABLE, blocks, fill_placeholders, marker_problems

from tests.helpers.paths import ROOT

PAGES = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").rglob("*.md")])
LINKED = ("baselines", "examples", "scripts", "benchmarks", "tests")
COMMAND_TIMEOUT = 900  # the longest command, `harness run baseline`, takes a few minutes on two CPU cores


def _pages_with_commands() -> list[Path]:
    return [p for p in PAGES if any(b.language in RUNNABLE and not b.skipped() for b in blocks(p))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_marker_is_understood_and_matches(page):
    problems = [problem for block in blocks(page) for problem in marker_problems(block)]
    assert not problems, problems


def _workspace(tmp_path: Path) -> dict[str, str]:
    venv = Path(sys.prefix)
    (tmp_path / ".venv").symlink_to(venv)
    for name in LINKED:
        (tmp_path / name).symlink_to(ROOT / name)
    path = f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _run_folders(workspace: Path, known: list[Path]) -> list[Path]:
    made = sorted(p for p in (workspace / "runs").glob("*") if (p / "config.json").exists() and p not in known)
    return known + made


@pytest.mark.slow
@pytest.mark.parametrize("page", _pages_with_commands(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_page_commands_run_as_written(page, tmp_path):
    env = _workspace(tmp_path)
    runs: list[Path] = []
    for block in blocks(page):
        if block.language not in RUNNABLE or block.skipped():
            continue
        if block.language == "python":
            argvs = [(block.text, [sys.executable, "-c", block.text])]
        else:
            argvs = [(line, None) for line, reason in block.commands() if reason is None]
        for shown, argv in argvs:
            if argv is None:
                shown = fill_placeholders(block.to_run(shown), runs)
                argv = ["bash", "-c", "set -euo pipefail; " + shown]
            done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
            assert done.returncode == 0, f"{block.where}: {shown}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
            if block.expected_output is not None:
                assert done.stdout == block.expected_output, f"{block.where}: the output shown below it differs"
            runs = _run_folders(tmp_path, runs)
