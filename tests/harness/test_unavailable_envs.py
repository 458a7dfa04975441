"""A machine without a secure code sandbox: the run finishes the other envs and says, once, why CodeExec is not run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import ROOT


def _harness_without_sandbox(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """``harness`` in a fresh process that finds no bwrap on PATH and no Docker engine."""
    empty = tmp_path / "bin"
    empty.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "PATH": str(empty),
        "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock",
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path
    )


def test_a_run_of_every_env_skips_codeexec_with_one_line_and_records_it(tmp_path):
    done = _harness_without_sandbox(
        tmp_path, "run", "random", "--episodes", "1", "--samples", "1", "--mi-samples", "0",
        "--out", str(tmp_path), "--run-id", "r", "--quiet", "--no-plots",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "CodeExec" in line]
    assert len(lines) == 1 and lines[0].startswith("harness: skipping ragen/CodeExec-v0: ")
    assert "bubblewrap" in lines[0] and "Traceback" not in done.stderr
    run_dir = tmp_path / "r"
    config = json.loads((run_dir / "config.json").read_text())
    assert "bubblewrap" in config["run"]["skipped_envs"]["ragen/CodeExec-v0"]
    assert "ragen/CodeExec-v0" not in [plan["env_id"] for plan in config["run"]["envs"]]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert {row["env_id"] for row in summary["rows"]} == {plan["env_id"] for plan in config["run"]["envs"]}
    assert "ragen/Bandit-v0" in {row["env_id"] for row in summary["rows"]}
    report = (run_dir / "report.md").read_text()
    assert "## Skipped envs" in report and "`ragen/CodeExec-v0`: no secure sandbox" in report


def test_asking_for_codeexec_by_name_is_one_error_line(tmp_path):
    done = _harness_without_sandbox(tmp_path, "run", "random", "--env", "ragen/CodeExec-v0", "--out", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("harness: error: ragen/CodeExec-v0 cannot run")
    assert not any(tmp_path.glob("random-*"))  # no empty run folder left behind
