"""TRL adapter: GRPOTrainer trains the tiny model on multi-turn Sokoban with the SNR filter and the MI callback."""

import math
import os

import numpy as np
import pytest

from tests.helpers.paths import TINY_MODEL

pytest.importorskip("trl", reason="needs the trl extra: pip install 'ragen-envs[trl]'")
torch = pytest.importorskip("torch")

from baselines.algos.filter import select_groups  # noqa: E402
from baselines.trl import EnvRollout, MICallback, SNRFilterGRPOTrainer, episode_return, make_dataset  # noqa: E402
from baselines.trl.compat import require_trl  # noqa: E402

pytestmark = pytest.mark.slow

MODEL = str(TINY_MODEL)
ENV = "ragen/Sokoban-v0"
GROUPS, SAMPLES = 4, 4


class RecordingTrainer(SNRFilterGRPOTrainer):
    """Keeps each generation batch's trainer inputs, to check what the loss sees."""

    def _generate_and_score_completions(self, inputs):
        out = super()._generate_and_score_completions(inputs)
        self.batches = getattr(self, "batches", []) + [
            {"out": {k: v.clone() if torch.is_tensor(v) else v for k, v in out.items()}, "kept": self.last_kept_groups}
        ]
        return out


def _trainer(tmp_path, **config):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    model = AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32)
    rollout = EnvRollout(ENV, max_turns=2, max_new_tokens=40, seed=3)
    args = GRPOConfig(
        output_dir=str(tmp_path), use_cpu=True, per_device_train_batch_size=GROUPS * SAMPLES, num_generations=SAMPLES,
        max_steps=2, logging_steps=1, learning_rate=5e-5, seed=0, save_strategy="no", max_completion_length=40,
        dataloader_num_workers=0, **{"report_to": "none", "gradient_checkpointing": False, **config},
    )  # fmt: skip
    mi = MICallback(rollout, every=1, samples=16)
    trainer = RecordingTrainer(
        model=model, args=args, processing_class=tokenizer, reward_funcs=episode_return,
        train_dataset=make_dataset(ENV, range(8), env_kwargs={"max_turns": 2}), rollout_func=rollout, callbacks=[mi],
        filter_mode="top_p", filter_value=0.9,
    )  # fmt: skip
    return trainer, rollout, mi


