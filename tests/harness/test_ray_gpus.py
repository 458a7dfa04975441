"""``harness run --ray`` on GPUs: each task asks Ray for its agent's GPUs (a pure plan, checked here for GPU
clusters too), and the MI family of a GPU agent is scored in a task holding those GPUs. The Ray path runs on a
local cluster that declares one (logical) GPU: the tasks that ask for it are scheduled on it, and the run's
results are the single-process run's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.agents.options import AgentOptions
from harness.backends import task_resources
from harness.cli import main


def gpus(spec: str, device: str = "auto", cluster_gpus: float = 0, **extra) -> float:
    return task_resources(spec, AgentOptions(device=device, extra=extra), cluster_gpus)["num_gpus"]


def test_a_model_on_gpus_asks_for_them_and_nothing_else_does():
    assert gpus("hf:/models/x", "cuda") == 1 and gpus("hf:/models/x", "cuda:1") == 1
    assert gpus("hf:/models/x", "auto", cluster_gpus=8) == 1
    assert gpus("vllm:/models/x", "auto", cluster_gpus=8, tensor_parallel_size=4) == 4
    assert gpus("vllm:/models/x", "cuda") == 1
    assert gpus("hf:/models/x", "auto", cluster_gpus=0) == 0  # a CPU-only cluster: CPU tasks
    assert gpus("hf:/models/x", "cpu", cluster_gpus=8) == 0
    for spec in ("random", "oracle", "openai:http://localhost:8000/v1#m"):  # no model of their own
        assert gpus(spec, "cuda", cluster_gpus=8) == 0
    assert task_resources("random", AgentOptions(), 0)["num_cpus"] == 1


def test_the_shipped_tiny_agent_holds_one_gpu_when_on_gpus():
    pytest.importorskip("torch")
    assert gpus("tiny", "auto", cluster_gpus=1) == 1 and gpus("tiny", "cpu", cluster_gpus=1) == 0


def run(tmp_path: Path, *args: str, run_id: str) -> dict:
    argv = ["run", "tiny", "--env", "ragen/Bandit-v0", "--episodes", "4", "--samples", "2", "--max-new-tokens", "64",
            "--mi-samples", "8", "--batch-size", "4", *args]  # fmt: skip
    assert main([*argv, "--out", str(tmp_path), "--run-id", run_id, "--quiet", "--no-plots"]) == 0
    return json.loads((tmp_path / run_id / "summary.json").read_text())


@pytest.mark.ray
@pytest.mark.slow
def test_gpu_tasks_on_a_local_cluster_give_the_single_process_results(tmp_path):
    ray = pytest.importorskip("ray")
    pytest.importorskip("torch")
    one = run(tmp_path, run_id="one")
    # a local cluster with one logical GPU: the tiny agent's rollout and MI tasks each ask for it (device auto),
    # so Ray runs them one at a time on it; on this CPU build of torch, "auto" in the task is still the CPU
    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        assert gpus("tiny", "auto", ray.cluster_resources()["GPU"]) == 1
        on_ray = run(tmp_path, "--ray", "--workers", "2", run_id="ray")
    finally:
        ray.shutdown()
    assert on_ray["rows"] == one["rows"]
    metrics = on_ray["rows"][0]["metrics"]
    assert metrics["first_turn/mi_estimate"]["value"] is not None  # scored (in the GPU task), not left out
