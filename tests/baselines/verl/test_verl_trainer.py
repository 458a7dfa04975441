"""verl adapter: RAGEN-2's SNR filter and the MI family inside verl's trainer, on CPU with verl's own DataProto.

Runs in the verl venv (``bash scripts/install-verl.sh``); skipped elsewhere. verl's actor workers need GPUs, so
the actor's ``compute_log_prob`` is stood in for by the tiny model scoring the same pair DataProto.
"""

from dataclasses import replace

import numpy as np
import pytest

from tests.helpers.paths import ROOT, TINY_MODEL

pytest.importorskip("verl", reason="needs the verl venv: bash scripts/install-verl.sh")
torch = pytest.importorskip("torch")

import gymnasium as gym  # noqa: E402
from verl import DataProto  # noqa: E402

import ragen_envs  # noqa: E402, F401
from baselines.algos.filter import filter_stats, random_groups, select_groups  # noqa: E402
from baselines.algos.mi import family_log, policy_agent  # noqa: E402
from baselines.verl.filtering import EmptyStreak, upstream_filter  # noqa: E402
from baselines.verl.trainer import (  # noqa: E402
    ActorScorer,
    RagenOptions,
    RagenPPOTrainer,
    check_trainer_config,
    episode_records,
    mi_metrics,
    pair_batch,
    snr_filter,
    update_plan,
)
from harness.mi import collapse_for  # noqa: E402
from harness.seeding import derive_seed  # noqa: E402
from harness.transcript import prefill_for, user_message  # noqa: E402
from ragen_envs.parsing import reasoning_of  # noqa: E402

MODEL = str(TINY_MODEL)
RESPONSE = 6


def generated_batch(returns: np.ndarray, seed: int = 0) -> DataProto:
    """A batch as verl's fit() holds it after generation: rows of groups (``uid``) in shuffled order, the episode
    return spread over ``rm_scores`` (mostly on the last token)."""
    groups, samples = returns.shape
    rng = np.random.default_rng(seed)
    order = rng.permutation(groups * samples)
    uid = np.array([f"u{g}" for g in range(groups) for _ in range(samples)], dtype=object)[order]
    flat = returns.reshape(-1)[order]
    scores = torch.zeros((len(flat), RESPONSE))
    scores[:, -1] = torch.tensor(flat) - 0.25
    scores[:, 0] = 0.25  # a format penalty earlier in the response still counts
    return DataProto.from_dict(
        tensors={"rm_scores": scores, "attention_mask": torch.ones((len(flat), 10), dtype=torch.long),
                 "row": torch.tensor(order)},
        non_tensors={"uid": uid},
    )  # fmt: skip


RETURNS = np.array([[1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.0, 1.0], [5.0, -1.0, 2.0, 0.0], [0.5, 0.5, 0.5, 0.5],
                    [0.0, 0.0, 0.0, 0.1], [2.0, 0.0, 2.0, 0.0]])  # fmt: skip


@pytest.mark.parametrize("value", [0.9, 0.5, 1.0])
def test_the_filter_keeps_the_groups_select_groups_picks(value):
    batch = generated_batch(RETURNS)
    options = RagenOptions(filter_value=value)
    plan = snr_filter(batch, options, mini_batch_groups=1)
    expected = select_groups(RETURNS, options.filter)
    assert len(expected) and len(expected) < len(RETURNS) - 1 or value == 1.0
    kept_uids = sorted({batch.non_tensor_batch["uid"][r] for r in plan.rows})
    assert kept_uids == sorted(f"u{g}" for g in expected)
    assert len(plan.rows) == len(expected) * RETURNS.shape[1]  # every sample of a kept group, nothing else
    stats = filter_stats(RETURNS, expected)
    assert plan.metrics["rollout/filter_kept_ratio"] == pytest.approx(stats.kept_ratio)
    assert plan.metrics["rollout/filter_zero_count"] == 2 == stats.zero_spread_count
    assert plan.metrics["rollout/in_group_reward_std"] == pytest.approx(stats.mean_in_group_std)
    assert plan.metrics["rollout/chosen_in_group_reward_std"] == pytest.approx(stats.mean_kept_in_group_std)
    assert plan.metrics["rollout/empty_after_filter"] == 0 and plan.metrics["rollout/filter_trimmed_count"] == 0


