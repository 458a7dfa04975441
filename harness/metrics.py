"""Metrics: pure functions over episode records and log-prob matrices, each an :class:`Estimate`.

Episode records are the dicts of ``episodes.jsonl`` (see :mod:`harness.records`). Every function raises
``ValueError`` on empty input and :class:`MetricUnavailable` when the records cannot support the metric
(e.g. token entropy from an agent that does not report it): a missing number is never written as 0.

The MI proxy family (:func:`collapse_metrics`) follows docs/design.md. ``L[i, j]`` is the mean per-token
log-prob of reasoning ``i`` under prompt ``j`` and ``own(i)`` the column of its own prompt:

- ``matched_i = L[i, own(i)]``; ``marginal_i = logsumexp_j L[i, j] - log N`` (uniform mixture over columns)
- ``mi_estimate = mean(matched - marginal)``; ``cond_entropy_estimate = -mean(matched)`` (≈ H(Z|X));
  ``reasoning_entropy_estimate = -mean(marginal)`` (≈ H(Z))
- ``retrieval_accuracy[@k]``: probability that a column equivalent to ``own(i)`` is among the top ``k``
  columns of row ``i``. Ties are broken uniformly at random and the *expected* hit is counted (so an
  input-agnostic scorer, whose rows are all ties, sits exactly at chance instead of at whatever column
  ``argmax`` happens to return first). ``retrieval_chance = mean_i |equivalent(own(i))| / N``.
- ``mi_zscore = mean((matched - marginal) / (std(marginal) + 1e-3))`` (population std over rows); unavailable
  when ``std(marginal) <= 1e-3`` (a deterministic agent: the ratio would only rescale the gap ~1000-fold)
- ``distinct_prompts``: the number of distinct prompts among the columns. With fewer than 2 the whole family is
  unavailable (nothing to tell a reasoning's own prompt from); below ``FEW_PROMPTS`` reports flag it.
- with ``logp_sum``: the same with sums → ``mi_estimate_seq``, ``cond_entropy_estimate_seq``,
  ``reasoning_entropy_estimate_seq``, ``mi_zscore_seq`` (retrieval is identical under sums: a row's
  token count does not depend on the column).

Standard errors treat rows as independent (they are not quite: rows share columns), so read them as a
scale of the sampling noise, not as exact intervals.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

STD_EPS = 1e-3
EMA_DECAY = 0.9
RETRIEVAL_TOP_K = (2, 4, 8)


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


# ---- episode metrics ----------------------------------------------------------------------------------------
def _require(episodes: Sequence[dict], name: str) -> Sequence[dict]:
    if len(episodes) == 0:
        raise ValueError(f"{name}: no episodes")
    return episodes


def success_rate(episodes: Sequence[dict]) -> Estimate:
    """Fraction of episodes whose final step reported ``success``."""
    return Estimate.of((bool(ep["success"]) for ep in _require(episodes, "success_rate")), "success_rate")


def mean_return(episodes: Sequence[dict]) -> Estimate:
    """Mean undiscounted episode return (turn rewards summed, format penalties included)."""
    return Estimate.of((ep["return"] for ep in _require(episodes, "mean_return")), "mean_return")


def mean_turns(episodes: Sequence[dict]) -> Estimate:
    """Mean number of turns per episode."""
    return Estimate.of((len(ep["turns"]) for ep in _require(episodes, "mean_turns")), "mean_turns")


def _turns(episodes: Sequence[dict], name: str) -> list[dict]:
    turns = [turn for ep in _require(episodes, name) for turn in ep["turns"]]
    if not turns:
        raise ValueError(f"{name}: the episodes have no turns")
    return turns


def invalid_action_rate(episodes: Sequence[dict]) -> Estimate:
    """Fraction of turns whose response did not parse or named an unknown action (``action_is_valid`` False)."""
    turns = _turns(episodes, "invalid_action_rate")
    return Estimate.of((not turn["info"].get("action_is_valid", False) for turn in turns), "invalid_action_rate")


def mean_tokens(episodes: Sequence[dict]) -> Estimate:
    """Mean response length per turn in the agent's tokens (words for scripted agents)."""
    turns = _turns(episodes, "mean_tokens")
    if any(turn.get("tokens") is None for turn in turns):
        raise MetricUnavailable("the agent did not report token counts")
    return Estimate.of((turn["tokens"] for turn in turns), "mean_tokens")


