"""Our learner's GRPO iteration against TRL's ``GRPOTrainer`` step with our adapter, side by side.

    python benchmarks/bench_trainers.py                 # every setting below
    python benchmarks/bench_trainers.py --rounds 6 --envs sokoban,sokoban-native

Same model (the shipped tiny one), same batch (8 prompts x 8 samples, one optimiser step per batch), same
per-turn token budget, same sampler (the adapter plays episodes with the learner's rollout loop), same precision
(``--precision``: ``fp32`` runs TRL with ``bf16=False`` beside the learner's ``float32``; ``bf16`` runs TRL's
default ``bf16=True``, accelerate's bf16 autocast around every forward of the prepared model, its rollouts'
included, beside the learner's ``bfloat16-autocast``, bf16 in the update only), one torch thread, no SNR filter
and no MI in either (``filter_value=1.0``, plain ``GRPOTrainer``), KL off, TRL's gradient checkpointing off (its
default is on; on CPU it only adds recomputation). The two alternate round by round in one process: a TRL
callback times each TRL step (``on_step_begin`` to ``on_step_end``: generation, loss, backward, optimiser step)
and then runs and times one learner iteration, so both see the same load.
Round 0 of each is a warm-up and not counted; medians of the rest, with the load average seen at each round.
``bandit`` and ``sokoban`` are the default envs (what users run; Sokoban lasts up to 5 turns on a 67-token first
prompt); ``sokoban3`` is the 3-turn setting (``max_turns=3`` changes the instruction text, which the tiny
tokenizer then spells out: a 389-token first prompt). ``*-native`` replace the adapter with TRL as a TRL user
runs it: its own single-turn generation (``transformers`` ``generate`` on the rendered first prompt) and a
reward function that steps the env once; the learner plays its whole episodes there (on Bandit, an episode
whose answer names no arm plays on, up to 5 turns). ``bandit1-native`` and ``sokoban1-native`` give both the
same work: ``max_turns=1``, so the learner's episodes are one turn too (Bandit's prompt text is unchanged by it;
Sokoban's instruction then names the turn budget, which the tiny tokenizer spells out, as in ``sokoban3``).
``*-trlgen`` give both the same multi-turn work with TRL sampling as it samples itself: the adapter plays the
episodes, but every turn's responses come from TRL's own generation (``GRPOTrainer._generate_single_turn``:
``transformers`` ``generate`` on the left-padded batch of whole histories, stopping at EOS, the per-turn budget),
which is what TRL's multi-turn loop (``environment_factory``'s tool calls) does each turn; that loop itself needs
a model that calls tools, which the tiny model is not. TRL's sampling draws from the global torch generator, not
per-row seeds, so its episodes are not reproducible row by row.

What each does per step: the learner rolls out, builds one row per episode and runs micro-batches of 16 rows
(forward + backward) into one optimiser step, without an old log-prob pass (one step on the whole batch is
on-policy: the loss's own log-probs, detached, are the old ones); TRL calls the rollout function, skips old
log-probs the same way (one step per generation), and runs its loss over the 64 rows
in 4 accumulated forward + backward passes of 16 (``--trl-rows-per-pass 64`` for one pass, TRL's simplest
config, which is much slower here: one padded 64-row batch of ~700 positions).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

MODEL = Path(__file__).resolve().parents[1] / "baselines" / "tiny" / "model"
ENVS = {
    "bandit": ("ragen/Bandit-v0", {}),
    "sokoban": ("ragen/Sokoban-v0", {}),
    "sokoban3": ("ragen/Sokoban-v0", {"max_turns": 3}),
    "bandit-native": ("ragen/Bandit-v0", {}),
    "bandit1-native": ("ragen/Bandit-v0", {"max_turns": 1}),
    "sokoban-native": ("ragen/Sokoban-v0", {}),
    "sokoban1-native": ("ragen/Sokoban-v0", {"max_turns": 1}),
    "bandit-trlgen": ("ragen/Bandit-v0", {}),
    "sokoban-trlgen": ("ragen/Sokoban-v0", {}),
    "sokoban3-trlgen": ("ragen/Sokoban-v0", {"max_turns": 3}),
}
"""Name → (env id, env kwargs); ``*-native``: TRL without the adapter (its own ``generate``, an env reward function);
``*-trlgen``: the adapter's episodes, every turn sampled by TRL's own generation."""
PROMPTS, SAMPLES = 8, 8
PRECISIONS = {"fp32": (False, "float32"), "bf16": (True, "bfloat16-autocast")}
"""``--precision`` → (TRL's ``bf16`` flag, the learner's ``dtype``)."""
MICRO = 16
"""Rows per forward/backward in both: the learner's micro-batch, TRL's per-device batch (with gradient
accumulation over the 64 rows of a generation batch, still one optimiser step per batch)."""


def _max_turns(env_id: str, env_kwargs: dict) -> int:
    import gymnasium as gym

    import ragen_envs  # noqa: F401  (registers the ids)

    return int(gym.make(env_id, **env_kwargs).unwrapped.max_turns)


def _learner(env_id: str, env_kwargs: dict, rounds: int, tokens: int, out: Path, precision: str):
    """The learner both comparisons time: GRPO on the benchmark's batch, no filter and no MI, one thread."""
    from baselines.ppo.config import preset
    from baselines.ppo.trainer import Trainer

    return Trainer(
        preset(
            "cpu-tiny", model=str(MODEL), env_id=env_id, env_kwargs=env_kwargs, advantage="grpo", filter_value=1.0,
            mi_every=0, max_new_tokens=tokens, prompts_per_iteration=PROMPTS, samples_per_prompt=SAMPLES,
            minibatch_size=PROMPTS * SAMPLES, micro_batch_size=MICRO, cpu_threads=1, checkpoint_every=0,
            iterations=rounds, out_dir=str(out), tensorboard=False, dtype=PRECISIONS[precision][1],
        )
    )  # fmt: skip


