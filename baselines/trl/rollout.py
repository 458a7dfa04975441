"""``rollout_func`` for TRL's ``GRPOTrainer``: multi-turn episodes of any registered env, one row per episode.

TRL hands the function the prompts of its batch (each dataset row repeated ``num_generations`` times in a row)
and nothing else, so every prompt carries its env seed (:func:`baselines.trl.dataset.make_dataset`). The
episodes are played by the learner's own rollout loop (:func:`baselines.ppo.rollout.collect_rollouts`): the
harness's RAGEN prompts through the tokenizer's chat template, the ``<think>`` prefill, turn-synchronous batches,
sampled where TRL samples its own completions (:mod:`baselines.trl.generation`: the policy inside TRL's
``unwrap_model_for_generation`` with the shared seeded decoder, or TRL's vLLM engine or server with
``use_vllm=True``). A run of identical prompts is one group: the
same seed, ``num_generations`` samples.

Each episode becomes one TRL row: ``prompt_ids`` are turn 1's prompt (chat template and prefill included),
``completion_ids`` everything after it up to the last response — the responses (``env_mask`` 1, trained on)
and between them the tokens of the env's turns and the next prefill (``env_mask`` 0, excluded from the loss).
``env_return`` (the episode's return, format penalties included) is the reward (:func:`episode_return`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from baselines.algos.rollout import RolloutSpec
from baselines.env_check import check_env, check_seed
from baselines.ppo.rollout import Episode, collect_rollouts
from baselines.trl.generation import check_generation, episode_sampling
from harness.seeding import derive_seed
from harness.training_log import SUCCESS


@dataclass
class RolloutBatch:
    """The episodes of one call, in the order of TRL's rows (the pre-filter batch the MI callback scores)."""

    call: int
    global_step: int
    episodes: list[Episode] = field(default_factory=list)


def env_seed_of(prompt: Any, env_id: str | None = None) -> int:
    """The env seed a dataset prompt carries (on its messages, see ``make_dataset``); with ``env_id``, a prompt
    built for another env is refused."""
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], dict) and "env_seed" in prompt[0]:
        built_for = prompt[0].get("env_id")
        if env_id is not None and built_for not in (None, env_id):
            raise ValueError(
                f"the dataset was built for {built_for}, the rollout plays {env_id}: build it with "
                f"make_dataset({env_id!r}, seeds) or pass EnvRollout({built_for!r})"
            )
        return check_seed(prompt[0]["env_seed"])
    raise ValueError(
        "each prompt must carry its env seed: build the dataset with baselines.trl.make_dataset(env_id, seeds) "
        f"(got a prompt of type {type(prompt).__name__})"
    )