def token_entropy(episodes: Sequence[dict]) -> Estimate:
    """Policy entropy over the vocabulary, averaged over all response tokens (token-mean, as verl logs it).

    The value is ``sum(entropies) / sum(tokens)`` over the batch; the standard error is that of the per-turn
    means (turns weighted equally), since tokens within a turn are far from independent.
    """
    turns = _turns(episodes, "token_entropy")
    usable = [t for t in turns if t.get("entropy_sum") is not None and t.get("tokens")]
    if not usable:
        raise MetricUnavailable("the agent does not report token entropies")
    total = math.fsum(t["entropy_sum"] for t in usable)
    count = sum(int(t["tokens"]) for t in usable)
    per_turn = Estimate.of(t["entropy_sum"] / t["tokens"] for t in usable)
    return Estimate(total / count, per_turn.stderr, count)


def group_returns(episodes: Sequence[dict]) -> dict[tuple, list[float]]:
    """Episode returns grouped by prompt (env id, agent, env seed), in sample order."""
    groups: dict[tuple, list[tuple[int, float]]] = defaultdict(list)
    for ep in episodes:
        groups[(ep["env_id"], ep.get("agent", ""), ep["seed"])].append((ep["sample"], float(ep["return"])))
    return {key: [r for _, r in sorted(values)] for key, values in sorted(groups.items(), key=lambda kv: str(kv[0]))}


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


def pass_at_k(episodes: Sequence[dict], k: int) -> Estimate:
    """Mean over prompt groups of the unbiased pass@k estimator; n = number of groups."""
    groups: dict[tuple, list[bool]] = defaultdict(list)
    for ep in _require(episodes, "pass_at_k"):
        groups[(ep["env_id"], ep.get("agent", ""), ep["seed"])].append(bool(ep["success"]))
    if any(len(g) < k for g in groups.values()):
        raise MetricUnavailable(f"pass@{k} needs at least {k} samples in every group")
    return Estimate.of((pass_at_k_unbiased(len(g), sum(g), k) for g in groups.values()), "pass_at_k")


def reward_std_in_group(episodes: Sequence[dict]) -> Estimate:
    """Mean over prompt groups of the in-group std (ddof 1) of raw episode returns: the SNR signal."""
    groups = group_returns(_require(episodes, "reward_std_in_group"))
    if any(len(g) < 2 for g in groups.values()):
        raise MetricUnavailable("in-group reward spread needs at least 2 samples per prompt (--samples >= 2)")
    return Estimate.of((float(np.std(g, ddof=1)) for g in groups.values()), "reward_std_in_group")


def zero_variance_groups(episodes: Sequence[dict]) -> Estimate:
    """Fraction of prompt groups whose returns are all equal (no task gradient; SNR filtering drops them)."""
    groups = group_returns(_require(episodes, "zero_variance_groups"))
    if any(len(g) < 2 for g in groups.values()):
        raise MetricUnavailable("in-group reward spread needs at least 2 samples per prompt (--samples >= 2)")
    return Estimate.of((float(np.ptp(g) <= 1e-12) for g in groups.values()), "zero_variance_groups")


# ---- the MI proxy family ------------------------------------------------------------------------------------
def _check_matrix(name: str, matrix: Any, own: np.ndarray | None, scored: np.ndarray | None = None) -> np.ndarray:
    """The matrix as float64, validated where ``scored`` (all entries by default; a mask :func:`_check_scored`
    accepted for this shape); unscored entries become -inf (they then weigh nothing in a logsumexp and never
    outrank a scored column)."""
    array = np.asarray(matrix, dtype=np.float64)
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D matrix (reasonings x prompts), got shape {array.shape}")
    if scored is not None:
        array = np.where(scored, array, -np.inf)
    bad_rows = np.flatnonzero(np.isnan(array).any(axis=1) | np.isposinf(array).any(axis=1))
    if bad_rows.size:
        raise ValueError(
            f"{name} has NaN or +inf in row(s) {bad_rows[:8].tolist()}: log-probs must be finite "
            "(or -inf for a reasoning impossible under another prompt)"
        )
    if own is not None:
        matched = array[np.arange(array.shape[0]), own]
        bad = np.flatnonzero(~np.isfinite(matched))
        if bad.size:
            raise ValueError(
                f"{name} row(s) {bad[:8].tolist()} are -inf under their own prompt: a sampled reasoning must have "
                "a finite log-prob under the prompt it was sampled from"
            )
    return array


