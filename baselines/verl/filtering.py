"""RAGEN-2's SNR filter on verl's batches, for both of verl's trainers: options, groups, selection, log, stop.

Nothing here imports a verl trainer: the legacy DataProto trainer (:mod:`baselines.verl.trainer`) and the v1
replay-buffer sampler (:mod:`baselines.verl.sampler`) both call it.

- **Options** (:class:`RagenOptions`): the ``ragen`` config section, or the RAGEN-2 authors' upstream-port keys
  ``algorithm.reward_variance_filtering.*`` (:func:`upstream_filter`), mapped onto the same rule.
- **Groups**: verl's ``uid`` is a group (the ``rollout.n`` samples of one env seed); a sample's return is its
  ``rm_scores`` summed over the response (the agent loop's episode return, format penalties included).
- **Selection**: ``baselines.ppo.snr_filter.select_groups``, unchanged (the learner's and TRL's rule).
- **Applying it**: ``trim`` removes the dropped groups' rows; ``mask`` keeps every row (shapes unchanged) and
  zeroes the dropped rows' response mask, so they add no loss token, as the upstream ports do.
- **Log**: the learner's ``rollout/filter_*`` keys, and ``ragen/prefilter/*`` (:func:`prefilter_metrics`): verl's
  own ``critic/score/*`` and length curves are computed after the filter, on the kept groups only.
- **Stop** (:class:`EmptyStreak`): RAGEN stops training after ``stop_after_empty`` (5) consecutive steps whose
  selection is empty: the policy's returns no longer vary within groups, so nothing is left to learn from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from baselines.ppo.snr_filter import MODES, PROB_MODES, SPREADS, filter_stats, group_spread, select_groups
from harness.mi import SCHEMES
from ragen_envs.core import check_choice, check_range

APPLY = ("trim", "mask")
"""How a selection is applied: ``trim`` removes dropped groups' rows, ``mask`` zeroes their response mask."""
UPSTREAM_KEYS = ("enable", "strategy", "top_p", "top_k", "include_zero", "variance_ddof", "selection_eps")
"""``algorithm.reward_variance_filtering.*``: the keys of the RAGEN-2 authors' ports (verl, TRL and SkyRL PRs)."""
UPSTREAM_STRATEGIES = ("top_p", "top_k")


