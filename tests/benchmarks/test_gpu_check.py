"""The prepared GPU check (``benchmarks/gpu_ppo_check.py``) keeps working: its dry run on CPU, learner part only
(the agent part is ``tests/harness/test_vllm_run.py``'s command)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers.paths import ROOT


@pytest.mark.vllm
def test_gpu_check_dry_run_on_cpu(tmp_path):
    from tests.helpers.vllm_lane import require_vllm

    require_vllm()
    out = tmp_path / "check.json"
    cmd = [
        sys.executable,
        str(ROOT / "benchmarks" / "gpu_ppo_check.py"),
        "--dry-run",
        "--skip-agent",
        "--iterations",
        "1",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([*cmd, "--out", str(out)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=800)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["device"] == "cpu" and result["ppo"]["backend"] == "vllm"
    assert result["ppo"]["probe_logprob_max_abs_diff"][0] < 1e-3
    assert result["ppo"]["rollout_tokens_per_s"][0] > 0 and result["peak_memory_gib"] > 0


@pytest.mark.slow
def test_gpu_check_script_dry_run_covers_the_learner_and_torchrun_on_cpu(tmp_path):
    """``benchmarks/gpu_check.sh --dry-run``: the learner's paper preset, then 2 gloo ranks under DDP and FSDP2,
    each a JSON part; verl is recorded as skipped with its reason (its workers need GPUs)."""
    out = tmp_path / "check.json"
    env = {**os.environ, "PYTHON": sys.executable, "STEPS": "learner,torchrun,verl", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_check.sh"), "--dry-run", str(out)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=1500)  # fmt: skip
    result = json.loads(out.read_text())
    assert done.returncode == 0, (done.stderr[-2000:], result)
    assert result["dry_run"] and result["learner"]["ppo"]["ranks"] == 1
    for engine in ("ddp", "fsdp2"):
        ppo = result[f"torchrun-{engine}"]["ppo"]
        assert ppo["ranks"] == 2 and ppo["data_parallel"] == engine and ppo["train_tokens_per_s"][0] > 0
    assert "GPUs" in result["verl"]["skipped"] and "vllm" not in result and "trl" not in result