def _check_scored(scored: Any, shape: tuple[int, int], own: np.ndarray) -> np.ndarray | None:
    """``scored`` as a bool matrix that holds every row's own column and, when there are other columns, at
    least one of them (the marginal needs a sample of the others); ``None`` means every entry."""
    if scored is None:
        return None
    mask = np.asarray(scored)
    if mask.shape != shape or mask.dtype != np.bool_:
        raise ValueError(f"scored must be a {shape} boolean matrix, got {mask.dtype} {mask.shape}")
    rows = np.arange(shape[0])
    missing = np.flatnonzero(~mask[rows, own])
    if missing.size:
        raise ValueError(f"scored row(s) {missing[:8].tolist()} leave out their own column")
    if shape[1] > 1:
        alone = np.flatnonzero(mask.sum(axis=1) < 2)
        if alone.size:
            raise ValueError(
                f"scored row(s) {alone[:8].tolist()} have their own column only: the marginal needs >= 1 other"
            )
    return mask


def _check_own(own_column: Any, rows: int, cols: int) -> np.ndarray:
    own = np.asarray(own_column)
    if own.shape != (rows,) or (own.size and not np.issubdtype(own.dtype, np.integer)):
        raise ValueError(f"own_column must be {rows} integers (one per reasoning row), got {own_column!r:.80}")
    if own.size and (own.min() < 0 or own.max() >= cols):
        raise ValueError(f"own_column values must be column indices in [0, {cols - 1}], got {own.min()}..{own.max()}")
    return own.astype(np.int64)


def _logsumexp_rows(matrix: np.ndarray) -> np.ndarray:
    top = matrix.max(axis=1, keepdims=True)  # finite: every row's own entry is finite
    return (top + np.log(np.exp(matrix - top).sum(axis=1, keepdims=True)))[:, 0]


def _column_weights(scored: np.ndarray | None, own: np.ndarray, shape: tuple[int, int]) -> np.ndarray | None:
    """Log-weights that make a row's scored columns an unbiased estimate of its sum over all ``N`` columns:
    the own column counts once, each of the ``n - 1`` other scored columns for ``(N - 1) / (n - 1)`` of them
    (uniformly drawn columns; all 0 when every column is scored, i.e. the dense sum)."""
    if scored is None:
        return None
    rows, cols = shape
    others = scored.sum(axis=1) - 1
    log_w = np.where(scored, np.log(max(cols - 1, 1) / np.maximum(others, 1))[:, None], -np.inf)
    log_w[np.arange(rows), own] = 0.0
    return log_w


def _mi_family(
    matrix: np.ndarray, own: np.ndarray, suffix: str, log_weights: np.ndarray | None = None
) -> dict[str, Estimate]:
    rows, cols = matrix.shape
    matched = matrix[np.arange(rows), own]
    weighted = matrix if log_weights is None else matrix + log_weights
    marginal = _logsumexp_rows(weighted) - math.log(cols)
    gap = matched - marginal
    sigma = float(marginal.std())
    if sigma > STD_EPS:
        zscore: Estimate = Estimate.of(gap / (sigma + STD_EPS))
    else:  # dividing by ~STD_EPS would scale the gap ~1000-fold (values in the thousands for a deterministic agent)
        zscore = Unavailable.because(
            f"the marginal log-prob has no spread across reasonings (std {sigma:.2g} <= {STD_EPS:g}), so the "
            "z-score would only rescale the MI gap by 1/std; read mi_estimate instead"
        )
    return {
        f"mi_estimate{suffix}": Estimate.of(gap),
        f"cond_entropy_estimate{suffix}": Estimate.of(-matched),
        f"reasoning_entropy_estimate{suffix}": Estimate.of(-marginal),
        f"mi_zscore{suffix}": zscore,
    }


def topk_hit_probability(row: np.ndarray, correct: np.ndarray, k: int) -> float:
    """P(some correct column is in the top ``k`` of ``row``) with ties broken uniformly at random."""
    best = row[correct].max()
    above = int((row > best).sum())
    tied = int((row == best).sum())
    tied_correct = int((row[correct] == best).sum())
    slots = k - above
    if slots <= 0:
        return 0.0
    if slots >= tied:
        return 1.0
    return 1.0 - math.comb(tied - tied_correct, slots) / math.comb(tied, slots)