# ---- options ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RagenOptions:
    """The ``ragen`` section of the config (``baselines/verl/config/ragen_ppo.yaml``)."""

    filter_enable: bool = True
    """Apply the SNR filter (off: every group trains, MI still logged)."""
    filter_mode: str = "top_p"
    """``select_groups``'s ``mode``: ``top_p``, ``top_k``, ``top_k_abs``, ``min_p``."""
    filter_value: float = 0.9
    """``select_groups``'s ``value`` (RAGEN-2: top-p 0.9)."""
    filter_prob_mode: str = "linear"
    """``linear`` or ``softmax`` top-p."""
    filter_spread: str = "std"
    """Group spread: ``std`` (ddof 1, RAGEN's own trainer) or ``var`` (the upstream ports)."""
    filter_include_zero: bool = False
    """Keep zero-spread groups as candidates."""
    filter_eps: float = 0.01
    """Top-p slack."""
    filter_apply: str | None = None
    """``trim`` or ``mask``; None: ``trim``, or ``mask`` when the upstream keys set the rule (as their ports do)."""
    filter_stop_after_empty: int = 5
    """Stop training after this many consecutive steps with an empty selection (RAGEN: 5); 0 never stops."""
    mi_every: int = 5
    """MI family every k training steps (and at step 1); 0 disables."""
    mi_samples: int = 64
    """Pairs drawn per MI scheme (the harness's ``mi_samples``)."""
    mi_columns: int | None = None
    """Score each row under this many columns instead of all (the harness's ``mi_columns``); None: all."""
    mi_schemes: tuple[str, ...] = SCHEMES
    """``first_turn`` and/or ``trajectory``."""
    mi_seed: int = 0
    """Seeds the MI draws (with the step)."""
    mi_pairs_per_call: int = 256
    """Pairs per ``compute_log_prob`` call (bounds the actor's memory)."""

    def __post_init__(self) -> None:
        check_choice("ragen.filter.mode", self.filter_mode, MODES)
        check_choice("ragen.filter.prob_mode", self.filter_prob_mode, PROB_MODES)
        check_choice("ragen.filter.spread", self.filter_spread, SPREADS)
        check_choice("ragen.filter.apply", self.filter_apply, (*APPLY, None))
        check_range("ragen.filter.value", self.filter_value, 0.0)
        check_range("ragen.filter.eps", self.filter_eps, 0.0)
        for name, value, low in (("mi.every", self.mi_every, 0), ("mi.samples", self.mi_samples, 0),
                                 ("mi.seed", self.mi_seed, 0), ("mi.pairs_per_call", self.mi_pairs_per_call, 1),
                                 ("filter.stop_after_empty", self.filter_stop_after_empty, 0)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"ragen.{name} must be an integer >= {low}, got {value!r}")
        if self.mi_columns is not None and (not isinstance(self.mi_columns, int) or self.mi_columns < 2):
            raise ValueError(f"ragen.mi.columns must be null or an integer >= 2, got {self.mi_columns!r}")
        for scheme in self.mi_schemes:
            check_choice("ragen.mi.schemes", scheme, SCHEMES)

    @property
    def apply(self) -> str:
        """``trim`` or ``mask``: how the selection is applied to the batch."""
        return self.filter_apply or "trim"

    @classmethod
    def from_config(cls, section: Any, upstream: Any = None) -> RagenOptions:
        """From the ``ragen`` config section (``filter`` and ``mi`` sub-sections; missing keys keep defaults) and,
        when given, the upstream ``algorithm.reward_variance_filtering`` section, which then sets the rule."""
        section = section or {}
        unknown = [key for key in section if key not in ("filter", "mi")]
        if unknown:
            raise ValueError(f"unknown key ragen.{unknown[0]}; allowed: filter, mi")
        out: dict[str, Any] = {}
        for group in ("filter", "mi"):
            values = dict(section.get(group) or {})
            for key, value in values.items():
                name = f"{group}_{key}"
                if name not in cls.__dataclass_fields__:
                    known = sorted(k.split("_", 1)[1] for k in cls.__dataclass_fields__ if k.startswith(group))
                    raise ValueError(f"unknown key ragen.{group}.{key}; allowed: {', '.join(known)}")
                out[name] = tuple(value) if name == "mi_schemes" else value
        options = cls(**out)
        if upstream is None:
            return options
        rule = upstream_filter(upstream)
        clashing = [f.name for f in fields(cls) if f.name in rule and f.name != "filter_enable"
                    and getattr(options, f.name) != f.default]  # fmt: skip
        if clashing:
            key = clashing[0].split("_", 1)[1]
            raise ValueError(
                f"ragen.filter.{key} is set and so is algorithm.reward_variance_filtering: set the filter rule in one "
                f"place (drop ragen.filter.{key}, or the algorithm.reward_variance_filtering section)"
            )
        if options.filter_apply is None:
            rule["filter_apply"] = "mask"  # what the upstream ports do with dropped groups
        return replace(options, **rule)

    def select_options(self) -> dict[str, Any]:
        """The keyword arguments of ``select_groups``."""
        return dict(mode=self.filter_mode, value=self.filter_value, prob_mode=self.filter_prob_mode,
                    spread=self.filter_spread, include_zero=self.filter_include_zero, eps=self.filter_eps)  # fmt: skip


