"""Scripted agents that score exactly from their own action distributions: ``random`` and ``oracle``.

``random`` is template-collapsed by construction: its reasoning is 3–11 words drawn uniformly (with
replacement) from a fixed vocabulary, whatever the input, so its reasoning entropy is high and its MI is
exactly 0; its answer is 1..``max_actions_per_turn`` of the env's candidate actions, uniformly. Its
``score`` is the exact log-probability of a reasoning under that process:
``log p(z | x) = -log(9) - k·log(|V|)`` when ``z`` is ``k`` vocabulary words joined by single spaces
(3 <= k <= 11), ``-inf`` otherwise, for every ``x``; ``num_tokens = k``.

``oracle`` writes the env oracle's reasoning and answer: a deterministic policy whose reasoning depends on
the input. ``log p(z | x) = 0`` when ``z`` is exactly the oracle's reasoning in the state of ``x`` (rebuilt
through the context's :class:`EnvHandle`), ``-inf`` otherwise; ``num_tokens`` = whitespace words of ``z``.

For both, "tokens" are whitespace words (the answer's actions count one each) and the reported token
entropies are those of the agent's own choices: ``log |V|`` per reasoning word and ``log(#candidates)`` per
action pick for ``random``, 0 for ``oracle``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.agents.base import Agent, Context, EnvHandle, Generation, Request, Score
from ragen_envs.parsing import (
    MAX_REASONING_WORDS,
    MIN_REASONING_WORDS,
    REASONING_VOCAB,
    random_reasoning,
)

_VOCAB_SET = frozenset(REASONING_VOCAB)


def _continuation(context: Context, response: str) -> str:
    if not response.startswith(context.prefill):
        raise RuntimeError(f"scripted response {response[:40]!r} does not continue the prefill {context.prefill!r}")
    return response[len(context.prefill) :]


def _handle(context: Context, agent: str) -> EnvHandle:
    if context.env is None:
        raise ValueError(f"the {agent} agent acts on the env: the context must carry an EnvHandle (context.env)")
    return context.env


def random_reasoning_logprob(text: str) -> Score:
    """Exact log-prob of ``text`` as a reasoning of the random agent (input-independent)."""
    words = text.split(" ")
    if not (MIN_REASONING_WORDS <= len(words) <= MAX_REASONING_WORDS) or not all(w in _VOCAB_SET for w in words):
        return Score(-math.inf, max(len(text.split()), 1))
    k = len(words)
    return Score(-math.log(MAX_REASONING_WORDS - MIN_REASONING_WORDS + 1) - k * math.log(len(REASONING_VOCAB)), k)


class RandomAgent(Agent):
    """Uniformly random valid-format actions with varied, input-agnostic reasoning (template collapse)."""

    can_score = True

    def __init__(self) -> None:
        self.spec = "random"

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        """Agent protocol's generate: one :class:`Generation` per request, in order: random reasoning words and a random candidate action, from the request's seed."""
        out = []
        for request in requests:
            env = _handle(request.context, "random")
            rng = np.random.default_rng(request.seed)
            words = random_reasoning(rng, REASONING_VOCAB)
            k = len(words)
            candidates = env.candidate_actions()
            if candidates:
                picks_n = 1 if env.action_separator is None else int(rng.integers(1, env.max_actions_per_turn + 1))
                picks = [candidates[int(i)] for i in rng.integers(len(candidates), size=picks_n)]
                pick_entropy = math.log(len(candidates))
            else:  # a free-form env without candidates: answer its example
                picks, pick_entropy = [env.example_answer], 0.0
            joiner = f" {env.action_separator} " if env.action_separator else " "
            response = env.write_response(" ".join(words), joiner.join(picks))
            entropies = (math.log(len(REASONING_VOCAB)),) * k + (pick_entropy,) * len(picks)
            out.append(Generation(_continuation(request.context, response), len(entropies), None, entropies))
        return out

    def score(self, contexts: Sequence[Context], texts: Sequence[str]) -> list[Score]:
        """Agent protocol's score: teacher-forced log p(``texts[i]`` | ``contexts[i]``) as one :class:`Score` per pair: the random reasoning's log-prob, which ignores the context; raises ``ValueError`` on unequal lengths."""
        if len(contexts) != len(texts):
            raise ValueError(f"score needs as many contexts as texts, got {len(contexts)} and {len(texts)}")
        return [random_reasoning_logprob(text) for text in texts]

    def score_matrix(
        self, contexts: Sequence[Context], texts: Sequence[str], wanted: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Agent protocol's score_matrix: ``(logprob_sum, num_tokens)`` arrays of shape ``(len(texts), len(contexts))``; every column is the same (the random reasoning ignores the context)."""
        scores = [random_reasoning_logprob(text) for text in texts]  # the same under every context: all entries
        sums = np.repeat(np.array([[s.logprob_sum] for s in scores], dtype=np.float64), len(contexts), axis=1)
        counts = np.repeat(np.array([[s.num_tokens] for s in scores], dtype=np.int64), len(contexts), axis=1)
        return sums, counts


class OracleAgent(Agent):
    """The env's oracle: deterministic, input-dependent reasoning and the solving answer."""

    can_score = True

    def __init__(self) -> None:
        self.spec = "oracle"

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        """Agent protocol's generate: one :class:`Generation` per request, in order: the env oracle's reasoning and answer in the env's response format."""
        out = []
        for request in requests:
            context = request.context
            env = _handle(context, "oracle").env  # the unwrapped env: one attribute walk per request, not three
            thinking, answer = env.oracle()
            response = env.write_response(thinking, answer, reasoning_before_answer=True)
            words = len(thinking.split()) + len(answer.split())
            out.append(Generation(_continuation(context, response), words, None, (0.0,) * words))
        return out

    def _reasoning(self, context: Context) -> str:
        return _handle(context, "oracle").oracle()[0].strip()

    def score(self, contexts: Sequence[Context], texts: Sequence[str]) -> list[Score]:
        """Agent protocol's score: teacher-forced log p(``texts[i]`` | ``contexts[i]``) as one :class:`Score` per pair: 0 for the oracle's own reasoning in that context, -inf for any other text; raises ``ValueError`` on unequal lengths."""
        if len(contexts) != len(texts):
            raise ValueError(f"score needs as many contexts as texts, got {len(contexts)} and {len(texts)}")
        return [
            Score(0.0 if text == self._reasoning(ctx) else -math.inf, len(text.split()))
            for ctx, text in zip(contexts, texts, strict=True)
        ]

    def score_matrix(
        self, contexts: Sequence[Context], texts: Sequence[str], wanted: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Agent protocol's score_matrix: ``(logprob_sum, num_tokens)`` arrays of shape ``(len(texts), len(contexts))``: 0 where the text is that context's oracle reasoning, else -inf."""
        reasonings = [self._reasoning(ctx) for ctx in contexts]  # one oracle call per column; every entry is free
        sums = np.array([[0.0 if t == r else -math.inf for r in reasonings] for t in texts], dtype=np.float64)
        counts = np.array([[len(t.split())] * len(contexts) for t in texts], dtype=np.int64).reshape(sums.shape)
        return sums, counts