def test_the_random_drop_control_keeps_the_rules_count_drawn_by_seed_and_step():
    options = RagenOptions.from_config({"filter": {"selection": "random", "seed": 4}})
    count = len(select_groups(RETURNS, replace(options.filter, selection="spread")))
    draws = []
    for step in (1, 2, 3):
        batch = generated_batch(RETURNS)
        plan = snr_filter(batch, options, mini_batch_groups=1, step=step)
        uids = {batch.non_tensor_batch["uid"][r] for r in plan.rows}
        order = list(dict.fromkeys(batch.non_tensor_batch["uid"].tolist()))  # the groups, first seen first
        drawn = random_groups(len(RETURNS), count, np.random.default_rng(derive_seed("train-random-drop", 4, step)))
        assert uids == {order[g] for g in drawn} and plan.metrics["rollout/filter_kept_count"] == count
        draws.append(uids)
    assert 0 < count < len(RETURNS) and len({frozenset(d) for d in draws}) > 1  # a fresh draw each step


def test_the_kept_groups_are_trimmed_to_whole_mini_batches_by_spread():
    options = RagenOptions(filter_value=1.0)  # keeps the 4 groups with spread: 2, 5, 1 and 4 by spread
    plan = snr_filter(generated_batch(RETURNS), options, mini_batch_groups=3)
    uids = {generated_batch(RETURNS).non_tensor_batch["uid"][r] for r in plan.rows}
    assert uids == {"u1", "u2", "u5"} and plan.mini_batch_groups == 3  # u4 (std 0.05) dropped
    assert plan.metrics["rollout/filter_trimmed_count"] == 1 and plan.metrics["rollout/filter_kept_count"] == 4
    # all spreads zero: nothing kept, the update is skipped
    flat = generated_batch(np.ones((3, 4)))
    assert snr_filter(flat, options, mini_batch_groups=1).empty
    assert update_plan(5, 2, 16, 8) == (4, 2)
    assert update_plan(1, 2, 16, 8) == (1, 1)  # below one mini-batch: one smaller mini-batch
    assert update_plan(1, 2, 2, 8) == (0, 0)  # 2 rows cannot split over 8 ranks
    assert update_plan(5, 8, 2, 4) == (4, 4)


def test_filter_errors_name_the_fix():
    batch = generated_batch(RETURNS)
    batch.pop(batch_keys=["rm_scores"])
    with pytest.raises(ValueError, match="rm_scores"):
        snr_filter(batch, RagenOptions(), mini_batch_groups=1)
    with pytest.raises(ValueError, match="ragen.filter.mode"):
        RagenOptions.from_config({"filter": {"mode": "top-p"}})
    with pytest.raises(ValueError, match="unknown key ragen.mi.sample; allowed: .*samples"):
        RagenOptions.from_config({"mi": {"sample": 3}})
    with pytest.raises(ValueError, match="unknown key ragen.filters; allowed: filter, mi"):
        RagenOptions.from_config({"filters": {}})


# ---- MI ------------------------------------------------------------------------------------------------
def played(env_id: str, seed: int, responses: list[str]) -> tuple[dict, list[dict]]:
    """``ragen_episode`` and ``ragen_turns`` as the agent loop writes them, for scripted responses."""
    env = gym.make(env_id, max_turns=len(responses))
    observation, info = env.reset(seed=seed)
    prefill = prefill_for(env.unwrapped.response_format)
    turns, last = [], None
    for index, text in enumerate(responses):
        user = user_message(index + 1, observation, last)["content"]
        response = prefill + text
        observation, reward, terminated, truncated, _ = env.step(response)
        turns.append({"start": 0, "end": 0, "user": user, "prefill": prefill, "response": response,
                      "reasoning": reasoning_of(response, env.unwrapped.response_format), "reward": float(reward)})  # fmt: skip
        last = float(reward)
        if terminated or truncated:
            break
    episode = {"env_id": env_id, "env_kwargs": {"max_turns": len(responses)}, "seed": seed,
               "instructions": info["instructions"]}  # fmt: skip
    return episode, turns


