"""Metrics: pure functions over episode records, each an :class:`Estimate`, and the one registry of them.

Every metric is registered where its function is defined, with ``@metric(higher_is_better=...)``; its
description is its docstring's first paragraph. The registry (:func:`registry`) is the only table of metrics:
the run summary (its rows and ``definitions``), ``harness ls``, the report, the leaderboard (what a replay
recomputes, what is self-reported) and the learner's logs read it. Two families: ``episodes`` (here:
``fn(episodes)``, or ``fn(episodes, k)`` for pass@k) and ``collapse`` (the MI proxy family of a cross-scoring
matrix, :mod:`harness.mi.estimator`, reported per sampling scheme as ``<scheme>/<name>``).

Episode records are :data:`harness.records.EpisodeRecord`. Every function raises ``ValueError`` on empty input
and :class:`MetricUnavailable` when the records cannot support the metric (e.g. token entropy from an agent
that does not report it): a missing number is never written as 0.
"""

from __future__ import annotations

import inspect
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.records import EpisodeRecord, TurnRecord

__all__ = [
    "Estimate",
    "Metric",
    "MetricUnavailable",
    "Unavailable",
    "episode_metrics",
    "invalid_action_rate",
    "lookup",
    "mean_return",
    "mean_tokens",
    "mean_turns",
    "metric",
    "pass_at_k",
    "pass_at_k_unbiased",
    "registry",
    "reward_std_in_group",
    "success_rate",
    "token_entropy",
    "zero_variance_groups",
]


class MetricUnavailable(Exception):
    """The records cannot support this metric (the message says why); report it as unavailable, never as 0."""


