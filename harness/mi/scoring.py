"""The scoring half of the MI family: the agent cross-scores a batch of pairs (:mod:`harness.mi.pairs`) and the
estimator (:mod:`harness.mi.estimator`) turns the matrix into the family.

:func:`collapse_for` is the whole step on one (agent, env) batch of a run's records: both schemes drawn, scored
and estimated. The trajectory scheme's standard errors come from a draw-level bootstrap (:func:`draw_bootstrap`):
another sampler seed would draw other turns, and that spread is included. With column subsampling the family is
the subsampled estimator of :func:`harness.mi.estimator.collapse_metrics` (``scored``). All draws come from a
generator seeded by the run seed, the scheme and the env (not the agent, whose spec can hold a model's path): the
same records give the same numbers in any process and from any checkout or model location.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.agents.base import Agent, ScoringUnavailable
from harness.metrics import Estimate, MetricUnavailable
from harness.mi.estimator import collapse_metrics
from harness.mi.pairs import (
    SCHEMES,
    Pairs,
    Prompt,
    context_pairs,
    first_turn_pairs,
    pair_contexts,
    subsample_columns,
    trajectory_pairs,
)
from harness.records import EpisodeRecord
from harness.seeding import derive_seed

Memo = dict[tuple[str, str], tuple[float, int]]
"""(context key, text) -> (summed log-prob, token count), shared by the two schemes of one batch."""


def score_pairs(agent: Agent, pairs: Pairs, memo: Memo | None = None) -> dict[str, Estimate]:
    """Cross-score the texts under the contexts with ``agent`` (every entry, or ``pairs.scored``) and compute
    the family (:func:`pair_matrix`, then :func:`harness.mi.estimator.collapse_metrics`)."""
    return pair_family(pairs, *pair_matrix(agent, pairs, memo))


def pair_family(pairs: Pairs, sums: np.ndarray, counts: np.ndarray) -> dict[str, Estimate]:
    """The MI family of the pairs' scored matrix (per-token and ``_seq``)."""
    return collapse_metrics(sums / counts, pairs.own, logp_sum=sums, equivalent=pairs.equivalent, scored=pairs.scored)