class EnvRollout:
    """``rollout_func(prompts, trainer) -> dict`` playing ``env_id`` episodes; see the module docstring.

    ``max_new_tokens`` is the per-turn budget (default: the trainer's ``max_completion_length``); sampling
    uses the trainer's temperature, so the log-probs TRL recomputes are of the distribution sampled from.
    ``last`` holds the latest batch's episodes (read by :class:`baselines.trl.MICallback`).
    """

    def __init__(
        self,
        env_id: str,
        *,
        env_kwargs: dict[str, Any] | None = None,
        max_turns: int | None = None,
        max_new_tokens: int | None = None,
        seed: int = 0,
    ) -> None:
        self.env_kwargs = dict(env_kwargs or {})
        if max_turns is not None:
            self.env_kwargs["max_turns"] = max_turns  # validated by the env below, like any kwarg
        self.env_id = check_env(env_id, self.env_kwargs)
        if max_new_tokens is not None and (not isinstance(max_new_tokens, int) or max_new_tokens < 1):
            raise ValueError(f"max_new_tokens must be a positive integer (tokens per turn), got {max_new_tokens!r}")
        self.max_new_tokens = max_new_tokens
        self.seed = check_seed(seed)
        self.calls = 0
        self.trainer = None
        self.last: RolloutBatch | None = None

    # TRL reads __name__ of functions it is handed in a few log lines
    __name__ = "ragen_env_rollout"

    def settings(self, trainer, samples: int) -> RolloutSpec:
        """The rollout settings of ``trainer``'s arguments; raises ``ValueError`` for an option the adapter cannot
        honour."""
        args = trainer.args
        check_generation(trainer)
        for name, neutral in (("top_p", 1.0), ("top_k", 0), ("min_p", None), ("repetition_penalty", 1.0)):
            value = getattr(args, name, neutral)
            if value not in (neutral, None) and not (name == "top_k" and value in (0, -1)):
                raise ValueError(f"{name}={value!r} is not supported: the adapter samples with temperature only")
        if getattr(args, "mask_truncated_completions", False):
            raise ValueError(
                "mask_truncated_completions=True would drop episodes that end on '</answer>' (the env reads the "
                "answer there, no EOS follows it): set it False"
            )
        budget = self.max_new_tokens or args.max_completion_length
        # one TRL row is one token sequence: the whole history stays in the prompt (no context_turns window)
        return RolloutSpec(
            env_id=self.env_id, env_kwargs=self.env_kwargs, max_new_tokens=int(budget),
            temperature=float(trainer.temperature), samples_per_prompt=samples, seed=self.seed,
        )  # fmt: skip

    def sampling(self, trainer, temperature: float, max_new_tokens: int):
        """The context yielding ``(model, sampler)`` that the episodes are sampled with
        (:func:`baselines.trl.generation.episode_sampling`); a subclass may sample another way."""
        return episode_sampling(trainer, temperature, max_new_tokens)

    def __call__(self, prompts: Sequence[Any], trainer) -> dict[str, list]:
        """TRL's ``rollout_func``: one episode per prompt, returned as the token rows, env masks and returns TRL trains
        on."""
        seeds = [env_seed_of(p, self.env_id) for p in prompts]
        runs: list[tuple[int, int]] = []  # (seed, count) of each run of identical consecutive prompts: a group
        for seed in seeds:
            if runs and runs[-1][0] == seed:
                runs[-1] = (seed, runs[-1][1] + 1)
            else:
                runs.append((seed, 1))
        tokenizer = trainer.processing_class
        # sampling seeds: a function of the run seed, this call and the process, never of the batch layout
        iteration = derive_seed("trl-rollout", self.seed, self.calls, trainer.accelerator.process_index) % (2**31)
        episodes_of_run: dict[int, list[Episode]] = {}
        counts = sorted({c for _, c in runs})
        settings = {count: self.settings(trainer, count) for count in counts}  # refusals before any sampling
        first = settings[counts[0]]
        with self.sampling(trainer, first.temperature, first.max_new_tokens) as (model, sampler):
            for count in counts:
                members = [i for i, (_, c) in enumerate(runs) if c == count]
                played = collect_rollouts(
                    model, tokenizer, settings[count], iteration, members, sampler=sampler,
                    env_seeds=[runs[i][0] for i in members],
                )  # fmt: skip
                for episode in played:
                    episodes_of_run.setdefault(episode.group, []).append(episode)
        episodes = [e for i in range(len(runs)) for e in sorted(episodes_of_run[i], key=lambda e: e.sample)]
        self.trainer = trainer
        self.last = RolloutBatch(self.calls, trainer.state.global_step, episodes)
        self.calls += 1
        rows = [episode_row(e, tokenizer) for e in episodes]
        return {
            "prompt_ids": [r[0] for r in rows],
            "completion_ids": [r[1] for r in rows],
            "logprobs": [r[2] for r in rows],
            "env_mask": [r[3] for r in rows],
            "env_return": [e.episode_return for e in episodes],
            "env_success": [float(e.success) for e in episodes],
            "env_turns": [len(e.turns) for e in episodes],
        }


def episode_row(episode: Episode, tokenizer) -> tuple[list[int], list[int], list[float], list[int]]:
    """(prompt_ids, completion_ids, logprobs, env_mask) of one episode; see the module docstring."""
    if not episode.chained:
        raise ValueError(
            "this tokenizer's chat template rewrites earlier turns (e.g. drops their reasoning), so an episode is "
            "not one token sequence and cannot be one TRL row; use a template that only appends, or the learner "
            "(harness train), which trains such episodes turn by turn"
        )
    first = episode.turns[0].prompt_ids
    last = episode.turns[-1]
    sequence = last.prompt_ids + last.response_ids
    completion = sequence[len(first) :]
    mask = [0] * len(completion)
    logprobs = [0.0] * len(completion)  # env tokens were not sampled; TRL reads these only for vLLM correction
    for turn in episode.turns:
        start = len(turn.prompt_ids) - len(first)
        assert sequence[: len(turn.prompt_ids)] == turn.prompt_ids  # chained: every prompt prefixes the last
        for k, logp in enumerate(turn.sample_logprobs):
            mask[start + k] = 1
            logprobs[start + k] = float(logp)
    if not completion:  # nothing sampled (TRL indexes the last completion token): one masked end token
        completion, mask, logprobs = [tokenizer.eos_token_id], [0], [0.0]
    return list(first), completion, logprobs, mask


def episode_return(prompts, completions, env_return, env_success=None, log_metric=None, **_) -> list[float]:
    """TRL reward function: each row's episode return, as the rollout computed it; logs the success rate."""
    if log_metric is not None and env_success:
        log_metric(SUCCESS, float(sum(env_success)) / len(env_success))
    return [float(r) if math.isfinite(r) else 0.0 for r in env_return]
