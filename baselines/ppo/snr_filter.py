"""SNR-aware rollout filtering (RAGEN-2): train only on the prompt groups whose rewards vary most.

Why: a prompt's task gradient is bounded by c·√Var(R|x), while KL and entropy gradients are the same for every
input. Groups with little reward spread contribute mostly input-agnostic regulariser noise, which erases
cross-input differences (template collapse). Dropping them before old log-probs, values and advantages are
computed keeps the update dominated by signal.

The rule (docs/design.md; RAGEN ``RewardRolloutFilter``):
  spread_g = std(returns[g], ddof=1)  (or the variance), on RAW episode returns, format penalties included;
  zero-spread groups (|spread| ≤ 1e-10) are dropped unless ``include_zero`` (also with ``top_p`` ≥ 1);
  ``top_p`` linear: sort by spread, descending (ties keep group order); threshold = ``value · total − eps``; take
  groups while the running sum is below the threshold (stopping at a spread ≤ 0); keep them if the sum reached it,
  else nothing. A threshold ≤ 0 is reached before any group is taken: nothing is kept (RAGEN's loop, exactly);
  ``top_p`` ≥ 1 keeps every candidate;
  ``top_p`` softmax: probabilities softmax(spread); keep the first ``searchsorted(cumsum, value) + 1`` groups;
  ``top_k``: the ``int(value · G)`` largest, at least 1, at most the candidates; ``top_k_abs``: the ``int(value)``
  largest, at least 1 (``value`` 0 keeps one group), at most the candidates;
  ``min_p``: every group with spread ≥ ``value · max spread − 1e-10`` (ties at the bar are kept).
An empty selection means "skip this update" (log it; RAGEN stops after 5 in a row).

Documented differences from RAGEN's torch code: spreads are float64 (RAGEN casts to float32), and the sort is
stable (torch's default sort leaves the order of tied spreads unspecified; here ties keep group order).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MODES = ("top_p", "top_k", "top_k_abs", "min_p")
PROB_MODES = ("linear", "softmax")
SPREADS = ("std", "var")
ZERO_SPREAD = 1e-10
MIN_P_TOLERANCE = 1e-10


def random_groups(num_groups: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` of ``num_groups`` group indices drawn uniformly without replacement (ascending): the control
    that keeps as many groups as the filter would, chosen without looking at their spread."""
    if not 0 <= count <= num_groups:
        raise ValueError(f"count must be in [0, {num_groups}], got {count}")
    return np.sort(rng.choice(num_groups, size=count, replace=False)).astype(int)


def group_spread(returns: np.ndarray, spread: str = "std") -> np.ndarray:
    """Per-group spread of raw returns: sample std (ddof 1) or sample variance. ``returns`` is (groups, samples)."""
    returns = _check_returns(returns)
    if spread not in SPREADS:
        raise ValueError(f"spread must be one of {SPREADS}, got {spread!r}")
    variance = returns.var(axis=1, ddof=1)
    return np.sqrt(variance) if spread == "std" else variance


def select_groups(
    returns: np.ndarray,
    *,
    mode: str = "top_p",
    value: float = 0.9,
    prob_mode: str = "linear",
    spread: str = "std",
    include_zero: bool = False,
    eps: float = 0.01,
) -> np.ndarray:
    """Indices (ascending) of the groups to keep; see the module docstring for the exact rule."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if prob_mode not in PROB_MODES:
        raise ValueError(f"prob_mode must be one of {PROB_MODES}, got {prob_mode!r}")
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"value must be a finite number ≥ 0, got {value!r}")
    spreads = group_spread(returns, spread)
    num_groups = len(spreads)
    candidates = np.arange(num_groups) if include_zero else np.flatnonzero(np.abs(spreads) > ZERO_SPREAD)
    if len(candidates) == 0:
        return candidates
    if mode == "top_p" and value >= 1.0:
        return candidates
    # Stable sort on the negated spread: descending, ties keep the original group order.
    order = candidates[np.argsort(-spreads[candidates], kind="stable")]
    ranked = spreads[order]

    if mode == "top_p" and prob_mode == "linear":
        threshold = value * ranked.sum() - eps
        kept, total = 0, 0.0
        for s in ranked:
            if total >= threshold or s <= 0.0:
                break
            total += float(s)
            kept += 1
        chosen = order[:kept] if total >= threshold else order[:0]
    elif mode == "top_p":  # softmax
        probs = np.exp(ranked - ranked.max())
        probs /= probs.sum()
        count = int(np.searchsorted(np.cumsum(probs), value)) + 1
        chosen = order[: min(count, len(order))]
    elif mode in ("top_k", "top_k_abs"):
        count = int(value * num_groups) if mode == "top_k" else int(value)
        chosen = order[: max(1, min(count, len(order)))]
    else:  # min_p
        chosen = order[ranked >= value * ranked[0] - MIN_P_TOLERANCE]
    return np.sort(chosen)


@dataclass(frozen=True)
class FilterStats:
    """What to log for one filtering step (namespaced ``rollout/…`` by the trainer)."""

    kept_count: int
    kept_ratio: float
    zero_spread_count: int
    mean_in_group_std: float
    mean_kept_in_group_std: float
    empty: bool

    def metrics(self) -> dict[str, float | int]:
        """The stats under the ``rollout/…`` names every trainer logs them with (the learner, TRL and verl)."""
        return {
            "rollout/filter_kept_count": self.kept_count,
            "rollout/filter_kept_ratio": self.kept_ratio,
            "rollout/filter_zero_count": self.zero_spread_count,
            "rollout/in_group_reward_std": self.mean_in_group_std,
            "rollout/chosen_in_group_reward_std": self.mean_kept_in_group_std,
            "rollout/empty_after_filter": float(self.empty),
        }


def filter_stats(returns: np.ndarray, kept: np.ndarray) -> FilterStats:
    """Logging stats for a selection made by :func:`select_groups`."""
    stds = group_spread(returns, "std")
    kept = np.asarray(kept, dtype=int)
    return FilterStats(
        kept_count=len(kept),
        kept_ratio=len(kept) / len(stds),
        zero_spread_count=int(np.sum(np.abs(stds) <= ZERO_SPREAD)),
        mean_in_group_std=float(stds.mean()),
        mean_kept_in_group_std=float(stds[kept].mean()) if len(kept) else 0.0,
        empty=len(kept) == 0,
    )


def _check_returns(returns: np.ndarray) -> np.ndarray:
    array = np.asarray(returns, dtype=np.float64)
    if array.ndim != 2:
        raise ValueError(f"returns must be a (groups, samples) array, got shape {array.shape}")
    if array.shape[0] < 1 or array.shape[1] < 2:
        raise ValueError(f"returns needs ≥ 1 group and ≥ 2 samples per group for a spread, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        bad = np.argwhere(~np.isfinite(array))[0]
        raise ValueError(f"returns must be finite; got {array[tuple(bad)]} at group {bad[0]}, sample {bad[1]}")
    return array
