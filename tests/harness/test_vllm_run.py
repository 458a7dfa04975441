"""``harness run vllm:<tiny model> --env ragen/Sokoban-v0`` end to end through the CLI (one engine)."""

from __future__ import annotations

import json

import numpy as np
import pytest


@pytest.mark.vllm
def test_harness_run_vllm_on_sokoban_completes_with_mi(tmp_path, capsys):
    from tests.helpers.vllm_lane import require_vllm

    require_vllm()
    from baselines.tiny import MODEL_DIR
    from harness.cli import main

    status = main([
        "run", f"vllm:{MODEL_DIR}", "--env", "ragen/Sokoban-v0", "--episodes", "4", "--samples", "2",
        "--max-new-tokens", "64", "--mi-samples", "16", "--out", str(tmp_path), "--run-id", "sokoban",
        "--quiet", "--no-plots", "--agent-opt", "max_num_seqs=16",
    ])  # fmt: skip
    assert status == 0, capsys.readouterr().err
    run_dir = tmp_path / "sokoban"
    config = json.loads((run_dir / "config.json").read_text())
    assert config["run"]["agent_options"]["extra"] == {"max_num_seqs": 16}
    (row,) = json.loads((run_dir / "summary.json").read_text())["rows"]
    assert row["env_id"] == "ragen/Sokoban-v0" and row["episodes"] == 8
    for scheme in ("first_turn", "trajectory"):
        assert np.isfinite(row["metrics"][f"{scheme}/mi_estimate"]["value"])  # MI available, a number
