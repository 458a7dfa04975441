"""The trainer examples run as a user runs them."""

import os
import subprocess
import sys

import pytest

from tests.helpers.paths import ROOT

pytest.importorskip("trl", reason="needs the trl extra: pip install 'ragen-envs[trl]'")

pytestmark = pytest.mark.slow


def test_trl_grpo_example_trains_and_reports(tmp_path):
    argv = [sys.executable, str(ROOT / "examples" / "trl_grpo.py"), "--steps", "2", "--prompts", "2", "--samples",
            "4", "--tokens", "40", "--max-turns", "2", "--mi-every", "1", "--report-to", "tensorboard",
            "--out-dir", str(tmp_path / "run")]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("step ")]
    assert [line.split()[1] for line in lines] == ["1", "2"]
    assert all(" kept " in line and " mi " in line for line in lines)
    assert list((tmp_path / "run").glob("runs/**/events.out.tfevents.*"))
