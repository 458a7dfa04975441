"""The learner learns: a short deterministic run with the shipped tiny model whose success rises."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.paths import TINY_MODEL

pytest.importorskip("torch")
pytest.importorskip("transformers")

SHIPPED = TINY_MODEL


@pytest.mark.slow
@pytest.mark.skipif(not (SHIPPED / "model.safetensors").exists(), reason="the tiny model is not shipped here")
def test_grpo_raises_bandit_success_from_its_own_starting_point(tmp_path):
    """Bandit asked in the answer-only format (no ``<think>`` prefill), which the shipped model was not trained
    on: it mostly rambles and rarely closes a parseable ``<answer>``, so success (pulling the better arm with a
    valid answer) starts low. ``risky_prob=1`` makes the bold arm, which the model prefers, pay 1 every time,
    so reward ranks responses the same way success does: valid bold answer 1, valid cautious answer 0.1,
    unparseable -0.1. GRPO at temperature 1 must raise success within 8 iterations.

    Measured here (success per iteration, 4 prompts x 8 samples, lr 3e-4), as mean of the last 4 iterations
    minus mean of the first 2: +0.26, +0.34, +0.27, +0.53 on seeds 0-3 with the model of commit 5850f5d, and
    +0.36, +0.20, +0.33 on seeds 0-2 with the retrained model of 2026-11-30 04:36 UTC (not yet committed when
    measured). Single iterations are noisy (4 levels each; seed 0, old model: 0.19, 0.09, 0.06, 0.19, 0.03,
    0.44, 0.19, 0.94), hence means over several iterations and a threshold of 0.12.
    The test measures its own starting point, so a retrained tiny model that still prefers the bold arm keeps
    it meaningful.
    """
    from baselines.ppo.config import PPOConfig
    from baselines.ppo.trainer import Trainer

    config = PPOConfig(
        model=str(SHIPPED), env_id="ragen/Bandit-v0",
        env_kwargs={"response_format": "answer", "max_turns": 1, "risky_prob": 1.0},
        iterations=8, prompts_per_iteration=4, samples_per_prompt=8, seed=0, advantage="grpo", actor_lr=3e-4,
        temperature=1.0, max_new_tokens=48, minibatch_size=32, micro_batch_size=16, filter_value=1.0,
        filter_include_zero=True, mi_every=0, checkpoint_every=0, tensorboard=False, out_dir=str(tmp_path / "run"), cpu_threads=1,
    )  # fmt: skip
    rows = Trainer(config).train(resume=False)
    success = np.array([row["rollout/success"] for row in rows])
    assert len(success) == 8
    assert success[0] <= 0.5, f"the shipped model already solves this setting ({success[0]:.2f}): the test is void"
    assert success[-4:].mean() >= success[:2].mean() + 0.12, f"success did not rise: {np.round(success, 3).tolist()}"
