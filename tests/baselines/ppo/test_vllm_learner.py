"""The learner with ``generation_backend="vllm"`` on the tiny model (tied embeddings), through vLLM's engine.

One engine for the module: the trainer's. Three iterations run first (module fixture) and are compared with the
transformers backend on the same seeds; then the sync itself is probed after changing only the tied embedding.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from baselines.ppo.config import PPOConfig  # noqa: E402
from baselines.ppo.rollout import collect_rollouts  # noqa: E402
from baselines.ppo.trainer import Trainer  # noqa: E402
from baselines.tiny import MODEL_DIR  # noqa: E402

PROBE_TOLERANCE = 1e-3
"""fp32 on both sides; a stale head shows gaps of whole nats."""


def config(out_dir, backend):
    return PPOConfig(
        model=str(MODEL_DIR), env_id="ragen/Bandit-v0", iterations=3, prompts_per_iteration=2, samples_per_prompt=4,
        max_new_tokens=48, minibatch_size=16, micro_batch_size=4, out_dir=str(out_dir), tensorboard=False,
        mi_every=0, actor_lr=1e-4, advantage="grpo", dtype="float32", generation_backend=backend,
    )  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from tests.helpers.vllm_lane import require_vllm

    require_vllm()
    trainer = Trainer(config(tmp_path_factory.mktemp("vllm"), "vllm"))
    rows = trainer.train(resume=False)
    reference = Trainer(config(tmp_path_factory.mktemp("hf"), "transformers")).train(resume=False)
    yield trainer, rows, reference
    trainer.close()


@pytest.mark.vllm
def test_every_sync_matches_the_policy_on_the_probe_batch(runs):
    _, rows, _ = runs
    gaps = [row["sync/probe_logprob_max_abs_diff"] for row in rows]
    assert len(gaps) == 3 and all(np.isfinite(gaps))
    assert max(gaps) < PROBE_TOLERANCE, gaps
    assert all(row["losses/pg_loss"] != 0 for row in rows[1:] if "losses/pg_loss" in row)  # the weights moved


@pytest.mark.vllm
def test_three_iterations_follow_the_transformers_backend(runs):
    trainer, rows, reference = runs
    assert [r["iteration"] for r in rows] == [r["iteration"] for r in reference] == [0, 1, 2]
    same_keys = {k for k in reference[0] if not k.startswith("actor/token_entropy")}
    assert same_keys <= set(rows[0])  # the same metrics, plus the sync's
    success = np.mean([r["rollout/success"] for r in rows])
    success_ref = np.mean([r["rollout/success"] for r in reference])
    # 24 episodes each, different samplers: success within noise (binomial sd of the difference ~0.12)
    assert abs(success - success_ref) <= 0.35, (success, success_ref)
    # same seeds, same prompts: the first turn of every episode sees the same ids under either backend
    engine_first = [e.turns[0].prompt_ids for e in trainer.engine.collect(0, [0, 1])]
    local_first = [
        e.turns[0].prompt_ids for e in collect_rollouts(trainer.policy, trainer.tokenizer, trainer.config, 0, [0, 1])
    ]
    assert engine_first == local_first


@pytest.mark.vllm
def test_a_changed_tied_embedding_reaches_the_engine(runs):
    trainer = runs[0]
    policy, engine = trainer.policy, trainer.engine
    assert policy.config.tie_word_embeddings
    with torch.no_grad():
        weight = policy.get_input_embeddings().weight
        weight.add_(0.05 * torch.randn(weight.shape, generator=torch.Generator().manual_seed(0)))
    assert policy.get_output_embeddings().weight.data_ptr() == weight.data_ptr()
    stale = engine.probe_gap(policy)
    assert stale > 0.05, stale  # the probe sees an engine that was not synced
    metrics = engine.sync(policy)
    assert metrics["sync/probe_logprob_max_abs_diff"] < PROBE_TOLERANCE, metrics


@pytest.mark.vllm
def test_a_vllm_without_in_place_reload_is_refused_with_its_version(monkeypatch, tmp_path):
    from tests.helpers.vllm_lane import require_vllm

    vllm = require_vllm()
    from vllm.v1.worker.gpu_worker import Worker

    monkeypatch.delattr(Worker, "reload_weights")  # what a vLLM without the reload path looks like
    with pytest.raises(RuntimeError, match=rf"installed vLLM {vllm.__version__} has none"):
        Trainer(config(tmp_path, "vllm"))