def _grpo_args(out: Path, rounds: int, completion_tokens: int, trl_rows: int, precision: str):
    """TRL's ``GRPOConfig`` for both comparisons: the same batch as the learner's in one optimiser step, KL and
    gradient checkpointing off, ``bf16`` as ``precision`` says."""
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(out), use_cpu=True, per_device_train_batch_size=trl_rows,
        gradient_accumulation_steps=PROMPTS * SAMPLES // trl_rows, num_generations=SAMPLES, max_steps=rounds,
        logging_steps=1, report_to="none", learning_rate=2e-5, seed=0, save_strategy="no",
        max_completion_length=completion_tokens, gradient_checkpointing=False, beta=0.0,
        bf16=PRECISIONS[precision][0], dataloader_num_workers=0, disable_tqdm=True,
    )  # fmt: skip


def _trl_generation_rollout():
    """:class:`baselines.trl.EnvRollout` whose turns TRL samples with its own generation (see the module docstring)."""
    import contextlib

    from baselines.trl import EnvRollout
    from harness.lm.generation import Decoded

    class TRLGenerationRollout(EnvRollout):
        @contextlib.contextmanager
        def sampling(self, trainer, temperature, max_new_tokens):
            eos = set(trainer.eos_token_ids)

            def sample(prompts, seeds):
                ids, _ = trainer._generate_single_turn([list(p) for p in prompts], None, {}, num_generations=1)
                # TRL's transformers path keeps no log-probs (it recomputes them in the loss)
                return [Decoded(tuple(c), (0.0,) * len(c), (), bool(c) and c[-1] in eos) for c in ids]

            yield None, sample

    return TRLGenerationRollout


