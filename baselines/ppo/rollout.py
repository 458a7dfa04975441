"""Multi-turn rollouts for training: G samples per prompt, every sample of a group on the group's env seed.

Episodes are played by the harness's own lockstep loop (:func:`harness.episode.play_lockstep`, which also writes
each turn's harness record) with the learner's token-level sampler (:class:`TokenSampler`) plugged in.
Prompts are the harness's RAGEN-style conversations, built and advanced by a
:class:`harness.transcript.Transcript` per episode and rendered by :func:`harness.transcript.render_prompt`
(chat template, then the assistant prefix ``<think>``, which is part of the prompt ids); the sampled tokens are
the response. Each turn becomes one :class:`TurnSample` holding the exact ids that were sampled from, so the
update scores precisely what the policy wrote.

Prompt ids are built *append-only* when the template allows it: turn k+1's prompt is turn k's prompt, the
sampled response ids, then the tokens of the text the template adds (end of message, reward, next state).
The model therefore sees exactly the ids it produced, and a whole episode is one sequence that the update
scores in one pass (``Episode.chained``). This token-id chaining is the learner's extension of the transcript:
the text is always the transcript's rendered context, only its ids are reused. A context window that drops
turns, or a template that rewrites earlier text, falls back to rendering each prompt afresh (``chained=False``,
one training row per turn).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import gymnasium as gym

import ragen_envs  # noqa: F401  (registers the ids)
from baselines.algos.rollout import RolloutSpec
from baselines.ppo.generation import sample_responses
from harness.agents.base import Context, Generation
from harness.episode import LiveEpisode, play_lockstep
from harness.records import EpisodeRecord, TurnRecord
from harness.seeding import derive_seed
from harness.transcript import render_prompt

SAMPLE_BATCH = 64
"""Rows per decoder call (bounds the decoding batch's KV cache). Between turns every live episode also holds the
keys/values of its history (prompt and responses so far, handed to its next turn and then freed): one history
per live episode, e.g. ~12 KB per token for Qwen2.5-0.5B in bf16."""


@dataclass
class TurnSample:
    """One response of one episode, with everything the update needs."""

    group: int
    sample: int
    turn: int
    context: Context
    prompt_ids: list[int]
    response_ids: list[int]
    sample_logprobs: list[float]
    sample_entropies: list[float]
    response_text: str
    reward: float = 0.0


@dataclass
class Episode:
    """A finished rollout: its turns, raw return (format penalties included) and success."""

    group: int
    sample: int
    env_seed: int
    turns: list[TurnSample] = field(default_factory=list)
    episode_return: float = 0.0
    success: bool = False
    chained: bool = True
    """Every turn's prompt ids extend the previous turn's prompt and response ids."""
    record: EpisodeRecord | None = None
    """The episode as the harness records it (:func:`harness.episode.turn_record` per turn), written by the loop
    that played it; None for an episode built by hand."""


def env_seed_for(run_seed: int, iteration: int, group: int) -> int:
    """The env seed of a group: a fresh level every iteration, shared by the group's samples."""
    return derive_seed("train-env", run_seed, iteration, group) % (2**31)


def prompt_ids(tokenizer, context: Context) -> list[int]:
    """Token ids of a context (rendered afresh)."""
    return tokenizer(render_prompt(tokenizer, context), add_special_tokens=False)["input_ids"]


class _Slot(LiveEpisode):
    """One learner episode in play: the harness's episode state, the learner's :class:`Episode`, and the token ids
    chained across its turns (``text``/``ids``: the last prompt and response, as text and as ids)."""

    __slots__ = ("episode", "prompt_text", "text", "ids", "eos_text", "prefix", "sampled")

    def __init__(self, episode: Episode, env, env_kwargs: dict, spec: RolloutSpec) -> None:
        super().__init__(
            (episode.group, episode.sample), env, agent="policy", env_id=spec.env_id, env_kwargs=env_kwargs,
            seed=episode.env_seed, sample=episode.sample, context_turns=spec.context_turns,
        )  # fmt: skip
        self.episode = episode
        episode.record = self.record
        self.prompt_text = self.text = self.ids = None
        self.eos_text = ""
        self.prefix = None  # the previous turn's keys/values, handed to the next turn's decoder
        self.sampled = None  # this turn's (context, prompt ids, response ids, text, decoded), until the env answers


class TokenSampler:
    """The learner's sampler for :func:`harness.episode.play_lockstep`: token ids in, token ids out.

    :meth:`generate` renders each live episode's context to prompt ids (chained on the episode's earlier ids when
    the template allows), samples every response with its own seed ``derive_seed("train-sample", run seed,
    iteration, group, sample, turn)`` (rows of similar length batched together; each row's tokens depend on its
    seed only) from the shared decoder, which reuses the previous turn's keys/values, or from ``sampler``;
    :meth:`after_turn` files the turn as a :class:`TurnSample`.
    """

    def __init__(self, model, tokenizer, spec: RolloutSpec, iteration: int, sampler: Callable | None = None) -> None:
        self.model, self.tokenizer, self.spec, self.iteration, self.sampler = model, tokenizer, spec, iteration, sampler

    def prompt(self, slot: _Slot, context: Context) -> list[int]:
        """Turn k+1's prompt ids: appended to turn k's ids and response when the template text extends it."""
        tokenizer = self.tokenizer
        text = render_prompt(tokenizer, context)
        done_text = slot.text
        if slot.episode.chained and done_text is not None and text.startswith(done_text):
            delta = text[len(done_text) :]
            if slot.eos_text and delta.startswith(slot.eos_text):
                delta = delta[len(slot.eos_text) :]  # the sampled EOS already stands for the template's end of message
            ids = slot.ids + tokenizer(delta, add_special_tokens=False)["input_ids"]
        else:
            if done_text is not None:
                slot.episode.chained = False
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        slot.prompt_text = text
        return ids

    def generate(self, live: Sequence[_Slot]) -> list[Generation]:
        """One response per live episode (the text after the prefill, with its tokens' log-probs and entropies)."""
        spec = self.spec
        contexts = [s.transcript.context() for s in live]
        prompts = [self.prompt(s, c) for s, c in zip(live, contexts, strict=True)]
        seeds = [
            derive_seed("train-sample", spec.seed, self.iteration, s.episode.group, s.episode.sample, s.transcript.turn)
            for s in live
        ]
        outputs = [None] * len(live)
        # rows of similar length share a batch (little padding); each row's tokens depend on its seed only
        order = sorted(range(len(live)), key=lambda i: (len(prompts[i]), i))
        for start in range(0, len(order), SAMPLE_BATCH):
            rows = order[start : start + SAMPLE_BATCH]
            batch_prompts, batch_seeds = [prompts[i] for i in rows], [seeds[i] for i in rows]
            if self.sampler is not None:
                decoded = self.sampler(batch_prompts, batch_seeds)
            else:
                prefixes = []
                for i in rows:  # the previous turn's keys/values, let go of by the episode as they are handed on
                    prefixes.append(live[i].prefix)
                    live[i].prefix = None
                decoded = sample_responses(
                    self.model, self.tokenizer, batch_prompts, batch_seeds,
                    max_new_tokens=spec.max_new_tokens, temperature=spec.temperature, prefixes=prefixes,
                )  # fmt: skip
            for i, out in zip(rows, decoded, strict=True):
                outputs[i] = out
        generations = []
        for slot, context, prompt, out in zip(live, contexts, prompts, outputs, strict=True):
            response_ids = list(out.token_ids)
            text = self.tokenizer.decode(response_ids, skip_special_tokens=True)
            slot.sampled = (context, prompt, response_ids, text, out)
            # a sampler without full distributions (vLLM) reports no entropies: the record says "not reported"
            entropies = out.entropies if len(out.entropies) == len(response_ids) else None
            generations.append(Generation(text, len(response_ids), out.logprobs, entropies))
        return generations

    def after_turn(self, slot: _Slot, turn: TurnRecord) -> None:
        """File the turn the env has just answered as a :class:`TurnSample`, and keep its ids for the next turn."""
        context, prompt, response_ids, text, out = slot.sampled
        slot.sampled = None  # it holds the decoder's keys/values: not past the episode's end
        tokenizer, episode = self.tokenizer, slot.episode
        episode.turns.append(
            TurnSample(
                group=episode.group,
                sample=episode.sample,
                turn=turn["turn"],
                context=context,
                prompt_ids=prompt,
                response_ids=response_ids,
                sample_logprobs=list(out.logprobs),
                sample_entropies=list(out.entropies),
                response_text=turn["response"],
                reward=turn["reward"],
            )
        )
        episode.episode_return += turn["reward"]
        slot.text = slot.prompt_text + text
        slot.ids = prompt + response_ids
        slot.prefix = getattr(
            out, "prefix", None
        )  # None from a sampler that keeps none (vLLM has its own prefix caching)
        ended_with_eos = bool(response_ids) and response_ids[-1] == tokenizer.eos_token_id
        slot.eos_text = tokenizer.decode([tokenizer.eos_token_id]) if ended_with_eos else ""
        if turn["terminated"] or turn["truncated"]:
            episode.success = bool(turn["info"].get("success", False))
            slot.prefix = None
            slot.env.close()


def collect_rollouts(
    model,
    tokenizer,
    spec: RolloutSpec,
    iteration: int,
    groups: list[int],
    sampler: Callable | None = None,
    env_seeds: list[int] | None = None,
) -> list[Episode]:
    """Play ``samples_per_prompt`` episodes for each group in ``groups``; turn-synchronous batched sampling.

    ``sampler(prompts, seeds) -> list[Decoded]`` replaces the shared decoder over ``model`` (the vLLM engine
    passes its own), so every backend shares this loop, the prompts and the episode bookkeeping.
    ``env_seeds`` (one per group) replaces the run's own level schedule (:func:`env_seed_for`): the TRL and
    verl adapters play the seeds their trainers' datasets name. ``spec``: the learner's ``PPOConfig`` (a rollout
    spec) or the TRL adapter's :class:`~baselines.algos.RolloutSpec`.
    """
    kwargs = spec.env_arguments()
    slots = []
    for index, group in enumerate(groups):
        seed = env_seed_for(spec.seed, iteration, group) if env_seeds is None else int(env_seeds[index])
        for sample in range(spec.samples_per_prompt):
            slots.append(_Slot(Episode(group, sample, seed), gym.make(spec.env_id, **kwargs), kwargs, spec))
    tokens = TokenSampler(model, tokenizer, spec, iteration, sampler)
    for _ in play_lockstep(slots, tokens.generate, after_turn=tokens.after_turn):
        pass
    return [slot.episode for slot in slots]
