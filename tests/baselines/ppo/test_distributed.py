"""The learner across processes: the device/collective plan of each torchrun rank (a pure function, so the GPU
plan is checked here too), and DDP/FSDP2 on CPU with gloo in two processes making the single-process update."""

from __future__ import annotations

import pytest

from baselines.ppo.config import PPOConfig
from baselines.ppo.distributed import Plan, plan
from tests.helpers.torchrun import train_ranks


def launch(world: int, rank: int) -> dict[str, str]:
    return {"WORLD_SIZE": str(world), "RANK": str(rank), "LOCAL_RANK": str(rank % 4)}


def test_one_process_keeps_its_device_and_no_engine():
    assert plan("auto", "ddp", {}, cuda_devices=0) == Plan(1, 0, 0, "cpu", None, "none")
    assert plan("auto", "fsdp2", {}, cuda_devices=8) == Plan(1, 0, 0, "cuda", None, "none")
    assert plan("cuda:3", "ddp", {}, cuda_devices=8).device == "cuda:3"


def test_each_gpu_rank_takes_its_local_gpu_over_nccl():
    plans = [plan("auto", "ddp", launch(8, rank), cuda_devices=4) for rank in range(8)]  # two nodes of 4 GPUs
    assert [p.device for p in plans] == [f"cuda:{r % 4}" for r in range(8)]
    assert {p.backend for p in plans} == {"nccl"} and {p.wrapper for p in plans} == {"ddp"}
    assert plan("cuda", "fsdp2", launch(2, 1), cuda_devices=2) == Plan(2, 1, 1, "cuda:1", "nccl", "fsdp2")


def test_cpu_ranks_use_gloo_even_where_gpus_are():
    assert plan("cpu", "ddp", launch(2, 1), cuda_devices=2) == Plan(2, 1, 1, "cpu", "gloo", "ddp")
    assert plan("auto", "fsdp2", launch(2, 0), cuda_devices=0).backend == "gloo"


def test_launches_that_cannot_work_say_the_fix():
    with pytest.raises(ValueError, match=r"device='cuda:1' would put all 2 ranks on one GPU.*device='cuda'"):
        plan("cuda:1", "ddp", launch(2, 0), cuda_devices=2)
    with pytest.raises(ValueError, match=r"LOCAL_RANK 2 .* shows 2.*--nproc_per_node 2"):
        plan("auto", "ddp", launch(4, 2), cuda_devices=2)
    with pytest.raises(ValueError, match="data_parallel must be one of ddp, fsdp2"):
        plan("auto", "zero3", {}, cuda_devices=0)


def test_config_names_the_data_parallel_choices(tiny_model_dir):
    with pytest.raises(ValueError, match="data_parallel"):
        PPOConfig(model=tiny_model_dir, data_parallel="fsdp")
    with pytest.raises(ValueError, match="generation_backend='transformers'"):
        PPOConfig(model=tiny_model_dir, data_parallel="fsdp2", generation_backend="vllm")
    with pytest.raises(ValueError, match="grad_buckets_every=0"):
        PPOConfig(model=tiny_model_dir, data_parallel="fsdp2", grad_buckets_every=1)


@pytest.mark.slow
@pytest.mark.parametrize("data_parallel", ["ddp", "fsdp2"])
def test_two_gloo_ranks_with_a_critic_and_uneven_shares_make_the_single_process_update(
    data_parallel, tiny_model_dir, tmp_path
):
    """PPO with a critic (GAE; unwhitened: a model that earns one return everywhere whitens rounding noise),
    3 groups over 2 ranks: rank 0 holds 2 micro-batches, rank 1 one, so rank 1 runs an idle pass for the engine's
    collectives; 2 epochs. FSDP2 trains the shipped model, whose tied input and output embeddings must stay one
    unit."""
    if data_parallel == "fsdp2":
        from baselines.tiny import MODEL_DIR

        tiny_model_dir = str(MODEL_DIR)
    config = dict(model=tiny_model_dir, env_id="ragen/Bandit-v0", env_kwargs={"max_turns": 2}, iterations=2,
                  prompts_per_iteration=3, samples_per_prompt=2, max_new_tokens=6, minibatch_size=6,
                  micro_batch_size=2, ppo_epochs=2, tensorboard=False, mi_every=0, actor_lr=1e-2, critic_lr=1e-2,
                  advantage="gae", whiten_advantages=False, filter_value=1.0, filter_include_zero=True,
                  entropy_coef=0.01, adam_eps=1.0, data_parallel=data_parallel)  # fmt: skip
    # adam_eps=1: the step is ≈ lr·gradient (with a small eps Adam's first step is lr·sign(g), which turns
    # summation-order rounding in near-zero gradients into full-size differences)
    pytest.importorskip("torch")
    one = train_ranks(1, config, tmp_path, "one")
    two = train_ranks(2, config, tmp_path, "two")
    assert one["policy"].keys() == two["policy"].keys()
    gaps = {key: float((two["policy"][key] - value).abs().max()) for key, value in one["policy"].items()}
    assert max(gaps.values()) < 1e-6, {key: gap for key, gap in gaps.items() if gap >= 1e-6}
    assert len(one["rows"]) == len(two["rows"]) == 2
    for a, b in zip(one["rows"], two["rows"], strict=True):
        assert a.keys() == b.keys()
        assert "losses/pg_loss" in a and "losses/value_loss" in a  # an update ran, the critic's too
        differ = {k: (a[k], b[k]) for k in a if not k.startswith(("timing/", "perf/"))
                  and b[k] != pytest.approx(a[k], rel=1e-5, abs=1e-7)}  # fmt: skip
        assert not differ, differ