def _play(tmp_path, report_to="none"):
    torch.set_num_threads(1)
    trainer, rollout, mi = _trainer(tmp_path, report_to=report_to)
    batches = []
    real = trainer.rollout_func

    def recording(prompts, t):
        out = real(prompts, t)
        batches.append((list(rollout.last.episodes), out))
        return out

    trainer.rollout_func = recording
    trainer.train()
    logs = [row for row in trainer.state.log_history if "loss" in row]
    return trainer, batches, logs, mi


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two identical runs; the first also reports to TensorBoard and to an offline W&B run."""
    wandb = pytest.importorskip("wandb")
    pytest.importorskip("tensorboard")
    wandb.teardown()  # W&B reads WANDB_DIR once per process setup: start a fresh one
    first = tmp_path_factory.mktemp("trl0")
    saved = {k: os.environ.get(k) for k in ("WANDB_MODE", "WANDB_DIR", "WANDB_SILENT", "WANDB_PROJECT")}
    os.environ.update(WANDB_MODE="offline", WANDB_DIR=str(first), WANDB_SILENT="true", WANDB_PROJECT="ragen-tests")
    try:
        played = [_play(first, report_to=["tensorboard", "wandb"])]
    finally:
        wandb.teardown()
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)
    played.append(_play(tmp_path_factory.mktemp("trl1")))
    return played, first


def test_two_steps_train_on_the_kept_groups_only(runs):
    trainer, batches, logs, _ = runs[0][0]
    assert len(logs) == 2 and len(batches) == 2
    for row, (episodes, out), recorded in zip(logs, batches, trainer.batches, strict=True):
        assert math.isfinite(row["loss"])
        returns = np.array([e.episode_return for e in episodes]).reshape(GROUPS, SAMPLES)
        kept = select_groups(returns, mode="top_p", value=0.9)
        assert list(recorded["kept"]) == list(kept)
        assert row["rollout/filter_kept_ratio"] == pytest.approx(len(kept) / GROUPS)
        loss_mask = recorded["out"]["completion_mask"] * recorded["out"]["tool_mask"]
        for index in range(GROUPS * SAMPLES):
            row_tokens = int(loss_mask[index].sum())
            if index // SAMPLES in kept:
                assert row_tokens == sum(out["env_mask"][index])  # every model token, no env token
            else:
                assert row_tokens == 0
        assert int(recorded["out"]["num_items_in_batch"]) == int(loss_mask.sum())
        if len(kept):
            assert row["grad_norm"] > 0
        # TRL counts only model tokens (env_mask 1) as completion length
        assert row["completions/mean_length"] == pytest.approx(np.mean([sum(m) for m in out["env_mask"]]))
        assert row["reward"] == pytest.approx(returns.mean(), abs=1e-5)


def test_env_turns_are_masked_and_responses_carry_their_logprobs(runs):
    trainer, batches, _, _ = runs[0][0]
    tokenizer = trainer.processing_class
    episodes, out = batches[0]
    multi = [i for i, e in enumerate(episodes) if len(e.turns) > 1]
    assert multi, "some episode should last two turns"
    for i in multi:
        episode, mask, ids, logprobs = episodes[i], out["env_mask"][i], out["completion_ids"][i], out["logprobs"][i]
        model_tokens = [t for t, m in zip(ids, mask, strict=True) if m]
        assert model_tokens == [t for turn in episode.turns for t in turn.response_ids]
        assert [lp for lp, m in zip(logprobs, mask, strict=True) if m] == pytest.approx(
            [lp for turn in episode.turns for lp in turn.sample_logprobs]
        )
        env_text = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if not m])
        assert "Turn 2:" in env_text and "<think>" in env_text  # the env's turn and the next prefill, masked
        assert out["prompt_ids"][i] == episode.turns[0].prompt_ids
        assert tokenizer.decode(out["prompt_ids"][i]).endswith("<think>")
        assert out["env_return"][i] == episode.episode_return


def test_groups_share_their_env_seed(runs):
    _, batches, _, _ = runs[0][0]
    episodes, _ = batches[0]
    seeds = np.array([e.env_seed for e in episodes]).reshape(GROUPS, SAMPLES)
    assert (seeds == seeds[:, :1]).all() and len(set(seeds[:, 0])) == GROUPS


def test_mi_callback_logs_the_family_every_step(runs):
    _, _, logs, mi = runs[0][0]
    assert len(mi.history) == 2
    for row in logs:
        for key in ("collapse_first_turn/mi_estimate", "collapse_trajectory/mi_estimate",
                    "collapse_first_turn/retrieval_accuracy"):  # fmt: skip
            assert math.isfinite(row[key])


def test_same_seed_same_run(runs):
    (_, batches_a, logs_a, mi_a), (_, batches_b, logs_b, mi_b) = runs[0]
    for (_, a), (_, b) in zip(batches_a, batches_b, strict=True):
        assert a["completion_ids"] == b["completion_ids"] and a["env_return"] == b["env_return"]
    for a, b in zip(logs_a, logs_b, strict=True):
        assert a["loss"] == b["loss"] and a["grad_norm"] == b["grad_norm"]
    untimed = [
        [{k: v for k, v in row.items() if not k.startswith("timing/")} for row in m.history] for m in (mi_a, mi_b)
    ]
    assert untimed[0] == untimed[1]


def test_filter_and_mi_metrics_reach_tensorboard_and_wandb(runs):
    from tests.helpers.trackers import tensorboard_tags, wandb_history

    (_, _, logs, _), _ = runs[0]
    out = runs[1]
    history = [row for row in wandb_history(out, 2) if "train/loss" in row]
    assert [row["train/global_step"] for row in history] == [1, 2]
    for row, logged in zip(history, logs, strict=True):
        assert row["train/collapse_first_turn/mi_estimate"] == pytest.approx(logged["collapse_first_turn/mi_estimate"])
        assert row["train/rollout/filter_kept_ratio"] == pytest.approx(logged["rollout/filter_kept_ratio"])
    assert {"train/collapse_trajectory/mi_estimate", "train/rollout/filter_kept_ratio"} <= tensorboard_tags(out)


# ---- bad input ------------------------------------------------------------------------------------------------
def test_unknown_env_and_bad_kwargs_name_the_fix():
    with pytest.raises(ValueError, match="Did you mean 'ragen/Sokoban-v0'"):
        EnvRollout("ragen/Sokobn-v0")
    with pytest.raises(ValueError, match="max_turn"):
        EnvRollout(ENV, env_kwargs={"max_turn": 3})
    with pytest.raises(ValueError, match="max_turns"):
        make_dataset(ENV, [0], env_kwargs={"max_turns": 0})
    with pytest.raises(ValueError, match="env seeds"):
        make_dataset(ENV, [-1])


def test_prompts_without_a_seed_are_refused(tmp_path):
    trainer, rollout, _ = _trainer(tmp_path)
    with pytest.raises(ValueError, match="make_dataset"):
        rollout([[{"role": "user", "content": "hi"}]], trainer)
    with pytest.raises(ValueError, match="built for ragen/Bandit-v0"):
        rollout(make_dataset("ragen/Bandit-v0", [0])["prompt"], trainer)


def test_unsupported_trainer_settings_are_refused(tmp_path):
    with pytest.raises(ValueError, match="loss_type must be one of"):
        _trainer(tmp_path, loss_type="grpo")
    trainer, rollout, _ = _trainer(tmp_path, top_p=0.9)
    with pytest.raises(ValueError, match="top_p=0.9 is not supported"):
        rollout(trainer.train_dataset["prompt"][:2], trainer)


def test_untested_trl_minor_names_the_pin(monkeypatch):
    import trl

    monkeypatch.setattr(trl, "__version__", "1.17.0")
    monkeypatch.delenv("RAGEN_TRL_ANY_VERSION", raising=False)
    with pytest.raises(ImportError, match=r"trl~=1\.16\.0"):
        require_trl()
    monkeypatch.setenv("RAGEN_TRL_ANY_VERSION", "1")
    assert require_trl() is trl


def test_the_tool_format_passes_through_the_rollout(tmp_path):
    from ragen_envs.parsing import reasoning_of

    torch.set_num_threads(1)
    trainer, _, _ = _trainer(tmp_path)
    kwargs = {"response_format": "tool"}
    rollout = EnvRollout(ENV, env_kwargs=kwargs, max_turns=2, max_new_tokens=16, seed=3)
    prompts = [row["prompt"] for row in make_dataset(ENV, [5], env_kwargs=kwargs)] * 2
    out = rollout(prompts, trainer)
    assert len(out["prompt_ids"]) == 2
    assert "<tools>" in trainer.processing_class.decode(out["prompt_ids"][0])
    assert all(e.turns[0].context.prefill == "" for e in rollout.last.episodes)  # no <think> prefill
    # the MI callback's records read Z with the tool format's rule
    from baselines.algos.mi import episode_records

    records = episode_records(rollout.last.episodes, rollout.settings(trainer, 2))
    assert all(t["reasoning"] == reasoning_of(t["response"], "tool") for r in records for t in r["turns"])
    assert out["env_return"] == [e.episode_return for e in rollout.last.episodes]


def test_the_random_drop_control_and_mi_options_reach_trl(tmp_path):
    """The learner's ``FilterOptions(selection="random")`` and ``MIOptions`` (column sampling, schemes, the fixed
    probe) in a TRL step: the kept groups are the seeded draw, the MI the policy's family under those options."""
    from dataclasses import replace

    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from baselines.algos import FilterOptions, MIOptions, mi_family
    from baselines.algos.filter import random_groups
    from harness.seeding import derive_seed

    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    torch.set_num_threads(1)
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    model = AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32)
    rollout = EnvRollout(ENV, max_turns=2, max_new_tokens=40, seed=3)
    args = GRPOConfig(
        output_dir=str(tmp_path), use_cpu=True, per_device_train_batch_size=GROUPS * SAMPLES, num_generations=SAMPLES,
        max_steps=1, learning_rate=5e-5, seed=1, save_strategy="no", max_completion_length=40, report_to="none",
        gradient_checkpointing=False, dataloader_num_workers=0,
    )  # fmt: skip
    options = MIOptions(every=1, samples=16, columns=2, schemes=("first_turn",), probe_seeds=2, probe_samples=2)
    mi = MICallback(rollout, options, seed=4)
    trainer = RecordingTrainer(
        model=model, args=args, processing_class=tokenizer, reward_funcs=episode_return, callbacks=[mi],
        train_dataset=make_dataset(ENV, range(8), env_kwargs={"max_turns": 2}), rollout_func=rollout,
        filter=FilterOptions(selection="random"),
    )  # fmt: skip
    trainer.train()
    [recorded] = trainer.batches
    episodes = rollout.last.episodes
    returns = np.array([e.episode_return for e in episodes]).reshape(GROUPS, SAMPLES)
    by_spread = select_groups(returns)
    drawn = random_groups(GROUPS, len(by_spread), np.random.default_rng(derive_seed("train-random-drop", 1, 0)))
    assert list(recorded["kept"]) == drawn.tolist() and drawn.tolist() != by_spread.tolist()
    [row] = mi.history
    assert row["probe_first_turn/num_pairs"] > 0 and "collapse_trajectory/num_pairs" not in row
    initial = AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32).eval()  # the policy that sampled
    spec = rollout.settings(trainer, SAMPLES)

    def family(mi_options):
        draws = np.random.default_rng(derive_seed("train-mi", 4, 0))
        with torch.no_grad():
            return mi_family(initial, tokenizer, episodes, spec, mi_options, draws)

    again = family(options)  # the trainer's forward passes batch differently: equal to scoring precision
    assert {key: row[key] for key in again} == pytest.approx(again, rel=1e-2, abs=1e-3)
    every_column = family(replace(options, columns=None))
    # column sampling moves the estimate by more than twice that precision
    assert any(abs(again[k] - every_column[k]) > 0.02 for k in again if k.endswith("mi_estimate"))