def run_env(
    env_id: str, env_kwargs: dict, rounds: int, tokens: int, out: Path, trl_rows: int = MICRO, precision: str = "fp32",
    trl_generation: bool = False,
) -> dict:  # fmt: skip
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOTrainer

    from baselines.trl import EnvRollout, episode_return, make_dataset

    torch.set_num_threads(1)
    max_turns = _max_turns(env_id, env_kwargs)
    ours = _learner(env_id, env_kwargs, rounds, tokens, out / "ours", precision)
    rollout = (_trl_generation_rollout() if trl_generation else EnvRollout)(
        env_id, env_kwargs=env_kwargs, max_new_tokens=tokens, seed=0
    )
    rollout_seconds: list[float] = []

    def timed_rollout(prompts, trainer):
        start = time.perf_counter()
        result = rollout(prompts, trainer)
        rollout_seconds.append(time.perf_counter() - start)
        return result

    timings: dict[str, list] = {"trl": [], "ours": [], "ours_rows": [], "trl_tokens": [], "load": []}

    class Interleave(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            timings["trl"].append(time.perf_counter() - self.start)
            timings["trl_tokens"].append(
                sum(len(t.response_ids) for e in rollout.last.episodes for t in e.turns) / len(rollout.last.episodes)
            )
            start = time.perf_counter()
            row = ours.iteration(len(timings["ours"]))
            timings["ours"].append(time.perf_counter() - start)
            timings["ours_rows"].append(row)
            timings["load"].append(os.getloadavg()[0])

    args = _grpo_args(out / "trl", rounds, tokens * max_turns, trl_rows, precision)
    trl_trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32), args=args,
        processing_class=AutoTokenizer.from_pretrained(MODEL), reward_funcs=episode_return,
        train_dataset=make_dataset(env_id, range(PROMPTS * rounds), env_kwargs=env_kwargs),
        rollout_func=timed_rollout, callbacks=[Interleave()],
    )  # fmt: skip
    if trl_generation:  # each of TRL's generate calls is one turn: the per-turn budget, as the learner's
        trl_trainer.generation_config.max_new_tokens = tokens
    trl_trainer.train()

    ours_rows = timings["ours_rows"]
    result = {
        "env": f"{env_id} (TRL's own generate, every turn)" if trl_generation else env_id, "precision": precision, "turns": max_turns, "trl_rows_per_pass": trl_rows, "tokens_per_turn": tokens, "rounds_timed": len(timings["ours"]) - 1,
        "ours_s": _median(timings["ours"]), "trl_s": _median(timings["trl"]),
        "ours_rollout_s": _median([r["timing/rollout_s"] for r in ours_rows]),
        "ours_update_s": _median([r["timing/update_s"] for r in ours_rows]),
        "trl_rollout_s": _median(rollout_seconds),
        "ours_response_tokens_per_episode": _median(
            [r["rollout/response_tokens"] * r["rollout/turns"] for r in ours_rows]
        ),
        "trl_response_tokens_per_episode": _median(timings["trl_tokens"]),
        "ours_all_s": timings["ours"], "trl_all_s": timings["trl"], "load": timings["load"],
    }  # fmt: skip
    result["trl_update_s"] = result["trl_s"] - result["trl_rollout_s"]
    result["trl_over_ours"] = result["trl_s"] / result["ours_s"]
    return result


def run_trl_native(
    env_id: str, env_kwargs: dict, rounds: int, tokens: int, out: Path, trl_rows: int = MICRO, precision: str = "fp32"
) -> dict:
    """TRL's own single-turn generation (``transformers`` ``generate``, no ``rollout_func``) with a reward
    function that steps the env once on each completion, against the learner's whole episodes, interleaved the
    same way."""
    import gymnasium as gym
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOTrainer

    from baselines.env_check import first_turn_chat
    from harness.agents.base import Context
    from harness.transcript import render_prompt

    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    ours = _learner(env_id, env_kwargs, rounds, tokens, out / "ours", precision)
    rows = []
    for seed in range(PROMPTS * rounds):  # the same rendered prompt (chat template + prefill) as the learner's
        messages, prefill = first_turn_chat(env_id, env_kwargs, seed)
        rows.append({"prompt": render_prompt(tokenizer, Context(tuple(messages), prefill)), "env_seed": seed,
                     "prefill": prefill})  # fmt: skip

    def env_reward(prompts, completions, env_seed, prefill, **_):
        returns = []
        for completion, seed, start in zip(completions, env_seed, prefill, strict=True):
            env = gym.make(env_id, **env_kwargs)
            env.reset(seed=seed)
            returns.append(float(env.step(start + completion)[1]))
        return returns

    timings: dict[str, list] = {"trl": [], "ours": [], "ours_rows": [], "load": []}

    class Interleave(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            timings["trl"].append(time.perf_counter() - self.start)
            start = time.perf_counter()
            timings["ours_rows"].append(ours.iteration(len(timings["ours"])))
            timings["ours"].append(time.perf_counter() - start)
            timings["load"].append(os.getloadavg()[0])

    args = _grpo_args(out / "trl_native", rounds, tokens, trl_rows, precision)
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32), args=args, processing_class=tokenizer,
        reward_funcs=env_reward, train_dataset=Dataset.from_list(rows), callbacks=[Interleave()],
    )  # fmt: skip
    trainer.train()
    logged = [row for row in trainer.state.log_history if "completions/mean_length" in row]
    ours_rows = timings["ours_rows"]
    result = {
        "env": f"{env_id} (TRL's own generate, first turn)", "precision": precision,
        "turns": _max_turns(env_id, env_kwargs),
        "trl_rows_per_pass": trl_rows, "tokens_per_turn": tokens,
        "rounds_timed": len(timings["ours"]) - 1, "ours_s": _median(timings["ours"]), "trl_s": _median(timings["trl"]),
        "ours_rollout_s": _median([r["timing/rollout_s"] for r in ours_rows]),
        "ours_update_s": _median([r["timing/update_s"] for r in ours_rows]),
        "trl_rollout_s": float("nan"),
        "ours_response_tokens_per_episode": _median(
            [r["rollout/response_tokens"] * r["rollout/turns"] for r in ours_rows]
        ),
        "trl_response_tokens_per_episode": _median([r["completions/mean_length"] for r in logged]),
        "ours_all_s": timings["ours"], "trl_all_s": timings["trl"], "load": timings["load"],
    }  # fmt: skip
    result["trl_update_s"] = float("nan")
    result["trl_over_ours"] = result["trl_s"] / result["ours_s"]
    return result