TEXTS = [
    ["The box is left of me.</think><answer>Left</answer>", "Now push it up.</think><answer>Up</answer>"],
    ["I should go down first.</think><answer>Down</answer>", "</think><answer>Right</answer>"],
    ["Up looks free.</think><answer>Up</answer>", "The goal is right.</think><answer>Right</answer>"],
]


@pytest.fixture(scope="module")
def tiny():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(1)
    return AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32).eval(), AutoTokenizer.from_pretrained(MODEL)


@pytest.fixture(scope="module")
def mi_batch():
    episodes = [played("ragen/Sokoban-v0", seed, TEXTS[(seed + s) % 3]) for seed in (3, 4, 5) for s in range(2)]
    return DataProto.from_dict(
        tensors={"rm_scores": torch.zeros((len(episodes), 2))},
        non_tensors={"uid": np.array([f"u{i // 2}" for i in range(len(episodes))], dtype=object),
                     "ragen_episode": np.array([e for e, _ in episodes], dtype=object),
                     "ragen_turns": np.array([t for _, t in episodes] + [None], dtype=object)[:-1]},
    )  # fmt: skip


def actor_log_probs(model, calls=None):
    """What the actor's compute_log_prob returns (``old_log_probs``, (B, response width)), from the tiny model."""

    def log_probs(pairs: DataProto) -> torch.Tensor:
        if calls is not None:
            calls.append(len(pairs))
        batch = pairs.batch
        width = batch["responses"].shape[1]
        with torch.no_grad():
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                           position_ids=batch["position_ids"]).logits  # fmt: skip
        logits = logits[:, -width - 1 : -1].float() / pairs.meta_info["temperature"]  # (B, R, V)
        return torch.log_softmax(logits, -1).gather(-1, batch["responses"].unsqueeze(-1)).squeeze(-1)

    return log_probs


def test_pair_batch_is_verls_left_right_padded_layout(tiny):
    _, tokenizer = tiny
    pairs = pair_batch([[5, 6, 7], [8]], [[9], [10, 11]], pad_id=0, temperature=0.7)
    b = pairs.batch
    assert b["input_ids"].tolist() == [[5, 6, 7, 9, 0], [0, 0, 8, 10, 11]]
    assert b["attention_mask"].tolist() == [[1, 1, 1, 1, 0], [0, 0, 1, 1, 1]]
    assert b["position_ids"].tolist() == [[0, 1, 2, 3, 0], [0, 0, 0, 1, 2]]
    assert b["response_mask"].tolist() == [[1, 0], [1, 1]] and pairs.meta_info["temperature"] == 0.7
    from verl.workers.utils.padding import left_right_2_no_padding

    unpadded = left_right_2_no_padding(pairs.to_tensordict())  # what _compute_old_log_prob sends the actor
    assert [t.tolist() for t in unpadded["input_ids"].unbind()] == [[5, 6, 7, 9], [8, 10, 11]]


def test_actor_scored_mi_equals_the_harness_family(tiny, mi_batch):
    model, tokenizer = tiny
    records = episode_records(mi_batch)
    assert [len(r["turns"]) for r in records] == [2] * 6 and records[0]["turns"][0]["reasoning"]
    options = RagenOptions(mi_samples=6, mi_seed=3, mi_pairs_per_call=7)
    calls = []
    scorer = ActorScorer(tokenizer, actor_log_probs(model, calls), spec=f"hf:{MODEL}", pairs_per_call=7,
                         batch_multiple=4)  # fmt: skip
    ours = mi_metrics(mi_batch, scorer, options, step=11)
    assert calls and all(n % 4 == 0 and n <= 8 for n in calls)  # chunked and padded to the dp multiple
    agent = policy_agent(model, tokenizer, 1.0, model=MODEL, threads=1)
    run_seed = derive_seed("train-mi", 3, 11)
    theirs = family_log(collapse_for(agent, records, run_seed, 6), records, ["first_turn", "trajectory"])
    assert ours.keys() == theirs.keys() and "collapse_trajectory/mi_estimate" in ours
    assert "collapse_first_turn/retrieval_accuracy_itt" in ours
    for key in theirs:
        assert ours[key] == pytest.approx(theirs[key], rel=1e-4, abs=1e-4), key


