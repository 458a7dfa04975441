"""Training-time MI is the harness's MI: the same family as RAGEN's formulas, the same samplers and numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.mi.estimator import collapse_metrics
from tests.helpers.paths import TINY_MODEL

SHIPPED = TINY_MODEL


def ragen_family(L: np.ndarray, Lsum: np.ndarray, col: np.ndarray, equivalent: np.ndarray) -> dict[str, float]:
    """RAGEN's ``CollapseDetector`` formulas (docs/design.md), written out independently in torch."""
    import torch

    out = {}
    rows, n = L.shape
    for suffix, matrix in (("", L), ("_seq", Lsum)):
        m = torch.tensor(matrix, dtype=torch.float64)
        matched = m[torch.arange(rows), torch.tensor(col)]
        marginal = torch.logsumexp(m, dim=1) - math.log(n)
        sigma = marginal.std(unbiased=False)
        out[f"mi_estimate{suffix}"] = float((matched - marginal).mean())
        out[f"cond_entropy_estimate{suffix}"] = float(-matched.mean())
        out[f"reasoning_entropy_estimate{suffix}"] = float(-marginal.mean())
        out[f"mi_zscore{suffix}"] = float(((matched - marginal) / (sigma + 1e-3)).mean())
    same = equivalent[col]  # (rows, n): columns counted as correct for each row
    best = np.argmax(L, axis=1)
    out["retrieval_accuracy"] = float(np.mean(same[np.arange(rows), best]))
    for k in (2, 4, 8):
        top = np.argsort(-L, axis=1)[:, :k]
        out[f"retrieval_accuracy@{k}"] = float(np.mean([same[i, top[i]].any() for i in range(rows)]))
    out["retrieval_chance"] = float(np.mean(same.sum(axis=1) / n))
    return out


def test_mi_family_equals_ragens_formulas_on_random_matrices():
    rng = np.random.default_rng(0)
    for trial in range(200):
        n = int(rng.integers(2, 12)) if trial % 2 == 0 else int(rng.integers(3, 12))  # >= 2 distinct prompts
        rows = int(rng.integers(2, 40))
        col = rng.integers(0, n, size=rows)
        L = rng.normal(-2.0, 1.5, size=(rows, n))
        Lsum = L * rng.integers(1, 30, size=(rows, 1))
        equivalent = np.eye(n, dtype=bool)
        if trial % 2:  # some token-identical prompts
            a, b = rng.choice(n, size=2, replace=False)
            equivalent[a, b] = equivalent[b, a] = True
        ours = collapse_metrics(L, col, logp_sum=Lsum, equivalent=equivalent)
        for key, value in ragen_family(L, Lsum, col, equivalent).items():
            assert ours[key].value == pytest.approx(value, abs=1e-12, rel=1e-12), (trial, key)