def test_episodes_are_sampled_the_way_trl_generates(tmp_path):
    """Inside TRL's ``unwrap_model_for_generation``: gradient checkpointing (GRPOConfig's default) off and no
    gradients while the policy samples, both restored afterwards; observed with a forward hook on the policy."""
    torch.set_num_threads(1)
    trainer, rollout, _ = _trainer(tmp_path, gradient_checkpointing=True)
    args = trainer.args
    policy = trainer.accelerator.unwrap_model(trainer.model)
    policy.gradient_checkpointing_enable(args.gradient_checkpointing_kwargs)  # as Trainer.train() does first
    policy.train()
    assert policy.is_gradient_checkpointing and policy.training
    seen = []
    hook = policy.register_forward_pre_hook(
        lambda module, _: seen.append((module.is_gradient_checkpointing, torch.is_grad_enabled(), module.training))
    )
    try:
        rollout(trainer.train_dataset["prompt"][:2], trainer)
    finally:
        hook.remove()
    assert seen and set(seen) == {(False, False, False)}
    assert policy.is_gradient_checkpointing and policy.training


@pytest.mark.parametrize(
    "setup, refused",
    [
        (dict(use_vllm=False, vllm_mode=None, tensor_parallel=1, fsdp=False, zero3=False, ds3_gather=True), None),
        (dict(use_vllm=False, vllm_mode=None, tensor_parallel=1, fsdp=False, zero3=True, ds3_gather=True), None),
        (dict(use_vllm=True, vllm_mode="colocate", tensor_parallel=1, fsdp=True, zero3=False, ds3_gather=True), None),
        (dict(use_vllm=True, vllm_mode="server", tensor_parallel=4, fsdp=False, zero3=True, ds3_gather=False), None),
        (
            dict(use_vllm=True, vllm_mode="colocate", tensor_parallel=2, fsdp=False, zero3=False, ds3_gather=True),
            "vllm_mode='server', or set vllm_tensor_parallel_size=1",
        ),
        (
            dict(use_vllm=False, vllm_mode=None, tensor_parallel=1, fsdp=True, zero3=False, ds3_gather=True),
            "set use_vllm=True",
        ),
        (
            dict(use_vllm=False, vllm_mode=None, tensor_parallel=1, fsdp=False, zero3=True, ds3_gather=False),
            "set ds3_gather_for_generation=True",
        ),
    ],
)
def test_set_ups_the_sampling_cannot_follow_are_refused_with_the_fix(setup, refused):
    from baselines.trl.generation import generation_refusal

    reason = generation_refusal(**setup)
    assert (reason is None) if refused is None else (refused in reason)
