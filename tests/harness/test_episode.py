"""The one turn record and lockstep loop (harness.episode): the harness writes every episode byte for byte as the
golden run recorded it, window, sample seeds, infos and float formatting included."""

from __future__ import annotations

from pathlib import Path

from harness.cli import main

GOLDEN = Path(__file__).parent / "golden" / "lockstep_random_oracle.jsonl"
"""``harness run`` with :data:`ARGS` (``--out DIR --run-id g --quiet --no-plots``): ``DIR/g/episodes.jsonl``.
Regenerate it only for a change meant to alter records (an env's version bump, a new record field)."""
ARGS = ["random,oracle", "--env", "ragen/Bandit-v0,ragen/FrozenLake-v0", "--episodes", "1", "--samples", "2",
        "--context", "1", "--mi-samples", "0"]  # fmt: skip


def test_episodes_are_written_byte_for_byte_as_the_golden_run(tmp_path):
    assert main(["run", *ARGS, "--out", str(tmp_path), "--run-id", "g", "--quiet", "--no-plots"]) == 0
    written = (tmp_path / "g" / "episodes.jsonl").read_bytes()
    golden = GOLDEN.read_bytes()
    assert written.count(b"\n") == golden.count(b"\n") == 8
    for number, (line, expected) in enumerate(zip(written.splitlines(), golden.splitlines(), strict=True), 1):
        assert line == expected, f"episodes.jsonl line {number} differs from {GOLDEN.name}"
