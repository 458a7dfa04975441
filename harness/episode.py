"""Where a turn becomes a record: :func:`turn_record`, and the one lockstep loop that plays episodes with it.

Every loop that plays a ragen episode for a model writes its turns here. The harness's rollout
(:mod:`harness.rollout`: any agent, one batched ``generate`` per turn) and the learner's
(:mod:`baselines.ppo.rollout`: a token-level sampler that keeps the sampled ids) both run :func:`play_lockstep`;
verl's async agent loop and the leaderboard's replay build their turns with :func:`turn_record`, so "what is in
a turn" (the :data:`harness.records.TurnRecord` schema) is written once.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, SupportsFloat

from harness.agents.base import Generation
from harness.records import EpisodeRecord, TurnRecord
from harness.transcript import Transcript
from ragen_envs.parsing import reasoning_of

__all__ = [
    "LiveEpisode",
    "StepResult",
    "finish",
    "play_lockstep",
    "turn_record",
]

StepResult = tuple[str, SupportsFloat, bool, bool, dict[str, Any]]
"""What ``env.step`` returns: (observation, reward, terminated, truncated, info)."""


def turn_record(
    transcript: Transcript, response: str, step: StepResult, generation: Generation | None = None
) -> TurnRecord:
    """The record of ``transcript``'s current turn: ``response`` (the prefill included: the text sent to
    ``env.step``) and ``step``, what ``env.step`` returned for it. ``generation`` adds what the agent knows about
    its tokens (count, summed entropy and log-prob); without it those are None. Call it before
    ``transcript.advance``: the turn's number and user message are the transcript's current ones."""
    observation, reward, terminated, truncated, info = step
    if generation is None:
        tokens = entropy_sum = logprob_sum = None
    else:
        entropies, logprobs = generation.token_entropies, generation.token_logprobs
        tokens = generation.num_tokens
        entropy_sum = None if entropies is None else float(sum(entropies))
        logprob_sum = None if logprobs is None else float(sum(logprobs))
    return {
        "turn": transcript.turn,
        "user": transcript.current["content"],
        "prefill": transcript.prefill,
        "response": response,
        "reasoning": reasoning_of(response, transcript.response_format),
        "observation": observation,
        "reward": float(reward),
        "terminated": bool(terminated),
        "truncated": bool(truncated),
        "info": info,  # made JSON-safe if needed when the line is written (records.dumps_line)
        "tokens": tokens,
        "entropy_sum": entropy_sum,
        "logprob_sum": logprob_sum,
    }


def finish(record: EpisodeRecord) -> EpisodeRecord:
    """Close an episode's record after its last turn: its return, success (the last step's) and turn count."""
    turns = record["turns"]
    # sum(), not a running +=: Python >= 3.12 sums floats with compensation, and readers (the leaderboard's
    # verify) recompute the return with sum() and compare exactly
    record["return"] = float(sum(t["reward"] for t in turns))
    record["success"] = bool(turns[-1]["info"].get("success", False))
    record["num_turns"] = len(turns)
    return record


class LiveEpisode:
    """An episode in play: its env (reset on ``seed`` here), its :class:`Transcript` and its record so far.

    ``key`` names the episode to the sampler. Loops that keep more per episode (the harness's side channel and
    seeds, the learner's token ids) subclass it.
    """

    __slots__ = ("key", "env", "unwrapped", "transcript", "record")

    def __init__(
        self,
        key: Hashable,
        env: Any,
        *,
        agent: str,
        env_id: str,
        env_kwargs: dict[str, Any],
        seed: int,
        sample: int,
        context_turns: int | None,
    ) -> None:
        observation, info = env.reset(seed=seed)
        self.key, self.env = key, env
        self.unwrapped = env.unwrapped  # a walk down the wrapper chain: once per episode
        instructions = info["instructions"]
        self.transcript = Transcript(instructions, observation, self.unwrapped.response_format, context_turns)
        self.record: EpisodeRecord = {
            "agent": agent,
            "env_id": env_id,
            "env_kwargs": env_kwargs,
            "seed": seed,
            "sample": sample,
            "context_turns": context_turns,
            "instructions": instructions,
            "initial_observation": observation,
            "reset_info": {k: v for k, v in info.items() if k != "instructions"},
            "turns": [],
        }


Generate = Callable[[Sequence[Any]], Sequence[Generation]]


def play_lockstep(
    episodes: Sequence[LiveEpisode],
    generate: Generate,
    *,
    after_turn: Callable[[Any, TurnRecord], None] | None = None,
    end_episodes: Callable[[list[Hashable]], None] | None = None,
) -> Iterator[Any]:
    """Play ``episodes`` turn by turn, all live ones together; yield each one as it ends, its record finished.

    Per turn, ``generate(live)`` returns one :class:`Generation` (the continuation after the prefill) per live
    episode, in order; each env steps on prefill + text and the turn's record is appended. ``after_turn(episode,
    turn)`` then sees every turn (the learner keeps its token ids there), and ``end_episodes(keys)`` hears, after
    each turn, which episodes it ended (an agent frees what it kept for them).
    """
    active = list(episodes)
    while active:
        generations = generate(active)
        still, ended = [], []
        for ep, gen in zip(active, generations, strict=True):
            transcript = ep.transcript
            response = transcript.prefill + gen.text
            turn = turn_record(transcript, response, ep.env.step(response), gen)
            ep.record["turns"].append(turn)
            if after_turn is not None:
                after_turn(ep, turn)
            if turn["terminated"] or turn["truncated"]:
                finish(ep.record)
                ended.append(ep.key)
                yield ep
            else:
                transcript.advance(response, turn["observation"], turn["reward"])
                still.append(ep)
        if ended and end_episodes is not None:
            end_episodes(ended)
        active = still