def test_mi_column_sampling_reaches_the_actor_scored_family(tiny, mi_batch):
    """``ragen.mi.columns`` (the learner's ``MIOptions.columns``) scores each row under that many columns."""
    model, tokenizer = tiny
    records = episode_records(mi_batch)
    options = RagenOptions.from_config({"mi": {"samples": 6, "columns": 2, "seed": 3}})
    scorer = ActorScorer(tokenizer, actor_log_probs(model, []), spec=f"hf:{MODEL}")
    ours = mi_metrics(mi_batch, scorer, options, step=11)
    agent = policy_agent(model, tokenizer, 1.0, model=MODEL, threads=1)
    run_seed, schemes = derive_seed("train-mi", 3, 11), ["first_turn", "trajectory"]
    sampled = family_log(collapse_for(agent, records, run_seed, 6, 2), records, schemes)
    every = family_log(collapse_for(agent, records, run_seed, 6), records, schemes)
    assert ours.keys() == sampled.keys()
    for key in sampled:
        assert ours[key] == pytest.approx(sampled[key], rel=1e-4, abs=1e-4), key
    assert any(abs(sampled[k] - every[k]) > 1e-6 for k in sampled if k.endswith("mi_estimate"))


# ---- the trainer's hook ---------------------------------------------------------------------------------
def composed(*overrides):
    """``baselines/verl/config/ragen_ppo.yaml`` on verl's config, for the legacy trainer, as Hydra composes it."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "baselines" / "verl" / "config"), version_base=None):
        return compose(config_name="ragen_ppo", overrides=["trainer.use_v1=false", "actor_rollout_ref.rollout.n=2",
                                                            "actor_rollout_ref.actor.ppo_mini_batch_size=2",
                                                            f"actor_rollout_ref.model.path={MODEL}",
                                                            "ragen.mi.every=2", "ragen.mi.samples=4", *overrides])  # fmt: skip


@pytest.fixture(scope="module")
def config():
    return composed()


def test_the_config_composes_on_verls_and_is_checked(config):
    from omegaconf import OmegaConf

    assert config.trainer.use_v1 is False and config.algorithm.adv_estimator == "grpo"
    assert config.actor_rollout_ref.actor.ppo_epochs == 1  # a key of verl's own config
    options = RagenOptions.from_config(config.ragen)
    assert (options.filter.mode, options.filter.value, options.mi.every) == ("top_p", 0.9, 2)
    check_trainer_config(config)
    for override, field in (("trainer.use_v1=true", "trainer.use_v1"),
                            ("algorithm.filter_groups.enable=true", "algorithm.filter_groups.enable"),
                            ("trainer.balance_batch=false", "trainer.balance_batch")):  # fmt: skip
        bad = OmegaConf.merge(config, OmegaConf.from_dotlist([override]))
        with pytest.raises(ValueError, match=field):
            check_trainer_config(bad)


def test_the_verl_entry_point_runs_verls_runner_with_the_subclass():
    from baselines.verl import main

    runner = main._legacy_runner_class()
    assert callable(runner.run) and issubclass(runner, main.main_ppo_v0.BaseTaskRunner)


class WorkerGroup:
    """The one thing _balance_batch asks of the actor worker group: its data-parallel layout."""

    def __init__(self, dp):
        self._dispatch_info = {"actor": list(range(dp))}


def hooked_trainer(config, tokenizer, model, calls, dp=2):
    """``RagenPPOTrainer`` without Ray workers (those need GPUs); the actor's log-probs from the tiny model."""
    trainer = RagenPPOTrainer.__new__(RagenPPOTrainer)
    trainer.config, trainer.tokenizer, trainer.ragen = config, tokenizer, RagenOptions.from_config(config.ragen)
    trainer.actor_rollout_wg, trainer._ragen_plan, trainer.global_steps = WorkerGroup(dp), None, 1
    trainer._ragen_streak = EmptyStreak(trainer.ragen.filter_stop_after_empty)
    trainer._compute_old_log_prob = lambda pairs: (
        DataProto.from_dict(tensors={"old_log_probs": actor_log_probs(model, calls)(pairs)}), 0.0)  # fmt: skip
    return trainer


