"""The estimator half of the MI family: the MI proxy family of a cross-scoring matrix, and its registered metrics.

Used by the harness (:mod:`harness.mi.pairs` draws the pairs from a run's records, :mod:`harness.mi.scoring`
scores them into the matrix) and by the learner (the same samplers on its batches). The family
(:func:`collapse_metrics`): ``L[i, j]`` is the mean per-token log-prob of reasoning ``i`` under prompt ``j`` and
``own(i)`` the column of its own prompt:

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
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.metrics import COLLAPSE, Estimate, Unavailable, metric

STD_EPS = 1e-3
EMA_DECAY = 0.9
RETRIEVAL_TOP_K = (2, 4, 8)


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


@metric(higher_is_better=True, family=COLLAPSE)
def mi_estimate(matched: np.ndarray, marginal: np.ndarray) -> Estimate:
    """I(X;Z) proxy: mean(matched - marginal) log-prob per token; <= log N."""
    return Estimate.of(matched - marginal)


@metric(higher_is_better=None, family=COLLAPSE)
def cond_entropy_estimate(matched: np.ndarray, marginal: np.ndarray) -> Estimate:
    """H(Z|X) proxy: -mean(matched)."""
    return Estimate.of(-matched)


@metric(higher_is_better=None, family=COLLAPSE)
def reasoning_entropy_estimate(matched: np.ndarray, marginal: np.ndarray) -> Estimate:
    """H(Z) proxy: -mean(marginal)."""
    return Estimate.of(-marginal)


@metric(higher_is_better=True, family=COLLAPSE)
def retrieval_accuracy(candidates: Sequence[np.ndarray], right: Sequence[np.ndarray], k: int = 1) -> Estimate:
    """How often a reasoning's own prompt scores it best (top-1; @2/@4/@8 too).

    ``candidates[i]`` are row ``i``'s scored entries and ``right[i]`` which of them are its own prompt (or an
    equivalent one); the expected top-``k`` hit under uniform tie-breaking (:func:`topk_hit_probability`).
    """
    return Estimate.of([topk_hit_probability(row, correct, k) for row, correct in zip(candidates, right, strict=True)])


@metric(higher_is_better=None, family=COLLAPSE)
def retrieval_chance(candidates: Sequence[np.ndarray], right: Sequence[np.ndarray]) -> Estimate:
    """Retrieval accuracy of an input-agnostic scorer (~1/N)."""
    return Estimate.of([correct.sum() / correct.size for correct in right])


@metric(higher_is_better=True, family=COLLAPSE)
def mi_zscore(matched: np.ndarray, marginal: np.ndarray) -> Estimate:
    """Mean((matched - marginal) / (std(marginal) + 1e-3)); best correlate of success in RAGEN-2; n/a when
    std(marginal) <= 1e-3.

    Unavailable when the marginal has no spread: dividing by ~``STD_EPS`` would scale the gap ~1000-fold (values
    in the thousands for a deterministic agent).
    """
    sigma = float(marginal.std())
    if sigma > STD_EPS:
        return Estimate.of((matched - marginal) / (sigma + STD_EPS))
    return Unavailable.because(
        f"the marginal log-prob has no spread across reasonings (std {sigma:.2g} <= {STD_EPS:g}), so the "
        "z-score would only rescale the MI gap by 1/std; read mi_estimate instead"
    )


@metric(higher_is_better=None, family=COLLAPSE)
def distinct_prompts(equivalent: np.ndarray, rows: int) -> Estimate:
    """Distinct prompts the MI family compared (< 2: unavailable; < 4: flagged).

    The classes of the columns' token-identity matrix ``equivalent``, over ``rows`` reasonings (its ``n``).
    """
    return Estimate(float(count_prompts(equivalent)), 0.0, rows)


def count_prompts(equivalent: np.ndarray) -> int:
    """How many distinct prompts the columns hold (classes of the token-identity matrix ``equivalent``)."""
    return len({row.tobytes() for row in np.asarray(equivalent, dtype=bool)})


def _mi_family(
    matrix: np.ndarray, own: np.ndarray, suffix: str, log_weights: np.ndarray | None = None
) -> dict[str, Estimate]:
    rows, cols = matrix.shape
    matched = matrix[np.arange(rows), own]
    weighted = matrix if log_weights is None else matrix + log_weights
    marginal = _logsumexp_rows(weighted) - math.log(cols)
    return {
        f"{fn.__name__}{suffix}": fn(matched, marginal)
        for fn in (mi_estimate, cond_entropy_estimate, reasoning_entropy_estimate, mi_zscore)
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
    out = {"retrieval_accuracy": retrieval_accuracy(candidates, right)}
    out.update({f"retrieval_accuracy@{k}": retrieval_accuracy(candidates, right, k) for k in RETRIEVAL_TOP_K})
    out["retrieval_chance"] = retrieval_chance(candidates, right)
    return out


def collapse_metrics(
    logp_mean: Any, own_column: Any, logp_sum: Any = None, equivalent: Any = None, scored: Any = None
) -> dict[str, Estimate]:
    """The MI proxy family from a cross-scoring matrix (see the module docstring).

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
    rows, cols = shape
    if equivalent is None:
        eq = np.eye(cols, dtype=bool)
    else:
        eq = np.asarray(equivalent)
        if eq.shape != (cols, cols) or eq.dtype != np.bool_:
            raise ValueError(f"equivalent must be a ({cols}, {cols}) boolean matrix, got {eq.dtype} {eq.shape}")
        eq = eq | eq.T | np.eye(cols, dtype=bool)
    prompts = count_prompts(eq)
    if prompts < 2:
        reason = (
            "every scored pair has the same prompt (1 distinct prompt): MI and retrieval compare a reasoning's own "
            "prompt with others, so they need at least 2 distinct prompts (more env seeds)"
        )
        keys = COLLAPSE_KEYS + (COLLAPSE_SEQ_KEYS if logp_sum is not None else ())
        return {key: Unavailable.because(reason) for key in keys}
    # checked after the prompt count: with one prompt text, envs whose hidden state differs per seed (a number to
    # guess) have rows that are -inf under the shared text's first seed, and "1 distinct prompt" is the reason
    matrix = _check_matrix("logp_mean", logp_mean, own, mask)
    log_weights = _column_weights(mask, own, matrix.shape)
    out = _mi_family(matrix, own, "", log_weights)
    out["distinct_prompts"] = distinct_prompts(eq, rows)
    out.update(_retrieval(matrix, own, eq, mask))
    if logp_sum is not None:
        if np.shape(logp_sum) != matrix.shape:
            raise ValueError(f"logp_sum must have the shape of logp_mean {matrix.shape}, got {np.shape(logp_sum)}")
        sums = _check_matrix("logp_sum", logp_sum, own, mask)
        out.update(_mi_family(sums, own, "_seq", log_weights))
    return out


FEW_PROMPTS = 4
"""Below this many distinct prompts the MI family is shown with a warning: with 2-3 columns the rows' spread
(the ±) says nothing about how much the estimate would move with other prompts."""

COLLAPSE_KEYS = (
    "mi_estimate", "cond_entropy_estimate", "reasoning_entropy_estimate", "mi_zscore",
    "retrieval_accuracy", "retrieval_accuracy@2", "retrieval_accuracy@4", "retrieval_accuracy@8", "retrieval_chance",
    "distinct_prompts",
)  # fmt: skip
"""The MI family's per-token readings, in the order reports show them."""
COLLAPSE_SEQ_KEYS = ("mi_estimate_seq", "cond_entropy_estimate_seq", "reasoning_entropy_estimate_seq", "mi_zscore_seq")
"""The MI family's per-sequence readings (the ``_seq`` variants)."""


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
