"""The agent protocol: what the harness asks of any agent (scripted, transformers, vLLM, HTTP endpoints).

An agent does two things, both batched:

``generate(requests) -> list[Generation]``
    One response per :class:`Request`. A request carries the chat :class:`Context` (system prompt = env
    instructions, then the turns), the assistant ``prefill`` the response continues (``"<think>"`` when the
    env wants reasoning) and a ``seed``: the response must be a pure function of (context, seed), so a run is
    reproducible whatever the batching, worker count or backend. ``Generation.text`` is the continuation
    *after* the prefill; the env receives ``prefill + text``. Optionally per-token log-probs and entropies.

``score(contexts, texts) -> list[Score]`` (only when ``can_score``)
    Teacher forcing: the summed log-prob and token count of ``texts[i]`` written right after
    ``contexts[i]`` (chat template + prefill), under the same distribution ``generate`` samples from. This
    is all the MI family needs; ``score_matrix`` (every text under every context) defaults to calling
    ``score`` on all pairs and is overridden by agents that can share work across a prompt (KV cache).

An agent that cannot score leaves ``can_score = False``: the harness then reports the MI family as
unavailable, never as a number.

Scripted agents (random, oracle) act on the env, not on text: each context carries an :class:`EnvHandle`
(``context.env``), a side channel to the state the prompt was rendered from: its candidate actions, its
oracle, its response format. During rollouts it wraps the live env; at scoring time the harness rebuilds it
by replaying the recorded responses (envs are deterministic), so scripted agents score exactly from their
own action distributions in any process. LM agents must ignore it.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

Message = dict[str, str]
"""A chat message: ``{"role": "system" | "user" | "assistant", "content": str}``."""


class ScoringUnavailable(RuntimeError):
    """Raised by ``Agent.score`` when the agent cannot compute log-probs of given text."""


class EnvHandle:
    """Read-only view of the env state a context was rendered from (for scripted agents only).

    Wraps an *unwrapped* ``TextEnv``, or a zero-argument factory that builds one on first use (the
    harness's replay at scoring time).
    """

    def __init__(self, env: Any = None, *, factory: Callable[[], Any] | None = None) -> None:
        if (env is None) == (factory is None):
            raise ValueError("EnvHandle needs exactly one of env= or factory=")
        self._env = env
        self._factory = factory

    @property
    def env(self) -> Any:
        """The env itself, built by the factory on first access when the handle was given one."""
        if self._env is None:
            self._env = self._factory()  # type: ignore[misc]
        return self._env

    @property
    def response_format(self) -> str:
        """The env's response format (``"think"``, ``"answer"``...), as the env declares it."""
        return self.env.response_format

    @property
    def action_separator(self) -> str | None:
        """The separator between several actions in one answer, or None when the env takes one action per turn."""
        return self.env.action_separator

    @property
    def max_actions_per_turn(self) -> int:
        """How many actions the env accepts in one answer."""
        return self.env.max_actions_per_turn

    @property
    def example_answer(self) -> str:
        """An answer in the env's action syntax, as its instructions show it."""
        return self.env.example_answer

    def write_response(self, thinking: str, answer: str) -> str:
        """A response in the env's format with reasoning ``thinking`` before ``answer`` (action syntax; tool calls
        in the tool format): what a scripted agent writes, its reasoning where the MI family reads it."""
        return self.env.write_response(thinking, answer, reasoning_before_answer=True)

    def candidate_actions(self) -> tuple[str, ...]:
        """The action strings the env offers in this state (may be empty for free-form envs)."""
        return tuple(self.env.candidate_actions())

    def oracle(self) -> tuple[str, str]:
        """The env oracle's (reasoning, answer) in this state."""
        return self.env.oracle()


@dataclass(frozen=True)
class Context:
    """Everything the model sees before it writes: chat messages plus the assistant prefix."""

    messages: tuple[Message, ...]
    prefill: str = ""
    env: EnvHandle | None = field(default=None, compare=False, repr=False)

    def key(self) -> str:
        """The exact text identity of the context (equal keys ⇔ token-identical prompts for any tokenizer)."""
        return json.dumps([list(self.messages), self.prefill], ensure_ascii=False, sort_keys=True)


class Request:
    """One response to generate: the context and the seed its sampling must be a pure function of.

    ``seed`` is an int, or a zero-argument callable returning it (the harness's rollout passes one): it is
    called on the first read of ``request.seed`` only, so an agent that ignores seeds (the oracle) never pays
    for deriving one (deriving it in the constructor makes the oracle's rollout step on Bandit ~10% slower:
    docs/benchmarks.md, "Simplifications"). ``episode`` (optional, hashable; the rollout passes the job's key)
    names the episode the request continues: an agent may keep state from that episode's previous turn (the
    ``hf:`` agent keeps its keys/values, so a turn does not run the whole history again) and must respond as
    without that state, up to float rounding.
    Immutable, compared by (context, seed) like a frozen dataclass.
    """

    __slots__ = ("context", "_seed", "episode")

    def __init__(self, context: Context, seed: int | Callable[[], int], episode: Hashable | None = None) -> None:
        object.__setattr__(self, "context", context)
        object.__setattr__(self, "_seed", seed)
        object.__setattr__(self, "episode", episode)

    @property
    def seed(self) -> int:
        """The sampling seed; a callable seed is called once, on first read, and its value kept."""
        seed = self._seed
        if callable(seed):
            seed = int(seed())
            object.__setattr__(self, "_seed", seed)
        return seed

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Request is immutable (cannot set {name!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Request):
            return NotImplemented
        return (self.context, self.seed) == (other.context, other.seed)

    def __hash__(self) -> int:
        return hash((self.context, self.seed))

    def __repr__(self) -> str:
        return f"Request(context={self.context!r}, seed={self.seed!r})"

    def __reduce__(self) -> tuple:
        return (Request, (self.context, self.seed, self.episode))


class Generation(NamedTuple):
    """A generated continuation (after the prefill) and what the agent knows about its tokens.

    Immutable; a NamedTuple rather than a frozen dataclass because one is built per response on the rollout's
    hot path, and a tuple builds in half the time (0.24 vs 0.55 µs).
    """

    text: str
    num_tokens: int | None = None
    token_logprobs: tuple[float, ...] | None = None
    """Log-prob of each generated token under the sampling distribution, when available."""
    token_entropies: tuple[float, ...] | None = None
    """Entropy (nats) of the sampling distribution at each generated token, when available."""


@dataclass(frozen=True)
class Score:
    """Teacher-forced log p(text | context): the sum over the text's tokens and their count."""

    logprob_sum: float
    num_tokens: int


class Agent(abc.ABC):
    """Base class of every agent; see the module docstring for the protocol."""

    spec: str = ""
    """The string that builds this agent through the registry (``"random"``, ``"hf:/models/x"``)."""
    can_score: bool = False

    @abc.abstractmethod
    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        """One :class:`Generation` per request, in order."""

    def score(self, contexts: Sequence[Context], texts: Sequence[str]) -> list[Score]:
        """Teacher-forced log-prob of ``texts[i]`` after ``contexts[i]``; see the module docstring."""
        raise ScoringUnavailable(f"agent {self.spec!r} cannot score text")

    def score_matrix(
        self, contexts: Sequence[Context], texts: Sequence[str], wanted: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(logprob_sum, num_tokens)``, both ``(len(texts), len(contexts))``: every text under every context.

        ``wanted`` (optional ``(len(texts), len(contexts))`` bool, the harness's column subsampling): only those
        entries are needed; an agent may score more, and what it leaves out is read as nothing (NaN sum here).
        """
        shape = (len(texts), len(contexts))
        if wanted is None:
            wanted = np.ones(shape, dtype=bool)
        rows, cols = np.nonzero(wanted)
        scores = self.score([contexts[j] for j in cols], [texts[i] for i in rows])
        sums = np.full(shape, np.nan)
        counts = np.zeros(shape, dtype=np.int64)
        sums[rows, cols] = [s.logprob_sum for s in scores]
        counts[rows, cols] = [s.num_tokens for s in scores]
        return sums, counts

    def describe(self) -> dict[str, Any]:
        """What config.json records about the agent (enough to rebuild it)."""
        return {"spec": self.spec}

    def end_episodes(self, episodes: Sequence[Hashable]) -> None:
        """The rollout's word that these episodes (``Request.episode`` values) are over: per-episode state kept
        between turns (the ``hf:`` agent's keys/values) can go. Optional; the default keeps nothing."""
        return None

    def close(self) -> None:
        """Release resources (models, connections). Idempotent."""
        return None