def with_returns(batch: DataProto, returns: list[float]) -> DataProto:
    out = DataProto.from_dict(
        tensors={"rm_scores": torch.zeros((len(batch), 3)), "attention_mask": torch.ones((len(batch), 5)).long()},
        non_tensors={k: v.copy() for k, v in batch.non_tensor_batch.items()},
    )
    out.batch["rm_scores"][:, -1] = torch.tensor(returns)
    return out


def test_fit_hook_scores_mi_filters_in_place_and_sizes_the_update(config, tiny, mi_batch, monkeypatch):
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    model, tokenizer = tiny
    calls = []
    trainer = hooked_trainer(config, tokenizer, model, calls)
    trainer.global_steps = 3  # (3 - 1) % ragen.mi.every == 0: an MI step
    batch = with_returns(mi_batch, [0, 1, 1, 1, 0, 3])  # groups u0, u1, u2 of 2 samples; u1 has no spread
    metrics = {}
    trainer._balance_batch(batch, metrics)  # what fit() calls with the generated batch
    assert calls and metrics["collapse_first_turn/num_pairs"] > 0 and "collapse_trajectory/mi_estimate" in metrics
    assert metrics["collapse_first_turn/num_pairs"] == 4  # scored on the pre-filter batch (6 episodes, 4 drawn)
    returns = np.array([[0, 1], [1, 1], [0, 3.0]])
    kept = select_groups(returns, trainer.ragen.filter)
    assert sorted(set(batch.non_tensor_batch["uid"])) == sorted(f"u{g}" for g in kept) == ["u0", "u2"]
    assert len(batch) == 4 and metrics["rollout/filter_kept_ratio"] == pytest.approx(2 / 3)
    assert "global_seqlen/min" in metrics  # verl's own balancing then ran on the kept rows

    seen = []

    def update(self, data):
        seen.append((len(data), self.config.actor_rollout_ref.actor.ppo_mini_batch_size))
        return DataProto.from_single_dict(data={}, meta_info={"metrics": {"actor/pg_loss": 0.0}})

    monkeypatch.setattr(RayPPOTrainer, "_update_actor", update)
    out = trainer._update_actor(batch)
    assert seen == [(4, 2)] and out.meta_info["metrics"]["actor/optimizer_steps"] == 1
    # one kept group: one smaller mini-batch for that update, the configured size restored after it
    trainer.global_steps = 4
    single = with_returns(mi_batch, [0, 0, 1, 1, 0, 3])
    trainer._balance_batch(single, {})
    out = trainer._update_actor(single)
    assert seen[-1] == (2, 1) and config.actor_rollout_ref.actor.ppo_mini_batch_size == 2
    assert out.meta_info["metrics"]["actor/optimizer_steps"] == 1
    # nothing kept: the batch flows on whole, the update is skipped
    flat = with_returns(mi_batch, [1.0] * 6)
    metrics = {}
    trainer._balance_batch(flat, metrics)
    assert len(flat) == 6 and metrics["rollout/empty_after_filter"] == 1
    out = trainer._update_actor(flat)
    assert len(seen) == 2 and out.meta_info["metrics"]["actor/optimizer_steps"] == 0


# ---- apply: mask, the prefix grouper's plan, the pre-filter log, the stop ---------------------------------------
def merged(config, *dotlist):
    from omegaconf import OmegaConf

    return OmegaConf.merge(config, OmegaConf.from_dotlist(list(dotlist)))


def test_mask_keeps_the_batch_and_zeroes_the_dropped_groups_response_mask(config, tiny, mi_batch, monkeypatch):
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    model, tokenizer = tiny
    trainer = hooked_trainer(merged(config, "ragen.filter.apply=mask", "ragen.mi.every=0"), tokenizer, model, [])
    batch = with_returns(mi_batch, [0, 1, 1, 1, 0, 3])  # u1 has no spread
    batch.batch["response_mask"] = torch.ones((len(batch), 3), dtype=torch.long)
    metrics = {}
    trainer._balance_batch(batch, metrics)
    assert len(batch) == 6 and metrics["rollout/filter_kept_count"] == 2  # shapes kept
    for uid, mask in zip(batch.non_tensor_batch["uid"], batch.batch["response_mask"].tolist(), strict=True):
        assert mask == ([0, 0, 0] if uid == "u1" else [1, 1, 1]), uid
    seen = []
    monkeypatch.setattr(RayPPOTrainer, "_update_actor", lambda self, data: seen.append(
        (len(data), self.config.actor_rollout_ref.actor.ppo_mini_batch_size)) or DataProto.from_single_dict(
        data={}, meta_info={"metrics": {}}))  # fmt: skip
    trainer._update_actor(batch)
    assert seen == [(6, 2)]  # verl's own mini-batch size: nothing trimmed