def _retrieval(
    matrix: np.ndarray, own: np.ndarray, equivalent: np.ndarray, scored: np.ndarray | None = None
) -> dict[str, Estimate]:
    """Top-k retrieval of each row's own prompt among its scored columns (all by default), and its chance."""
    rows = matrix.shape[0]
    correct = equivalent[own]  # (rows, cols)
    scored = np.ones_like(correct) if scored is None else scored
    candidates = [matrix[i, scored[i]] for i in range(rows)]
    right = [correct[i, scored[i]] for i in range(rows)]
    out = {}
    for k in (1, *RETRIEVAL_TOP_K):
        hits = [topk_hit_probability(candidates[i], right[i], k) for i in range(rows)]
        out["retrieval_accuracy" if k == 1 else f"retrieval_accuracy@{k}"] = Estimate.of(hits)
    out["retrieval_chance"] = Estimate.of([r.sum() / r.size for r in right])
    return out


def collapse_metrics(
    logp_mean: Any, own_column: Any, logp_sum: Any = None, equivalent: Any = None, scored: Any = None
) -> dict[str, Estimate]:
    """The MI proxy family of docs/design.md from a cross-scoring matrix (see the module docstring).

    Args:
        logp_mean: ``(M, N)``; ``[i, j]`` = mean per-token log p(reasoning i | prompt j).
        own_column: ``(M,)`` ints; the column of the prompt reasoning ``i`` was sampled under.
        logp_sum: optional ``(M, N)`` summed log-probs; adds the ``*_seq`` keys.
        equivalent: optional ``(N, N)`` bool; ``[a, b]`` True when prompts a and b are token-identical
            (retrieving an equivalent column counts as correct). The diagonal is always True.
        scored: optional ``(M, N)`` bool for column subsampling: only these entries were scored (the others
            are ignored, NaN allowed). Each row needs its own column and at least one other, drawn uniformly
            from its other columns. The marginal then weighs each other scored column for ``(N - 1) / (n - 1)``
            columns (an unbiased estimate of the mixture's sum inside the log; exact when rows are
            input-agnostic), and retrieval ranks the own prompt among the row's ``n`` scored columns, with
            chance ``|equivalent ∩ scored| / n``. Omitted: every entry, the dense estimator of docs/design.md.

    Raises ``ValueError`` for empty or mis-shaped input, NaN or +inf anywhere scored, and -inf in a row's own
    column (-inf elsewhere is a legitimate log 0, e.g. a deterministic agent under another prompt).
    """
    shape = np.shape(logp_mean)
    if len(shape) != 2:
        raise ValueError(f"logp_mean must be a 2-D matrix (reasonings x prompts), got shape {shape}")
    own = _check_own(own_column, shape[0], shape[1])
    mask = _check_scored(scored, shape, own)
    matrix = _check_matrix("logp_mean", logp_mean, own, mask)
    rows, cols = matrix.shape
    if equivalent is None:
        eq = np.eye(cols, dtype=bool)
    else:
        eq = np.asarray(equivalent)
        if eq.shape != (cols, cols) or eq.dtype != np.bool_:
            raise ValueError(f"equivalent must be a ({cols}, {cols}) boolean matrix, got {eq.dtype} {eq.shape}")
        eq = eq | eq.T | np.eye(cols, dtype=bool)
    prompts = distinct_prompts(eq)
    if prompts < 2:
        reason = (
            "every scored pair has the same prompt (1 distinct prompt): MI and retrieval compare a reasoning's own "
            "prompt with others, so they need at least 2 distinct prompts (more env seeds)"
        )
        keys = COLLAPSE_KEYS + (COLLAPSE_SEQ_KEYS if logp_sum is not None else ())
        return {key: Unavailable.because(reason) for key in keys}
    log_weights = _column_weights(mask, own, matrix.shape)
    out = _mi_family(matrix, own, "", log_weights)
    out["distinct_prompts"] = Estimate(float(prompts), 0.0, rows)
    out.update(_retrieval(matrix, own, eq, mask))
    if logp_sum is not None:
        if np.shape(logp_sum) != matrix.shape:
            raise ValueError(f"logp_sum must have the shape of logp_mean {matrix.shape}, got {np.shape(logp_sum)}")
        sums = _check_matrix("logp_sum", logp_sum, own, mask)
        out.update(_mi_family(sums, own, "_seq", log_weights))
    return out


