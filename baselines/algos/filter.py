"""SNR-aware rollout filtering (RAGEN-2): train only on the prompt groups whose rewards vary most.

Why: a prompt's task gradient is bounded by c·√Var(R|x), while KL and entropy gradients are the same for every
input. Groups with little reward spread contribute mostly input-agnostic regulariser noise, which erases
cross-input differences (template collapse). Dropping them before old log-probs, values and advantages are
computed keeps the update dominated by signal.

The rule (docs/design.md; RAGEN ``RewardRolloutFilter``):
  spread_g = std(returns[g], ddof=1)  (or the variance; ``ddof`` 0 for the population's), on RAW episode returns,
  format penalties included;
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

The modes are a name → function table (:data:`FILTER_MODES`, extended with :func:`register_mode`); the settings
are one :class:`FilterOptions`, which the learner, the TRL trainer and the verl trainer each take. With
``selection="random"`` :func:`choose_groups` keeps as many groups as the rule picks, drawn at random: the control
that tells selection-by-spread apart from merely training on fewer groups.

Documented differences from RAGEN's torch code: spreads are float64 (RAGEN casts to float32), and the sort is
stable (torch's default sort leaves the order of tied spreads unspecified; here ties keep group order).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.seeding import derive_seed
from ragen_envs.core import check_choice, check_range

PROB_MODES = ("linear", "softmax")
SPREADS = ("std", "var")
SELECTIONS = ("spread", "random")
ZERO_SPREAD = 1e-10
MIN_P_TOLERANCE = 1e-10

ModeRule = Callable[[np.ndarray, "FilterOptions", int], int]
"""``(ranked, options, num_groups) -> count``: how many of the candidate groups to keep, the largest spreads first.
``ranked`` holds the candidates' spreads in descending order (ties in group order); ``num_groups`` counts every
group of the batch, candidates or not."""

FILTER_MODES: dict[str, ModeRule] = {}
"""The filter's modes by name (``FilterOptions.mode``)."""


def register_mode(name: str) -> Callable[[ModeRule], ModeRule]:
    """Decorator adding a mode to :data:`FILTER_MODES` (a name may be registered once)."""

    def add(rule: ModeRule) -> ModeRule:
        if name in FILTER_MODES:
            raise ValueError(f"filter mode {name!r} is already registered")
        FILTER_MODES[name] = rule
        return rule

    return add


@dataclass(frozen=True)
class FilterOptions:
    """The SNR filter's settings: the learner's ``filter_*`` flags, ``SNRFilterGRPOTrainer(filter=...)`` and verl's
    ``ragen.filter`` section. Errors name a field by its flag spelling (``filter_<field>``)."""

    mode: str = "top_p"
    """Which groups to keep by spread: ``top_p``, ``top_k``, ``top_k_abs``, ``min_p`` (see ``baselines.algos.filter``)."""
    value: float = 0.9
    """The mode's parameter (RAGEN-2: top-p 0.9); ``top_p`` with value ≥ 1 keeps every candidate group: no filter
    at all needs ``include_zero`` too (RAGEN's rule drops zero-spread groups otherwise)."""
    prob_mode: str = "linear"
    """``linear`` or ``softmax`` top-p."""
    spread: str = "std"
    """Group spread: ``std`` (RAGEN's own trainer) or ``var`` (the RAGEN-2 authors' upstream ports)."""
    ddof: int = 1
    """The spread's delta degrees of freedom: 1, the sample std or variance (RAGEN, and the ports' default), or 0.
    It scales every group's spread alike, so it matters only against ``eps``."""
    include_zero: bool = False
    """Keep zero-spread groups as candidates."""
    eps: float = 0.01
    """Top-p slack: keep the prefix reaching value·total − eps."""
    selection: str = "spread"
    """``spread``: keep the groups the rule picks; ``random``: keep as many groups as it picks, drawn uniformly at
    random (the control that tells selection-by-spread apart from merely training on fewer groups)."""

    def __post_init__(self) -> None:
        check_choice("filter_mode", self.mode, tuple(FILTER_MODES))
        check_choice("filter_prob_mode", self.prob_mode, PROB_MODES)
        check_choice("filter_spread", self.spread, SPREADS)
        check_choice("filter_selection", self.selection, SELECTIONS)
        check_choice("filter_ddof", self.ddof, (0, 1))
        check_range("filter_value", self.value, 0.0)
        if not np.isfinite(self.value):
            raise ValueError(f"filter_value must be a finite number ≥ 0, got {self.value!r}")
        check_range("filter_eps", self.eps, 0.0)
        if not isinstance(self.include_zero, (bool, np.bool_)):
            raise ValueError(f"filter_include_zero must be true or false, got {self.include_zero!r}")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], where: str = "filter_") -> FilterOptions:
        """From a mapping of field names; an unknown key raises naming ``<where><key>`` and the allowed keys."""
        return cls(**known_fields(cls, values, where))