def test_prefix_grouper_trims_to_whole_groups_per_rank(config, tiny, mi_batch):
    assert update_plan(3, 4, 2, 2) == (3, 3)  # rows split over 2 ranks with any group count
    assert update_plan(3, 4, 2, 2, whole_groups_per_rank=True) == (2, 2)  # the prefix grouper: groups split
    assert update_plan(9, 4, 2, 2, whole_groups_per_rank=True) == (8, 4)
    with pytest.raises(ValueError, match=r"use_prefix_grouper.*ppo_mini_batch_size \(3\) must be a multiple of.*\(2\)"):
        update_plan(5, 3, 2, 2, whole_groups_per_rank=True)
    model, tokenizer = tiny
    for grouper, groups in ((False, 3), (True, 2)):
        settings = merged(config, "ragen.mi.every=0", "actor_rollout_ref.actor.ppo_mini_batch_size=4",
                          f"actor_rollout_ref.actor.use_prefix_grouper={str(grouper).lower()}")  # fmt: skip
        batch = with_returns(mi_batch, [0, 1, 0, 2, 0, 3])  # three groups, all kept by top-p 0.9
        trainer = hooked_trainer(settings, tokenizer, model, [], dp=2)
        metrics = {}
        trainer.ragen_step(batch, metrics)
        assert len(set(batch.non_tensor_batch["uid"])) == groups
        assert metrics["rollout/filter_trimmed_count"] == 3 - groups


def test_the_pre_filter_batch_is_logged(config, tiny, mi_batch):
    model, tokenizer = tiny
    trainer = hooked_trainer(merged(config, "ragen.mi.every=0"), tokenizer, model, [])
    returns = [0, 1, 1, 1, 0, 3]
    batch = with_returns(mi_batch, returns)
    batch.non_tensor_batch["success"] = np.array([0.0, 1.0, 1.0, 1.0, 0.0, 1.0])
    metrics = {}
    trainer._balance_batch(batch, metrics)
    assert len(batch) == 4  # u1 dropped: what verl's critic/score/mean then describes
    assert metrics["ragen/prefilter/score_mean"] == pytest.approx(np.mean(returns))
    assert metrics["ragen/prefilter/score_max"] == 3 and metrics["ragen/prefilter/score_min"] == 0
    assert metrics["ragen/prefilter/success"] == pytest.approx(4 / 6) and metrics["ragen/prefilter/groups"] == 3


def test_five_empty_steps_in_a_row_end_fit(config, tiny, mi_batch, monkeypatch):
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    model, tokenizer = tiny
    trainer = hooked_trainer(merged(config, "ragen.mi.every=0"), tokenizer, model, [])
    streaks = []
    for returns in ([1.0] * 6, [1.0] * 6, [0, 1, 1, 1, 0, 3], [1.0] * 6):  # a kept group resets the count
        metrics = {}
        trainer._balance_batch(with_returns(mi_batch, returns), metrics)
        streaks.append(metrics["ragen/filter/empty_streak"])
    assert streaks == [1, 2, 0, 1]
    steps = []

    def fit(self):  # verl's loop, as far as the hook sees it: one generated batch per step, forever
        while True:
            steps.append(len(steps))
            self._balance_batch(with_returns(mi_batch, [1.0] * 6), {})

    monkeypatch.setattr(RayPPOTrainer, "fit", fit)
    assert trainer.fit() is None and len(steps) == 4  # the 5th empty selection in a row (1 carried over)
    assert "5 consecutive steps" in trainer.ragen_stopped
    never = hooked_trainer(merged(config, "ragen.mi.every=0", "ragen.filter.stop_after_empty=0"), tokenizer, model, [])
    for _ in range(7):
        never._balance_batch(with_returns(mi_batch, [1.0] * 6), {})