def _median(values):
    return statistics.median(values[1:]) if len(values) > 1 else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds per env (the first is a warm-up)")
    parser.add_argument("--envs", default=",".join(ENVS), help=f"comma-separated: {', '.join(ENVS)}")
    parser.add_argument("--tokens", type=int, default=64, help="token budget per turn (both trainers)")
    parser.add_argument(
        "--trl-rows-per-pass",
        type=int,
        default=MICRO,
        choices=(8, 16, 32, 64),
        help="TRL's per_device_train_batch_size (gradient accumulation fills the 64 rows)",
    )
    parser.add_argument(
        "--precision",
        default="fp32,bf16",
        help=f"comma-separated, both trainers in the same one per run: {', '.join(PRECISIONS)} (TRL's default is bf16)",
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.envs.split(",")]
    precisions = [p.strip() for p in args.precision.split(",")]
    for name in names:
        if name not in ENVS:
            parser.error(f"--envs: unknown setting {name!r}; choose from {', '.join(ENVS)}")
    for precision in precisions:
        if precision not in PRECISIONS:
            parser.error(f"--precision: unknown {precision!r}; choose from {', '.join(PRECISIONS)}")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        for precision in precisions:
            for name in names:
                env_id, env_kwargs = ENVS[name]
                out = Path(scratch) / f"{name}-{precision}"
                common = (env_id, env_kwargs, args.rounds, args.tokens, out, args.trl_rows_per_pass, precision)
                if name.endswith("-native"):
                    result = run_trl_native(*common)
                else:
                    result = run_env(*common, trl_generation=name.endswith("-trlgen"))
                results.append({"name": name, **result})
    print(f"\nmedians of {args.rounds - 1} interleaved rounds; load average (1 min) at each round in the last column")
    print("| setting | precision | turns | ours s/iter (rollout + update) | TRL s/step (rollout + rest) | TRL / ours | per round "
          "| tokens/episode ours, TRL | load |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        ratios = ", ".join(f"{t / o:.2f}" for t, o in zip(r["trl_all_s"][1:], r["ours_all_s"][1:], strict=True))
        print(
            f"| {r['name']} | {r['precision']} | {r['turns']} | {r['ours_s']:.2f} ({r['ours_rollout_s']:.2f} + {r['ours_update_s']:.2f}) "
            f"| {r['trl_s']:.2f} ({r['trl_rollout_s']:.2f} + {r['trl_update_s']:.2f}) | {r['trl_over_ours']:.2f}x "
            f"| {ratios} | {r['ours_response_tokens_per_episode']:.0f}, {r['trl_response_tokens_per_episode']:.0f} "
            f"| {min(r['load']):.1f}-{max(r['load']):.1f} |"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