def upstream_filter(section: Any) -> dict[str, Any]:
    """``algorithm.reward_variance_filtering.{enable, strategy, top_p, top_k, include_zero, variance_ddof,
    selection_eps}`` (the upstream ports' names and defaults) as :class:`RagenOptions` filter fields.

    ``strategy: top_p`` is ``select_groups``' linear top-p on the sample variance (``spread: var``), with
    ``selection_eps`` as its slack; ``strategy: top_k`` keeps the ``top_k`` highest-variance groups
    (``top_k_abs``). Only ``variance_ddof: 1`` (the ports' default, and ``select_groups``' variance) is accepted.
    """
    values = dict(section or {})
    unknown = [key for key in values if key not in UPSTREAM_KEYS]
    if unknown:
        raise ValueError(
            f"unknown key algorithm.reward_variance_filtering.{unknown[0]}; allowed: {', '.join(UPSTREAM_KEYS)}"
        )
    strategy = values.get("strategy", "top_p")
    check_choice("algorithm.reward_variance_filtering.strategy", strategy, UPSTREAM_STRATEGIES)
    top_p, top_k = values.get("top_p", 0.9), values.get("top_k", 1)
    check_range("algorithm.reward_variance_filtering.top_p", top_p, 0.0, 1.0)
    check_range("algorithm.reward_variance_filtering.top_k", top_k, 1, integer=True)
    eps = values.get("selection_eps", 0.01)
    check_range("algorithm.reward_variance_filtering.selection_eps", eps, 0.0)
    ddof = values.get("variance_ddof", 1)
    if ddof != 1:
        raise ValueError(
            f"algorithm.reward_variance_filtering.variance_ddof must be 1 (the sample variance), got {ddof!r}"
        )
    return {
        "filter_enable": bool(values.get("enable", False)),
        "filter_mode": "top_p" if strategy == "top_p" else "top_k_abs",
        "filter_value": float(top_p) if strategy == "top_p" else float(top_k),
        "filter_prob_mode": "linear",
        "filter_spread": "var",
        "filter_include_zero": bool(values.get("include_zero", False)),
        "filter_eps": float(eps),
    }


def options_from_config(config: Any) -> RagenOptions:
    """:class:`RagenOptions` from a whole verl config: its ``ragen`` section and, if present,
    ``algorithm.reward_variance_filtering``."""
    algorithm = config.get("algorithm") or {}
    return RagenOptions.from_config(config.get("ragen"), algorithm.get("reward_variance_filtering"))


def check_filter_config(config: Any) -> None:
    """The verl settings the filter relies on on either trainer, each failing with the fix."""
    filter_groups = config.algorithm.get("filter_groups") or {}
    if filter_groups.get("enable", False):
        raise ValueError(
            "algorithm.filter_groups.enable must be false with RAGEN's SNR filter (ragen.filter.* or "
            "algorithm.reward_variance_filtering.*), which replaces DAPO's"
        )
    samples = int(config.actor_rollout_ref.rollout.n)
    if samples < 2:
        raise ValueError(f"actor_rollout_ref.rollout.n must be >= 2 (a reward spread per group), got {samples}")