def known_fields(cls: type, values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``values`` as keyword arguments of the dataclass ``cls``; an unknown key raises a "did you mean"."""
    import difflib

    names = [f.name for f in dataclasses.fields(cls)]
    for key in values:
        if key not in names:
            hint = difflib.get_close_matches(str(key), names, n=1)
            suggestion = f" Did you mean {where}{hint[0]}?" if hint else ""
            raise ValueError(f"unknown option {where}{key}.{suggestion} Allowed: {', '.join(names)}")
    return dict(values)


def random_groups(num_groups: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` of ``num_groups`` group indices drawn uniformly without replacement (ascending): the control
    that keeps as many groups as the filter would, chosen without looking at their spread."""
    if not 0 <= count <= num_groups:
        raise ValueError(f"count must be in [0, {num_groups}], got {count}")
    return np.sort(rng.choice(num_groups, size=count, replace=False)).astype(int)


def group_spread(returns: np.ndarray, spread: str = "std", ddof: int = 1) -> np.ndarray:
    """Per-group spread of raw returns: std or variance, sample (``ddof`` 1) by default. ``returns`` is (groups,
    samples)."""
    returns = _check_returns(returns)
    if spread not in SPREADS:
        raise ValueError(f"spread must be one of {SPREADS}, got {spread!r}")
    variance = returns.var(axis=1, ddof=ddof)
    return np.sqrt(variance) if spread == "std" else variance


@register_mode("top_p")
def _top_p(ranked: np.ndarray, options: FilterOptions, num_groups: int) -> int:
    if options.prob_mode == "softmax":
        probs = np.exp(ranked - ranked.max())
        probs /= probs.sum()
        return min(int(np.searchsorted(np.cumsum(probs), options.value)) + 1, len(ranked))
    threshold = options.value * ranked.sum() - options.eps
    kept, total = 0, 0.0
    for s in ranked:
        if total >= threshold or s <= 0.0:
            break
        total += float(s)
        kept += 1
    return kept if total >= threshold else 0


@register_mode("top_k")
def _top_k(ranked: np.ndarray, options: FilterOptions, num_groups: int) -> int:
    return max(1, min(int(options.value * num_groups), len(ranked)))


@register_mode("top_k_abs")
def _top_k_abs(ranked: np.ndarray, options: FilterOptions, num_groups: int) -> int:
    return max(1, min(int(options.value), len(ranked)))


@register_mode("min_p")
def _min_p(ranked: np.ndarray, options: FilterOptions, num_groups: int) -> int:
    return int(np.sum(ranked >= options.value * ranked[0] - MIN_P_TOLERANCE))


def select_groups(returns: np.ndarray, options: FilterOptions | None = None, **fields: Any) -> np.ndarray:
    """Indices (ascending) of the groups the rule keeps (see the module docstring); the settings are ``options``
    or, for a quick call, :class:`FilterOptions` fields as keywords (``select_groups(r, value=0.5)``)."""
    if options is None:
        options = FilterOptions(**fields)
    elif fields:
        options = dataclasses.replace(options, **fields)
    spreads = group_spread(returns, options.spread, options.ddof)
    num_groups = len(spreads)
    candidates = np.arange(num_groups) if options.include_zero else np.flatnonzero(np.abs(spreads) > ZERO_SPREAD)
    if len(candidates) == 0:
        return candidates
    if options.mode == "top_p" and options.value >= 1.0:
        return candidates
    # Stable sort on the negated spread: descending, ties keep the original group order.
    order = candidates[np.argsort(-spreads[candidates], kind="stable")]
    count = FILTER_MODES[options.mode](spreads[order], options, num_groups)
    return np.sort(order[:count])


def drop_draws(seed: int, step: int) -> np.random.Generator:
    """The random-drop control's generator for one training step of a run seeded ``seed``: every trainer draws
    from this one, so a rerun (and the same seed and step in another trainer) drops the same groups."""
    return np.random.default_rng(derive_seed("train-random-drop", seed, int(step)))


def choose_groups(returns: np.ndarray, options: FilterOptions, rng: np.random.Generator) -> np.ndarray:
    """The groups to train on: :func:`select_groups`, or with ``selection="random"`` as many groups drawn from
    ``rng`` (each trainer's :func:`drop_draws` for its run seed and step)."""
    kept = select_groups(returns, options)
    if options.selection == "random":
        return random_groups(len(returns), len(kept), rng)
    return kept


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