def pair_matrix(agent: Agent, pairs: Pairs, memo: Memo | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The ``(rows, columns)`` summed log-probs and token counts of the pairs (NaN sums where not scored).

    Each distinct (context, text) pair is scored once: text-identical contexts (trajectory draws of one turn,
    first turns of the samples of one seed), repeated texts, and pairs already in ``memo`` (the other scheme
    of the same batch, e.g. every first turn of a single-turn env) are not sent to the agent again.
    """
    memo = {} if memo is None else memo
    keys = [c.key() for c in pairs.contexts]
    context_of = dict(zip(reversed(keys), reversed(pairs.contexts), strict=True))  # first context of each key
    if pairs.scored is None:
        texts = list(dict.fromkeys(pairs.texts))
        todo: dict[tuple[str, ...], list[str]] = {}  # missing texts -> the context keys that miss exactly those
        for key in dict.fromkeys(keys):
            missing = tuple(t for t in texts if (key, t) not in memo)
            if missing:
                todo.setdefault(missing, []).append(key)
        for missing, group in todo.items():
            sums, counts = agent.score_matrix([context_of[k] for k in group], list(missing))
            _remember(memo, group, missing, sums, counts)
    else:
        needed: dict[str, dict[str, None]] = {}  # context key -> its texts still to score, in first-seen order
        for text, row in zip(pairs.texts, pairs.scored, strict=True):
            for j in np.flatnonzero(row):
                if (keys[j], text) not in memo:
                    needed.setdefault(keys[j], {})[text] = None
        if needed:
            group = list(needed)
            missing = list(dict.fromkeys(t for k in group for t in needed[k]))
            at = {t: i for i, t in enumerate(missing)}
            wanted = np.zeros((len(missing), len(group)), dtype=bool)
            for j, key in enumerate(group):
                wanted[[at[t] for t in needed[key]], j] = True
            if _takes_wanted(agent):
                sums, counts = agent.score_matrix([context_of[k] for k in group], missing, wanted=wanted)
            else:  # an agent written before ``wanted`` existed: the full block, of which only ``wanted`` is kept
                sums, counts = agent.score_matrix([context_of[k] for k in group], missing)
            _remember(memo, group, missing, sums, counts, wanted)
    scored = np.ones((len(pairs.texts), len(keys)), dtype=bool) if pairs.scored is None else pairs.scored
    entries = [
        [(k, t) if s else None for k, s in zip(keys, row, strict=True)]
        for t, row in zip(pairs.texts, scored, strict=True)
    ]
    # unscored entries: NaN sums (never read by collapse_metrics) over a count of 1
    sums = np.array([[memo[e][0] if e else math.nan for e in row] for row in entries], dtype=np.float64)
    counts = np.array([[memo[e][1] if e else 1 for e in row] for row in entries], dtype=np.float64)
    return sums, np.maximum(counts, 1.0)


BOOTSTRAP_ROUNDS = 200
"""Resamples of the trajectory scheme's draw-level bootstrap."""


def draw_bootstrap(
    sums: np.ndarray,
    counts: np.ndarray,
    equivalent: np.ndarray,
    rng: np.random.Generator,
    rounds: int = BOOTSTRAP_ROUNDS,
) -> dict[str, float]:
    """Standard errors of the trajectory family that include which turns the sampler drew.

    A trajectory draw is both a row and a column, and the draws are independent, so resampling the draws with
    replacement (rows and columns together) mimics what another sampler seed would draw from the same episodes;
    the standard deviation of each proxy over the resamples is its standard error. (The rows-only error
    treats the columns as fixed and misses that part.)
    """
    n = sums.shape[0]
    values: dict[str, list[float]] = {}
    for _ in range(rounds):
        idx = rng.integers(n, size=n)
        pick = np.ix_(idx, idx)
        try:
            family = collapse_metrics(sums[pick] / counts[pick], np.arange(n), logp_sum=sums[pick],
                                      equivalent=equivalent[pick])  # fmt: skip
        except ValueError:  # a resample whose draws are all one turn: nothing to compare
            continue
        for key, estimate in family.items():
            if np.isfinite(estimate.value):
                values.setdefault(key, []).append(estimate.value)
    return {key: float(np.std(v, ddof=1)) for key, v in values.items() if len(v) > 1}


def _takes_wanted(agent: Agent) -> bool:
    """Whether ``agent.score_matrix`` accepts ``wanted`` (as a parameter or through ``**kwargs``)."""
    try:
        parameters = inspect.signature(agent.score_matrix).parameters
    except (TypeError, ValueError):  # no introspectable signature: assume the current protocol
        return True
    return "wanted" in parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


def _remember(memo: Memo, keys: list[str], texts: Sequence[str], sums, counts, wanted=None) -> None:
    for j, key in enumerate(keys):
        for i, text in enumerate(texts):
            if wanted is None or wanted[i, j]:
                memo[(key, text)] = (float(sums[i][j]), int(counts[i][j]))


def collapse_for(
    agent: Agent,
    episodes: Sequence[EpisodeRecord],
    run_seed: int,
    mi_samples: int,
    mi_columns: int | None = None,
    *,
    schemes: Sequence[str] = SCHEMES,
    memo: Memo | None = None,
) -> dict[str, dict[str, Estimate] | str]:
    """The schemes (both by default) for one (agent, env) batch: a metrics dict, or the reason it is unavailable
    (also when the agent's scores cannot support the family: one batch never sinks a run).

    ``mi_columns``: score each row under that many columns (its own and uniformly drawn others) instead of all.
    ``memo``: scores of the same agent kept from an earlier call (e.g. the same episodes under other sampler seeds).
    The learner calls this too (its episodes as records, its policy as the agent), so training-time and
    evaluation-time MI are one estimator.
    """
    unknown = [s for s in schemes if s not in SCHEMES]
    if unknown:
        raise ValueError(f"schemes must be among {SCHEMES}, got {unknown[0]!r}")
    out: dict[str, dict[str, Estimate] | str] = {}
    memo = {} if memo is None else memo
    for scheme in schemes:
        if mi_samples == 0:
            out[scheme] = "disabled (mi_samples = 0)"
            continue
        if not agent.can_score:
            out[scheme] = f"agent {agent.spec!r} cannot score text"
            continue
        if not episodes:
            out[scheme] = "no episodes"
            continue
        # not seeded by the agent: its spec can hold a model's path, and where a model lives must not change
        # which pairs are drawn; every agent of a run gets the same draws over its own episodes
        rng = np.random.default_rng(derive_seed("mi", scheme, run_seed, episodes[0]["env_id"]))
        try:
            pairs = (first_turn_pairs if scheme == "first_turn" else trajectory_pairs)(episodes, rng, mi_samples)
            if mi_columns is not None:
                pairs = subsample_columns(pairs, rng, mi_columns)
            sums, counts = pair_matrix(agent, pairs, memo)
            family = pair_family(pairs, sums, counts)
            if scheme == "trajectory" and pairs.scored is None:
                spread = draw_bootstrap(sums, counts, pairs.equivalent, rng)
                family = {
                    k: (dataclasses.replace(e, stderr=spread[k]) if k in spread else e) for k, e in family.items()
                }
            out[scheme] = family
        except (MetricUnavailable, ScoringUnavailable) as exc:
            out[scheme] = str(exc)
        except ValueError as exc:  # the scores cannot support the family (e.g. -inf under a reasoning's own prompt)
            out[scheme] = f"the MI family could not be computed from {agent.spec!r}'s scores: {exc}"
        except Exception as exc:  # the agent failed while scoring (out of memory, a backend error): this batch only
            out[scheme] = f"scoring with {agent.spec!r} failed: {type(exc).__name__}: {exc}"
            warnings.warn(f"{episodes[0]['env_id']} {scheme}: {out[scheme]}", stacklevel=2)
    return out


def mi_family(
    agent: Agent | str,
    pairs: Sequence[tuple[Prompt, str]],
    *,
    prefill: str = "<think>",
    mi_columns: int | None = None,
    seed: int = 0,
    options: Any = None,
) -> dict[str, Estimate]:
    """The MI proxy family of your own (prompt, reasoning) pairs, scored by a model: each value an
    :class:`~harness.metrics.Estimate` (value, stderr, n), or an ``Unavailable`` with the reason.

    ``agent``: any agent spec (``"hf:/path/to/checkpoint"``, ``"tiny"``, ``"vllm:…"``; ``harness ls`` lists them)
    or an agent already built. ``pairs``: (prompt, reasoning), the prompt a chat or one user message, the
    reasoning the text between ``<think>`` and ``</think>`` the model wrote after it (``ragen_envs.parsing.
    reasoning_of`` cuts it out of a response). Each reasoning is scored after its own and every other distinct
    prompt, then ``prefill``; pairs with text-identical prompts share a column. ``mi_columns`` scores each row under
    its own and that many - 1 other prompts instead (drawn from ``seed``). ``options``: the
    :class:`~harness.agents.options.AgentOptions` to build a spec with (temperature 1.0 by default).

    The same estimator as ``harness run`` and the learner (:func:`harness.mi.estimator.collapse_metrics`).
    """
    from harness.agents.registry import make_agent

    built = isinstance(agent, str)
    scorer = make_agent(agent, options) if built else agent
    try:
        if not scorer.can_score:
            raise ScoringUnavailable(f"agent {scorer.spec!r} cannot score text, so it has no MI family")
        kept = [(p, z) for p, z in pairs if z]
        if not kept:
            raise ValueError("no pair has reasoning text (every reasoning is empty)")
        batch = context_pairs(pair_contexts([p for p, _ in kept], prefill), [z for _, z in kept])
        if mi_columns is not None:
            batch = subsample_columns(batch, np.random.default_rng(derive_seed("mi-pairs", seed)), mi_columns)
        return score_pairs(scorer, batch)
    finally:
        if built:
            scorer.close()