def distinct_prompts(equivalent: np.ndarray) -> int:
    """How many distinct prompts the columns hold (classes of the token-identity matrix ``equivalent``)."""
    return len({row.tobytes() for row in np.asarray(equivalent, dtype=bool)})


FEW_PROMPTS = 4
"""Below this many distinct prompts the MI family is shown with a warning: with 2-3 columns the rows' spread
(the ±) says nothing about how much the estimate would move with other prompts."""

COLLAPSE_KEYS = (
    "mi_estimate", "cond_entropy_estimate", "reasoning_entropy_estimate", "mi_zscore",
    "retrieval_accuracy", "retrieval_accuracy@2", "retrieval_accuracy@4", "retrieval_accuracy@8", "retrieval_chance",
    "distinct_prompts",
)  # fmt: skip
COLLAPSE_SEQ_KEYS = ("mi_estimate_seq", "cond_entropy_estimate_seq", "reasoning_entropy_estimate_seq", "mi_zscore_seq")


class ZScoreEMA:
    """``mi_zscore`` normalized by an EMA of the marginal's std across batches (σ_ema ← 0.9 σ_ema + 0.1 σ).

    For learners that compute the family every few steps; the first call initialises σ_ema to σ.
    """

    def __init__(self, decay: float = EMA_DECAY) -> None:
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"decay must be in [0, 1), got {decay!r}")
        self.decay = decay
        self.sigma_ema: float | None = None

    def update(self, logp_mean: Any, own_column: Any) -> Estimate:
        """Fold in one batch's matrix and return its EMA-normalized z-score."""
        shape = np.shape(logp_mean)
        if len(shape) != 2:
            raise ValueError(f"logp_mean must be a 2-D matrix, got shape {shape}")
        own = _check_own(own_column, shape[0], shape[1])
        matrix = _check_matrix("logp_mean", logp_mean, own)
        marginal = _logsumexp_rows(matrix) - math.log(matrix.shape[1])
        gap = matrix[np.arange(matrix.shape[0]), own] - marginal
        sigma = float(marginal.std())
        self.sigma_ema = sigma if self.sigma_ema is None else self.decay * self.sigma_ema + (1 - self.decay) * sigma
        return Estimate.of(gap / (self.sigma_ema + STD_EPS))


# ---- registry for `harness ls` and the report ---------------------------------------------------------------
METRICS: dict[str, tuple[str, bool | None]] = {
    "success_rate": ("fraction of episodes that ended in success", True),
    "mean_return": ("mean episode return, format penalties included", True),
    "pass@k": ("unbiased pass@k over the k samples of each seed (k = --samples)", True),
    "invalid_action_rate": ("fraction of turns whose response did not parse or named an unknown action", False),
    "mean_turns": ("mean turns per episode", None),
    "mean_tokens": ("mean response tokens per turn (words for scripted agents)", None),
    "token_entropy": ("policy entropy over the vocabulary, averaged over response tokens", None),
    "reward_std_in_group": ("mean in-group std of returns over the samples of one seed (SNR signal)", None),
    "zero_variance_groups": ("fraction of seeds whose samples all got the same return", None),
    "mi_estimate": ("I(X;Z) proxy: mean(matched - marginal) log-prob per token; <= log N", True),
    "cond_entropy_estimate": ("H(Z|X) proxy: -mean(matched)", None),
    "reasoning_entropy_estimate": ("H(Z) proxy: -mean(marginal)", None),
    "retrieval_accuracy": ("how often a reasoning's own prompt scores it best (top-1; @2/@4/@8 too)", True),
    "retrieval_chance": ("retrieval accuracy of an input-agnostic scorer (~1/N)", None),
    "mi_zscore": (
        "mean((matched - marginal) / (std(marginal) + 1e-3)); best correlate of success in RAGEN-2; "
        "n/a when std(marginal) <= 1e-3",
        True,
    ),  # fmt: skip
    "distinct_prompts": (f"distinct prompts the MI family compared (< 2: unavailable; < {FEW_PROMPTS}: flagged)", None),
}
