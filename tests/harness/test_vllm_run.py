"""``harness run vllm:<tiny model> --env ragen/Sokoban-v0`` end to end through the CLI (one engine)."""

from __future__ import annotations

import json

import numpy as np
import pytest


@pytest.mark.vllm
def test_harness_run_vllm_on_sokoban_completes_with_mi(tmp_path, capsys):
    from vllm_lane import require_vllm

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
    summary = json.loads((run_dir / "summary.json").read_text())
    text = json.dumps(summary)
    assert "Sokoban" in text
    mi = [v for k, v in _flatten(summary) if k.endswith("mi_estimate")]
    assert mi and all(np.isfinite(mi)), mi


def _flatten(node, prefix=""):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _flatten(value, f"{prefix}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _flatten(value, f"{prefix}/{i}")
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield prefix, float(node)