# ---- the upstream ports' keys --------------------------------------------------------------------------------
def test_upstream_keys_map_onto_the_filter_and_rank_by_variance():
    # g0's spread dwarfs the others': the variance's squares weigh it more than the std does
    returns = np.array([[0.0, 0.0, 20.0, 20.0], [0.0, 0.0, 2.0, 2.0], [0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.5, 0.5]])
    ragen = RagenOptions()  # RAGEN's trainer: top-p 0.9 of the summed std
    upstream = RagenOptions.from_config({}, {"enable": True, "strategy": "top_p", "top_p": 0.9})
    assert (upstream.filter.spread, upstream.filter.mode, upstream.apply) == ("var", "top_p", "mask")
    by_std = snr_filter(generated_batch(returns), ragen, mini_batch_groups=1)
    by_var = snr_filter(generated_batch(returns), upstream, mini_batch_groups=1)
    uid = generated_batch(returns).non_tensor_batch["uid"]
    assert sorted({uid[r] for r in by_std.rows}) == ["u0", "u1"]  # std: 11.5 + 1.2 of 13.6 reach 0.9
    assert sorted({uid[r] for r in by_var.rows}) == ["u0"] and len(by_var.dropped) == 12  # variance: 133 of 135 does
    # the ports' own rule on their kind of example: variance mass top-p, and a fixed top-k
    spread3 = np.array([[-3.0, 3.0], [-2.0, 2.0], [-1.0, 1.0], [4.0, 4.0]])  # variances 18, 8, 2, 0
    top_p = RagenOptions.from_config({}, {"enable": True, "top_p": 0.8, "selection_eps": 0.0})
    assert select_groups(spread3, top_p.filter).tolist() == [0, 1]  # 26 of 28 >= 22.4
    top_k = RagenOptions.from_config({}, {"enable": True, "strategy": "top_k", "top_k": 3, "include_zero": True})
    assert select_groups(spread3, top_k.filter).tolist() == [0, 1, 2]
    assert RagenOptions.from_config({}, {"enable": False}).filter_enable is False
    assert RagenOptions.from_config({"filter": {"apply": "trim"}}, {"enable": True}).apply == "trim"
    assert upstream_filter({})["enable"] is False  # the ports' default: off
    # variance_ddof: the population variance halves a pair's spread but not the slack, so it can keep fewer groups
    pairs = np.array([[0.0, 1.0], [0.0, 0.38]])  # sample variances 0.5, 0.072; population 0.25, 0.036
    sample = RagenOptions.from_config({}, {"enable": True})
    population = RagenOptions.from_config({}, {"enable": True, "variance_ddof": 0})
    assert select_groups(pairs, sample.filter).tolist() == [0, 1]  # 0.5 < 0.9 * 0.572 - 0.01
    assert select_groups(pairs, population.filter).tolist() == [0]  # 0.25 >= 0.9 * 0.286 - 0.01


def test_upstream_key_mistakes_name_the_fix():
    with pytest.raises(ValueError, match="set the filter rule in one place"):
        RagenOptions.from_config({"filter": {"value": 0.5}}, {"enable": True})
    with pytest.raises(ValueError, match="unknown key algorithm.reward_variance_filtering.topp; allowed"):
        upstream_filter({"topp": 0.9})
    with pytest.raises(ValueError, match="reward_variance_filtering.strategy must be one of"):
        upstream_filter({"strategy": "min_p"})
    with pytest.raises(ValueError, match=r"variance_ddof must be one of \(0, 1\), got 2"):
        upstream_filter({"variance_ddof": 2})
    from baselines.verl import main
    from baselines.verl.filtering import options_from_config

    # verl's command line adds the section with "+", as for any key its config lacks
    upstream = composed("+algorithm.reward_variance_filtering.enable=true",
                        "+algorithm.reward_variance_filtering.strategy=top_k", "+algorithm.reward_variance_filtering.top_k=2")  # fmt: skip
    main.check_config(upstream)
    options = options_from_config(upstream)
    assert (options.filter.mode, options.filter.value, options.apply) == ("top_k_abs", 2.0, "mask")