# ---- groups and selection ----------------------------------------------------------------------------------
def groups_of(uids: Sequence[Any], per_row: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The groups of a batch: their uids (first-seen order), row indices and per-row values, both
    ``(groups, samples)``."""
    rows: dict[str, list[int]] = {}
    for index, uid in enumerate(uids):
        rows.setdefault(str(uid), []).append(index)
    sizes = {len(r) for r in rows.values()}
    if len(sizes) > 1:
        raise ValueError(f"groups of unequal size in the batch ({sorted(sizes)}): the SNR filter needs rollout.n each")
    order = list(rows)
    row_matrix = np.array([rows[uid] for uid in order], dtype=np.int64).reshape(len(order), -1)
    return order, row_matrix, np.asarray(per_row, dtype=np.float64)[row_matrix]


def update_plan(num_groups: int, mini_batch_groups: int, samples: int, dp_size: int,
                whole_groups_per_rank: bool = False) -> tuple[int, int]:  # fmt: skip
    """(groups to train on, groups per mini-batch) for ``num_groups`` kept groups (the legacy trainer's trim).

    verl's actor splits a batch into mini-batches of ``ppo_mini_batch_size`` groups (× ``rollout.n`` rows), and
    every mini-batch evenly over the data-parallel ranks. So: a multiple of ``mini_batch_groups``; below one
    mini-batch, one mini-batch of a multiple of the smallest group count whose rows split over the ranks. With
    ``whole_groups_per_rank`` (verl's ``use_prefix_grouper``, which balances whole groups over the ranks) that
    unit is ``dp_size`` groups, and ``mini_batch_groups`` must be a multiple of it.
    """
    unit = dp_size if whole_groups_per_rank else dp_size // math.gcd(samples, dp_size)
    if whole_groups_per_rank and mini_batch_groups % dp_size:
        raise ValueError(
            f"actor_rollout_ref.actor.use_prefix_grouper needs every kept mini-batch to split into whole groups per "
            f"rank: actor_rollout_ref.actor.ppo_mini_batch_size ({mini_batch_groups}) must be a multiple of the "
            f"actor's data-parallel size ({dp_size})"
        )
    if num_groups >= mini_batch_groups:
        kept = num_groups // mini_batch_groups * mini_batch_groups
        return kept, mini_batch_groups
    kept = num_groups // unit * unit
    return kept, kept


def select(returns: np.ndarray, options: RagenOptions) -> np.ndarray:
    """The kept groups (ascending): ``select_groups`` with the options, or every group when the filter is off."""
    if not options.filter_enable:
        return np.arange(len(returns))
    return select_groups(returns, **options.select_options())


def trim_to(kept: np.ndarray, count: int, returns: np.ndarray, spread: str) -> np.ndarray:
    """The ``count`` highest-spread groups of ``kept`` (ties: the earlier group), ascending."""
    if count >= len(kept):
        return kept
    spreads = group_spread(returns, spread)
    by_spread = sorted(kept.tolist(), key=lambda g: (-spreads[g], g))
    return np.sort(np.array(by_spread[:count], dtype=np.int64))


def selection_metrics(returns: np.ndarray, selected: np.ndarray, kept: np.ndarray) -> dict[str, float]:
    """The learner's ``rollout/filter_*`` keys for ``selected`` groups, plus how many a trim removed
    (``rollout/filter_trimmed_count``) and whether nothing is kept (``rollout/empty_after_filter``)."""
    metrics = {name: float(value) for name, value in filter_stats(returns, selected).metrics().items()}
    metrics["rollout/filter_trimmed_count"] = float(len(selected) - len(kept))
    metrics["rollout/empty_after_filter"] = float(len(kept) == 0)
    return metrics


def prefilter_metrics(returns: np.ndarray, success: np.ndarray | None = None) -> dict[str, float]:
    """What verl's headline curves no longer show after the filter: the whole batch's episode return
    (``ragen/prefilter/score_{mean,std,max,min}``, per sample), its success rate (``ragen/prefilter/success``,
    from the agent loop's ``success``) and group count."""
    flat = np.asarray(returns, dtype=np.float64).reshape(-1)
    metrics = {
        "ragen/prefilter/score_mean": float(flat.mean()), "ragen/prefilter/score_std": float(flat.std()),
        "ragen/prefilter/score_max": float(flat.max()), "ragen/prefilter/score_min": float(flat.min()),
        "ragen/prefilter/groups": float(len(returns)),
    }  # fmt: skip
    if success is not None:
        metrics["ragen/prefilter/success"] = float(np.asarray(success, dtype=np.float64).mean())
    return metrics


# ---- the stop ------------------------------------------------------------------------------------------------
class FilterStop(RuntimeError):
    """Training stops: the filter kept no group in ``ragen.filter.stop_after_empty`` consecutive steps."""


@dataclass
class EmptyStreak:
    """Counts consecutive empty selections; :meth:`record` raises :class:`FilterStop` at ``limit`` (0: never)."""

    limit: int
    count: int = field(default=0)

    def record(self, empty: bool) -> dict[str, float]:
        """Count one selection; returns ``ragen/filter/empty_streak``, raises at the limit."""
        self.count = self.count + 1 if empty else 0
        if self.limit and self.count >= self.limit:
            raise FilterStop(
                f"the SNR filter kept no group in {self.count} consecutive steps, so training stops (as RAGEN does): "
                "rewards no longer vary within groups. Raise ragen.filter.stop_after_empty, or set it to 0 to "
                "never stop"
            )
        return {"ragen/filter/empty_streak": float(self.count)}


def success_column(values: Sequence[Mapping[str, Any] | None] | np.ndarray | None) -> np.ndarray | None:
    """Per-row ``success`` as floats, or None when any row lacks it (a loop other than ``ragen_agent``)."""
    if values is None:
        return None
    out = []
    for value in values:
        if isinstance(value, Mapping):
            value = value.get("success")
        if value is None:
            return None
        out.append(float(value))
    return np.array(out, dtype=np.float64)