@dataclass(frozen=True)
class Estimate:
    """A metric's value with its standard error (NaN when ``n < 2``) and the number of units averaged."""

    value: float
    stderr: float
    n: int

    @classmethod
    def of(cls, values: Iterable[float], name: str = "values") -> Estimate:
        """Mean and standard error of the mean (ddof 1) of ``values``; raises on empty input."""
        array = np.asarray(list(values), dtype=np.float64)
        if array.size == 0:
            raise ValueError(f"{name}: cannot estimate a mean from no values")
        n = int(array.size)
        stderr = float(array.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
        return cls(float(array.mean()), stderr, n)

    def to_json(self) -> dict[str, Any]:
        """JSON-safe form: NaN/inf become ``None`` (JSON has no NaN)."""
        return {"value": _finite_or_none(self.value), "stderr": _finite_or_none(self.stderr), "n": self.n}


@dataclass(frozen=True)
class Unavailable(Estimate):
    """A metric of a family that cannot be computed from this input: NaN value, and the reason in ``to_json``."""

    reason: str = ""

    @classmethod
    def because(cls, reason: str) -> Unavailable:
        """An unavailable estimate (NaN value and stderr, n 0) with ``reason``."""
        return cls(math.nan, math.nan, 0, reason)

    def to_json(self) -> dict[str, Any]:
        """JSON form: null value and stderr, n 0, and the reason under ``"unavailable"``."""
        return {"value": None, "stderr": None, "n": 0, "unavailable": self.reason}


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


# ---- the registry -------------------------------------------------------------------------------------------
EPISODES = "episodes"
COLLAPSE = "collapse"


@dataclass(frozen=True)
class Metric:
    """A registered metric: its function, which way is better, and what it means."""

    name: str
    fn: Callable[..., Estimate]
    higher_is_better: bool | None
    """True/False: which direction is better; None: a descriptive quantity with no better direction."""
    description: str
    """The docstring's first paragraph as a phrase (a definition in summary.json, ``harness ls``, report.md)."""
    family: str
    """``episodes`` (``fn(episodes)``, or ``fn(episodes, k)`` with k the samples per seed) or ``collapse``."""
    replayable: bool
    """Whether the metric is a function of what a replay of the episodes checks (the leaderboard recomputes
    those); token counts, entropies and the MI family need the model."""

    @property
    def takes_samples(self) -> bool:
        """Whether ``fn`` takes the number of samples per seed (``k``) after the episodes."""
        return "k" in inspect.signature(self.fn).parameters


_REGISTRY: dict[str, Metric] = {}


def metric(
    name: str | None = None, *, higher_is_better: bool | None, family: str = EPISODES, replayable: bool = True
) -> Callable[[Callable[..., Estimate]], Callable[..., Estimate]]:
    """Register the decorated function as the metric ``name`` (default: the function's name)."""

    def register(fn: Callable[..., Estimate]) -> Callable[..., Estimate]:
        key = name or fn.__name__
        if key in _REGISTRY:
            raise ValueError(
                f"metric {key!r} is registered twice ({_REGISTRY[key].fn.__qualname__}, {fn.__qualname__})"
            )
        if family not in (EPISODES, COLLAPSE):
            raise ValueError(f"metric {key!r}: family must be {EPISODES!r} or {COLLAPSE!r}, got {family!r}")
        replay = replayable and family == EPISODES
        _REGISTRY[key] = Metric(key, fn, higher_is_better, _description(fn), family, replay)
        return fn

    return register


def _description(fn: Callable) -> str:
    """The docstring's first paragraph as a phrase: one line, sentence case undone, no final period."""
    paragraph = " ".join(line.strip() for line in (inspect.getdoc(fn) or "").split("\n\n")[0].splitlines())
    if not paragraph:
        raise ValueError(f"metric {fn.__qualname__} has no docstring: its first paragraph is its description")
    if paragraph[0].isupper() and paragraph[1:2].islower():  # "Fraction of ..." but not "I(X;Z) proxy"
        paragraph = paragraph[0].lower() + paragraph[1:]
    return paragraph.removesuffix(".")


def registry() -> dict[str, Metric]:
    """Every registered metric by name, in registration order (the episode family, then the collapse family, which
    the ``harness`` package registers on import)."""
    return dict(_REGISTRY)


def lookup(key: str) -> Metric:
    """The registered metric a summary key reports: ``<scheme>/`` prefixes and ``@k``/``_seq`` variants removed."""
    name = key.rpartition("/")[2]
    found = registry().get(name) or _REGISTRY.get(name.partition("@")[0].removesuffix("_seq"))
    if found is None:
        import difflib

        close = difflib.get_close_matches(name, list(_REGISTRY), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise KeyError(f"unknown metric {key!r}.{hint} Available: {', '.join(_REGISTRY)}")
    return found


def episode_metrics(*, replayable_only: bool = False) -> list[Metric]:
    """The episode family in the order a summary row lists it: ``fn(episodes)`` metrics, then pass@k."""
    chosen = [m for m in registry().values() if m.family == EPISODES and (m.replayable or not replayable_only)]
    return [m for m in chosen if not m.takes_samples] + [m for m in chosen if m.takes_samples]


def definitions() -> dict[str, str]:
    """``{name: description}`` of every metric (summary.json's ``definitions``)."""
    return {name: m.description for name, m in registry().items()}


# ---- episode metrics ----------------------------------------------------------------------------------------
def _require(episodes: Sequence[EpisodeRecord], name: str) -> Sequence[EpisodeRecord]:
    if len(episodes) == 0:
        raise ValueError(f"{name}: no episodes")
    return episodes


def _turns(episodes: Sequence[EpisodeRecord], name: str) -> list[TurnRecord]:
    turns = [turn for ep in _require(episodes, name) for turn in ep["turns"]]
    if not turns:
        raise ValueError(f"{name}: the episodes have no turns")
    return turns


@metric(higher_is_better=True)
def success_rate(episodes: Sequence[EpisodeRecord]) -> Estimate:
    """Fraction of episodes that ended in success.

    An episode succeeded when its final step reported ``success``.
    """
    return Estimate.of((bool(ep["success"]) for ep in _require(episodes, "success_rate")), "success_rate")


@metric(higher_is_better=True)
def mean_return(episodes: Sequence[EpisodeRecord]) -> Estimate:
    """Mean episode return, format penalties included.

    The return is the undiscounted sum of the turn rewards.
    """
    return Estimate.of((ep["return"] for ep in _require(episodes, "mean_return")), "mean_return")


@metric("pass@k", higher_is_better=True)
def pass_at_k(episodes: Sequence[EpisodeRecord], k: int) -> Estimate:
    """Unbiased pass@k over the k samples of each seed (k = --samples).

    The mean over prompt groups of :func:`pass_at_k_unbiased`; n is the number of groups.
    """
    groups: dict[tuple, list[bool]] = defaultdict(list)
    for ep in _require(episodes, "pass_at_k"):
        groups[(ep["env_id"], ep.get("agent", ""), ep["seed"])].append(bool(ep["success"]))
    if any(len(g) < k for g in groups.values()):
        raise MetricUnavailable(f"pass@{k} needs at least {k} samples in every group")
    return Estimate.of((pass_at_k_unbiased(len(g), sum(g), k) for g in groups.values()), "pass_at_k")


def pass_at_k_unbiased(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples with ``c`` successes: ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021)."""
    if not (0 <= c <= n) or n < 1:
        raise ValueError(f"need 0 <= c <= n and n >= 1, got n={n}, c={c}")
    if not (1 <= k <= n):
        raise ValueError(f"k must be in [1, n={n}], got {k}")
    if n - c < k:
        return 1.0
    # product form avoids huge binomials: C(n-c, k)/C(n, k) = prod_{i=n-c+1}^{n} (1 - k/i)
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


@metric(higher_is_better=False)
def invalid_action_rate(episodes: Sequence[EpisodeRecord]) -> Estimate:
    """Fraction of turns whose response did not parse or named an unknown action.

    A turn counts as invalid when its step info has ``action_is_valid`` false or absent.
    """
    turns = _turns(episodes, "invalid_action_rate")
    return Estimate.of((not turn["info"].get("action_is_valid", False) for turn in turns), "invalid_action_rate")


@metric(higher_is_better=None)
def mean_turns(episodes: Sequence[EpisodeRecord]) -> Estimate:
    """Mean turns per episode."""
    return Estimate.of((len(ep["turns"]) for ep in _require(episodes, "mean_turns")), "mean_turns")


@metric(higher_is_better=None, replayable=False)
def mean_tokens(episodes: Sequence[EpisodeRecord]) -> Estimate:
    """Mean response tokens per turn (words for scripted agents)."""
    turns = _turns(episodes, "mean_tokens")
    if any(turn.get("tokens") is None for turn in turns):
        raise MetricUnavailable("the agent did not report token counts")
    return Estimate.of((turn["tokens"] for turn in turns), "mean_tokens")


@metric(higher_is_better=None, replayable=False)
def token_entropy(episodes: Sequence[EpisodeRecord]) -> Estimate:
    """Policy entropy over the vocabulary, averaged over response tokens.

    Token-mean, as verl logs it: the value is ``sum(entropies) / sum(tokens)`` over the batch; the standard error
    is that of the per-turn means (turns weighted equally), since tokens within a turn are far from independent.
    """
    turns = _turns(episodes, "token_entropy")
    usable = [t for t in turns if t.get("entropy_sum") is not None and t.get("tokens")]
    if not usable:
        raise MetricUnavailable("the agent does not report token entropies")
    total = math.fsum(t["entropy_sum"] for t in usable)
    count = sum(int(t["tokens"]) for t in usable)
    per_turn = Estimate.of(t["entropy_sum"] / t["tokens"] for t in usable)
    return Estimate(total / count, per_turn.stderr, count)


def group_returns(episodes: Sequence[EpisodeRecord]) -> dict[tuple, list[float]]:
    """Episode returns grouped by prompt (env id, agent, env seed), in sample order."""
    groups: dict[tuple, list[tuple[int, float]]] = defaultdict(list)
    for ep in episodes:
        groups[(ep["env_id"], ep.get("agent", ""), ep["seed"])].append((ep["sample"], float(ep["return"])))
    return {key: [r for _, r in sorted(values)] for key, values in sorted(groups.items(), key=lambda kv: str(kv[0]))}


@metric(higher_is_better=None)
def reward_std_in_group(episodes: Sequence[EpisodeRecord]) -> Estimate:
    """Mean in-group std of returns over the samples of one seed (SNR signal).

    The in-group std is ddof 1, over raw episode returns, averaged over prompt groups.
    """
    groups = group_returns(_require(episodes, "reward_std_in_group"))
    if any(len(g) < 2 for g in groups.values()):
        raise MetricUnavailable("in-group reward spread needs at least 2 samples per prompt (--samples >= 2)")
    return Estimate.of((float(np.std(g, ddof=1)) for g in groups.values()), "reward_std_in_group")


@metric(higher_is_better=None)
def zero_variance_groups(episodes: Sequence[EpisodeRecord]) -> Estimate:
    """Fraction of seeds whose samples all got the same return.

    Such a group has no task gradient; SNR filtering drops it.
    """
    groups = group_returns(_require(episodes, "zero_variance_groups"))
    if any(len(g) < 2 for g in groups.values()):
        raise MetricUnavailable("in-group reward spread needs at least 2 samples per prompt (--samples >= 2)")
    return Estimate.of((float(np.ptp(g) <= 1e-12) for g in groups.values()), "zero_variance_groups")
