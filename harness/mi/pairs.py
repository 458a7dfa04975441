"""The pair half of the MI family: which (prompt, reasoning) pairs a batch cross-scores, drawn from a run's records
by the two sampling schemes of docs/design.md, or given as your own prompts and reasonings.

- **first-turn**: up to ``mi_samples`` turn-1 (prompt, reasoning) pairs drawn uniformly without replacement;
  one column per distinct env seed among them (the ``samples`` rollouts of a seed share the prompt).
- **trajectory-uniform**: ``mi_samples`` draws of an episode uniformly, then one of its turns uniformly
  (turns with reasoning only); every draw is its own column.

In both, columns whose prompts are text-identical are marked equivalent for retrieval. With ``mi_columns``
(column subsampling, for when scoring all ``N`` columns costs too much) each row is scored under its own column
and ``mi_columns - 1`` of its other columns drawn uniformly without replacement (:func:`subsample_columns`); the
draws come after the pairs', so a run's pairs are the same with and without it. Turns without reasoning text
(unparseable or empty ``<think>``) are left out, as in RAGEN. Contexts are rebuilt from the records; their
:class:`EnvHandle` replays the recorded responses so scripted agents can score exactly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from harness.agents.base import Context, EnvHandle
from harness.metrics import MetricUnavailable
from harness.records import EpisodeRecord
from harness.transcript import record_messages

SCHEMES = ("first_turn", "trajectory")
"""The pair-sampling schemes: first-turn pairs and trajectory-uniform pairs."""


@dataclass(frozen=True)
class Pairs:
    """A cross-scoring batch: row ``i`` is ``texts[i]``, sampled under column ``own[i]``."""

    contexts: list[Context]
    texts: list[str]
    own: np.ndarray
    equivalent: np.ndarray
    scored: np.ndarray | None = None
    """``(rows, columns)`` bool: the entries to score (column subsampling); None scores every entry."""


def replay_env(env_id: str, kwargs: dict[str, Any], seed: int, responses: tuple[str, ...]) -> Any:
    """The unwrapped env after ``reset(seed)`` and the given responses (envs are deterministic)."""
    import gymnasium as gym

    from ragen_envs.plugins import ensure_registered

    ensure_registered(env_id)
    env = gym.make(env_id, **kwargs)
    env.reset(seed=seed)
    for response in responses:
        env.step(response)
    return env.unwrapped


def turn_context(record: EpisodeRecord, index: int) -> Context:
    """The context of turn ``index`` (0-based) of a record, with a replaying env handle."""
    turn = record["turns"][index]
    responses = tuple(t["response"] for t in record["turns"][:index])
    factory = partial(replay_env, record["env_id"], record.get("env_kwargs") or {}, record["seed"], responses)
    return Context(record_messages(record, index), turn["prefill"], EnvHandle(factory=factory))


def _equivalence(contexts: Sequence[Context]) -> np.ndarray:
    keys = [c.key() for c in contexts]
    return np.array([[a == b for b in keys] for a in keys], dtype=bool)


def first_turn_pairs(episodes: Sequence[EpisodeRecord], rng: np.random.Generator, num_samples: int) -> Pairs:
    """Turn-1 pairs; columns are the distinct env seeds among the drawn pairs."""
    eligible = [ep for ep in episodes if ep["turns"] and ep["turns"][0].get("reasoning")]
    if not eligible:
        raise MetricUnavailable("no first turn has reasoning text")
    picks = sorted(rng.choice(len(eligible), size=min(num_samples, len(eligible)), replace=False).tolist())
    chosen = [eligible[i] for i in picks]
    column_of: dict[int, int] = {}
    contexts: list[Context] = []
    for ep in chosen:
        if ep["seed"] not in column_of:
            column_of[ep["seed"]] = len(contexts)
            contexts.append(turn_context(ep, 0))
    own = np.array([column_of[ep["seed"]] for ep in chosen], dtype=np.int64)
    texts = [ep["turns"][0]["reasoning"] for ep in chosen]
    return Pairs(contexts, texts, own, _equivalence(contexts))


def trajectory_pairs(episodes: Sequence[EpisodeRecord], rng: np.random.Generator, num_draws: int) -> Pairs:
    """Trajectory-uniform draws: an episode uniformly, then one of its turns with reasoning uniformly."""
    eligible = [
        (ep, [i for i, t in enumerate(ep["turns"]) if t.get("reasoning")])
        for ep in episodes
        if any(t.get("reasoning") for t in ep["turns"])
    ]
    if not eligible:
        raise MetricUnavailable("no turn has reasoning text")
    contexts, texts = [], []
    for _ in range(num_draws):
        ep, turns = eligible[int(rng.integers(len(eligible)))]
        index = turns[int(rng.integers(len(turns)))]
        contexts.append(turn_context(ep, index))
        texts.append(ep["turns"][index]["reasoning"])
    return Pairs(contexts, texts, np.arange(num_draws, dtype=np.int64), _equivalence(contexts))


def subsample_columns(pairs: Pairs, rng: np.random.Generator, columns: int) -> Pairs:
    """``pairs`` with each row to be scored under its own column and ``columns - 1`` of its other columns,
    drawn uniformly without replacement (every column when there are no more than ``columns``)."""
    if columns < 2:
        raise ValueError(f"mi_columns must be >= 2 (the own column and at least one other), got {columns}")
    total = len(pairs.contexts)
    if columns >= total:
        return pairs
    scored = np.zeros((len(pairs.texts), total), dtype=bool)
    for i, own in enumerate(pairs.own.tolist()):
        others = rng.choice(total - 1, size=columns - 1, replace=False)
        scored[i, others + (others >= own)] = True  # indices of the other columns, skipping ``own``
        scored[i, own] = True
    return dataclasses.replace(pairs, scored=scored)


Prompt = str | Sequence[dict[str, str]]
"""A prompt: a chat (a list of ``{"role", "content"}`` messages, rendered with the model's chat template), or one
string (the user message)."""


def pair_contexts(prompts: Sequence[Prompt], prefill: str = "<think>") -> list[Context]:
    """One :class:`Context` per prompt: a chat as given, a string as one user message; then ``prefill``."""
    out = []
    for prompt in prompts:
        if isinstance(prompt, str):
            messages: tuple[dict[str, str], ...] = ({"role": "user", "content": prompt},)
        else:
            messages = tuple({"role": str(m["role"]), "content": str(m["content"])} for m in prompt)
        if not messages:
            raise ValueError("a prompt must hold at least one message")
        out.append(Context(messages, prefill))
    return out


def context_pairs(contexts: Sequence[Context], reasonings: Sequence[str]) -> Pairs:
    """The cross-scoring batch of (context, reasoning) pairs: one column per distinct context text."""
    if len(contexts) != len(reasonings):
        raise ValueError(f"got {len(contexts)} prompts and {len(reasonings)} reasonings: pass them in pairs")
    column_of: dict[str, int] = {}
    columns: list[Context] = []
    for context in contexts:
        if column_of.setdefault(context.key(), len(columns)) == len(columns):
            columns.append(context)
    own = np.array([column_of[c.key()] for c in contexts], dtype=np.int64)
    return Pairs(columns, [str(r) for r in reasonings], own, np.eye(len(columns), dtype=bool))
