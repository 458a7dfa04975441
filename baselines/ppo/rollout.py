"""Multi-turn rollouts for training: G samples per prompt, every sample of a group on the group's env seed.

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

from collections.abc import Callable
from dataclasses import dataclass, field

import gymnasium as gym

import ragen_envs  # noqa: F401  (registers the ids)
from baselines.ppo.generation import sample_responses
from harness.agents.base import Context
from harness.seeding import derive_seed
from harness.transcript import Transcript, render_prompt

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


def env_seed_for(run_seed: int, iteration: int, group: int) -> int:
    """The env seed of a group: a fresh level every iteration, shared by the group's samples."""
    return derive_seed("train-env", run_seed, iteration, group) % (2**31)


def prompt_ids(tokenizer, context: Context) -> list[int]:
    """Token ids of a context (rendered afresh)."""
    return tokenizer(render_prompt(tokenizer, context), add_special_tokens=False)["input_ids"]


def next_prompt(tokenizer, slot: dict, context: Context) -> list[int]:
    """Turn k+1's prompt ids: appended to turn k's ids and response when the template text extends it."""
    text = render_prompt(tokenizer, context)
    done_text = slot.get("text_so_far")
    if slot["episode"].chained and done_text is not None and text.startswith(done_text):
        delta = text[len(done_text) :]
        eos_text = slot.get("eos_text")
        if eos_text and delta.startswith(eos_text):
            delta = delta[len(eos_text) :]  # the sampled EOS already stands for the template's end of message
        ids = slot["ids_so_far"] + tokenizer(delta, add_special_tokens=False)["input_ids"]
    else:
        if done_text is not None:
            slot["episode"].chained = False
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    slot["prompt_text"] = text
    return ids


def collect_rollouts(
    model,
    tokenizer,
    config,
    iteration: int,
    groups: list[int],
    sampler: Callable | None = None,
    env_seeds: list[int] | None = None,
) -> list[Episode]:
    """Play ``samples_per_prompt`` episodes for each group in ``groups``; turn-synchronous batched sampling.

    ``sampler(prompts, seeds) -> list[Decoded]`` replaces the shared decoder over ``model`` (the vLLM engine
    passes its own), so every backend shares this loop, the prompts and the episode bookkeeping.
    ``env_seeds`` (one per group) replaces the run's own level schedule (:func:`env_seed_for`): the TRL and
    verl adapters play the seeds their trainers' datasets name.
    """
    kwargs = dict(config.env_kwargs)
    if config.max_turns is not None:
        kwargs["max_turns"] = config.max_turns
    slots = []
    for index, group in enumerate(groups):
        seed = env_seed_for(config.seed, iteration, group) if env_seeds is None else int(env_seeds[index])
        for sample in range(config.samples_per_prompt):
            env = gym.make(config.env_id, **kwargs)
            observation, info = env.reset(seed=seed)
            transcript = Transcript(
                info["instructions"], observation, env.unwrapped.response_format, config.context_turns
            )
            slots.append({"env": env, "episode": Episode(group, sample, seed), "transcript": transcript, "done": False})
    turn = 0
    while True:
        live = [slot for slot in slots if not slot["done"]]
        if not live:
            break
        turn += 1
        contexts = [s["transcript"].context() for s in live]
        prompts = [next_prompt(tokenizer, s, c) for s, c in zip(live, contexts, strict=True)]
        seeds = [
            derive_seed("train-sample", config.seed, iteration, s["episode"].group, s["episode"].sample, turn)
            for s in live
        ]
        outputs = [None] * len(live)
        # rows of similar length share a batch (little padding); each row's tokens depend on its seed only
        order = sorted(range(len(live)), key=lambda i: (len(prompts[i]), i))
        for start in range(0, len(order), SAMPLE_BATCH):
            rows = order[start : start + SAMPLE_BATCH]
            batch_prompts, batch_seeds = [prompts[i] for i in rows], [seeds[i] for i in rows]
            if sampler is not None:
                decoded = sampler(batch_prompts, batch_seeds)
            else:
                decoded = sample_responses(
                    model, tokenizer, batch_prompts, batch_seeds,
                    max_new_tokens=config.max_new_tokens, temperature=config.temperature,
                    prefixes=[live[i].pop("prefix", None) for i in rows],  # the previous turn's keys/values
                )  # fmt: skip
            for i, out in zip(rows, decoded, strict=True):
                outputs[i] = out
        for slot, context, prompt, out in zip(live, contexts, prompts, outputs, strict=True):
            response_ids = list(out.token_ids)
            text = tokenizer.decode(response_ids, skip_special_tokens=True)
            observation, reward, terminated, truncated, info = slot["env"].step(context.prefill + text)
            episode = slot["episode"]
            episode.turns.append(
                TurnSample(
                    group=episode.group,
                    sample=episode.sample,
                    turn=turn,
                    context=context,
                    prompt_ids=prompt,
                    response_ids=response_ids,
                    sample_logprobs=list(out.logprobs),
                    sample_entropies=list(out.entropies),
                    response_text=context.prefill + text,
                    reward=float(reward),
                )
            )
            episode.episode_return += float(reward)
            slot["text_so_far"] = slot["prompt_text"] + text
            slot["ids_so_far"] = prompt + response_ids
            # None from a sampler that keeps none (vLLM has its own prefix caching)
            slot["prefix"] = getattr(out, "prefix", None)
            ended_with_eos = bool(response_ids) and response_ids[-1] == tokenizer.eos_token_id
            slot["eos_text"] = tokenizer.decode([tokenizer.eos_token_id]) if ended_with_eos else ""
            if terminated or truncated:
                episode.success = bool(info.get("success", False))
                slot["done"] = True
                slot["prefix"] = None
                slot["env"].close()
            else:
                slot["transcript"].advance(context.prefill + text, observation, float(reward))
    return [slot["episode"] for slot in slots]