@pytest.mark.slow
@pytest.mark.skipif(not (SHIPPED / "model.safetensors").exists(), reason="the tiny model is not shipped here")
def test_training_time_mi_equals_the_harness_on_the_same_episodes(tmp_path):
    """The learner logs at iteration 0 (before any update) exactly what ``harness`` computes with an ``hf:``
    agent loaded from the same directory, on the same episodes and draws: one estimator, one set of samplers."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from baselines.algos.mi import episode_records
    from baselines.ppo.config import PPOConfig
    from baselines.ppo.rollout import collect_rollouts
    from baselines.ppo.trainer import Trainer
    from harness.agents import AgentOptions, make_agent
    from harness.mi import collapse_for
    from harness.seeding import derive_seed

    config = PPOConfig(
        model=str(SHIPPED), env_id="ragen/Bandit-v0", env_kwargs={"risky_prob": 1.0, "max_turns": 2}, iterations=1,
        prompts_per_iteration=4, samples_per_prompt=3, max_new_tokens=48, mi_every=1, mi_samples=8,
        out_dir=str(tmp_path / "run"), tensorboard=False, cpu_threads=1, checkpoint_every=0,
    )  # fmt: skip
    trainer = Trainer(config)
    episodes = collect_rollouts(trainer.policy, trainer.tokenizer, config, 0, list(range(4)))
    [row] = trainer.train(resume=False)
    records = episode_records(episodes, config)
    assert sum(bool(r["turns"][0]["reasoning"]) for r in records) >= 2, "the shipped model should reason"
    agent = make_agent(f"hf:{config.model}", AgentOptions(temperature=config.temperature, extra={"threads": 1}))
    harness = collapse_for(agent, records, derive_seed("train-mi", config.seed, 0), config.mi.samples)
    compared = 0
    for scheme, metrics in harness.items():
        assert not isinstance(metrics, str), metrics
        for name, estimate in metrics.items():
            if not np.isfinite(estimate.value):  # unavailable in the harness: absent from the learner's row
                assert f"collapse_{scheme}/{name}" not in row
                continue
            assert row[f"collapse_{scheme}/{name}"] == pytest.approx(estimate.value, abs=1e-5), (scheme, name)
            compared += 1
    assert compared >= 20
    assert row["collapse_first_turn/num_pairs"] == harness["first_turn"]["mi_estimate"].n
    valid = np.mean([bool(r["turns"][0]["reasoning"]) for r in records])
    assert row["collapse_first_turn/valid_rate"] == pytest.approx(valid)
    itt = harness["first_turn"]["retrieval_accuracy"].value * valid
    assert row["collapse_first_turn/retrieval_accuracy_itt"] == pytest.approx(itt, abs=1e-9)


@pytest.mark.parametrize("window", [None, 0, 1])
def test_the_learners_records_rebuild_each_turns_chat_exactly(window):
    """The learner's episodes become harness records storing turn deltas; the chat the MI family rebuilds from
    them is the context the learner sampled under, whatever the window."""
    pytest.importorskip("torch")
    from baselines.algos.mi import episode_records
    from baselines.algos.rollout import RolloutSpec
    from baselines.ppo.rollout import Episode, TurnSample
    from harness.transcript import build_context, record_messages, user_message

    system = {"role": "system", "content": "rules"}
    episode, exchanges, current = Episode(group=0, sample=1, env_seed=7), [], user_message(1, "s1", None)
    for turn in range(1, 4):
        context = build_context(system, exchanges, current, "<think>", window)
        response = f"<think>r{turn}</think><answer>Up</answer>"
        episode.turns.append(TurnSample(0, 1, turn, context, [], [], [], [], response, reward=0.5))
        exchanges.append((current, {"role": "assistant", "content": response}))
        current = user_message(turn + 1, f"s{turn + 1}", 0.5)
    config = RolloutSpec(env_id="ragen/Bandit-v0", context_turns=window)
    [record] = episode_records([episode], config)
    assert [record_messages(record, i) for i in range(3)] == [t.context.messages for t in episode.turns]
    assert [t["reasoning"] for t in record["turns"]] == ["r1", "r2", "r3"]


@pytest.mark.slow
@pytest.mark.skipif(not (SHIPPED / "model.safetensors").exists(), reason="the tiny model is not shipped here")
def test_the_learners_mi_options_sample_columns_as_the_harness(tmp_path):
    """``--mi-columns`` (``MIOptions.columns``, the harness's ``mi_columns``) reaches the learner's family."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from baselines.algos.mi import episode_records
    from baselines.ppo.config import PPOConfig
    from baselines.ppo.rollout import collect_rollouts
    from baselines.ppo.trainer import Trainer
    from harness.agents import AgentOptions, make_agent
    from harness.mi import collapse_for
    from harness.seeding import derive_seed

    config = PPOConfig(
        model=str(SHIPPED), env_id="ragen/Bandit-v0", env_kwargs={"risky_prob": 1.0, "max_turns": 2}, iterations=1,
        prompts_per_iteration=4, samples_per_prompt=3, max_new_tokens=48, mi_every=1, mi_samples=8, mi_columns=2,
        mi_schemes="first_turn", mi_probe_seeds=0, out_dir=str(tmp_path / "run"), tensorboard=False, cpu_threads=1,
        checkpoint_every=0,
    )  # fmt: skip
    trainer = Trainer(config)
    episodes = collect_rollouts(trainer.policy, trainer.tokenizer, config, 0, list(range(4)))
    [row] = trainer.train(resume=False)
    records = episode_records(episodes, config)
    agent = make_agent(f"hf:{config.model}", AgentOptions(temperature=config.temperature, extra={"threads": 1}))
    seed = derive_seed("train-mi", config.seed, 0)
    [sampled] = collapse_for(agent, records, seed, 8, 2, schemes=["first_turn"]).values()
    [every] = collapse_for(agent, records, seed, 8, schemes=["first_turn"]).values()
    assert row["collapse_first_turn/mi_estimate"] == pytest.approx(sampled["mi_estimate"].value, abs=1e-5)
    assert abs(sampled["mi_estimate"].value - every["mi_estimate"].value) > 1e-3
    assert "collapse_trajectory/num_pairs" not in row and not any(k.startswith("probe_") for k in row)
