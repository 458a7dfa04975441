"""RAGEN-2's SNR filter on verl's batches, for both of verl's trainers: options, groups, selection, log, stop.

Nothing here imports a verl trainer: the legacy DataProto trainer (:mod:`baselines.verl.trainer`) and the v1
replay-buffer sampler (:mod:`baselines.verl.sampler`) both call it.

- **Options** (:class:`RagenOptions`): the ``ragen`` config section (the learner's ``FilterOptions`` and
  ``MIOptions``, plus verl's own keys), or the RAGEN-2 authors' upstream-port keys
  ``algorithm.reward_variance_filtering.*`` (:func:`upstream_filter`), mapped onto the same rule.
- **Groups**: verl's ``uid`` is a group (the ``rollout.n`` samples of one env seed); a sample's return is its
  ``rm_scores`` summed over the response (the agent loop's episode return, format penalties included).
- **Selection**: ``baselines.algos.filter.choose_groups``, unchanged (the learner's and TRL's rule, its
  random-drop control included).
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

from baselines.algos.filter import FilterOptions, choose_groups, drop_draws, filter_stats, group_spread
from baselines.algos.mi import MIOptions
from baselines.algos.returns import group_returns
from baselines.algos.sections import accepts_flat_keys, resolve_sections
from ragen_envs.core import check_choice, check_range

APPLY = ("trim", "mask")
"""How a selection is applied: ``trim`` removes dropped groups' rows, ``mask`` zeroes their response mask."""
UPSTREAM_KEYS = ("enable", "strategy", "top_p", "top_k", "include_zero", "variance_ddof", "selection_eps")
"""``algorithm.reward_variance_filtering.*``: the keys of the RAGEN-2 authors' ports (verl, TRL and SkyRL PRs)."""
UPSTREAM_STRATEGIES = ("top_p", "top_k")


# ---- options ---------------------------------------------------------------------------------------------
VERL_KEYS = {"filter": ("enable", "apply", "stop_after_empty", "seed"), "mi": ("seed", "pairs_per_call")}
"""The ``ragen`` keys that are verl's own (:class:`RagenOptions`' ``<section>_<key>`` fields); every other key of a
section is a field of the options all trainers share (``FilterOptions``, ``MIOptions``)."""


@accepts_flat_keys
@dataclass(frozen=True)
class RagenOptions:
    """The ``ragen`` section of the config (``baselines/verl/config/ragen_ppo.yaml``): the learner's filter and MI
    options (``ragen.filter.*``, ``ragen.mi.*``) plus the keys of :data:`VERL_KEYS`."""

    filter: FilterOptions = field(default_factory=FilterOptions)
    """The SNR filter (``baselines.algos.FilterOptions``), the random-drop control (``selection: random``)
    included. ``spread: std`` is RAGEN's own trainer, ``var`` the upstream ports'."""
    mi: MIOptions = field(default_factory=MIOptions)
    """The MI family (``baselines.algos.MIOptions``), on the legacy trainer; the fixed probe plays seeds outside the
    batch, which neither verl trainer does (``probe_seeds`` stays 0)."""
    filter_enable: bool = True
    """Apply the SNR filter (off: every group trains, MI still logged)."""
    filter_apply: str | None = None
    """``trim`` or ``mask``; None: ``trim``, or ``mask`` when the upstream keys set the rule (as their ports do)."""
    filter_stop_after_empty: int = 5
    """Stop training after this many consecutive steps with an empty selection (RAGEN: 5); 0 never stops."""
    filter_seed: int = 0
    """Seeds the random-drop control's draws (with the step)."""
    mi_seed: int = 0
    """Seeds the MI draws (with the step)."""
    mi_pairs_per_call: int = 256
    """Pairs per ``compute_log_prob`` call (bounds the actor's memory)."""

    def __post_init__(self) -> None:
        resolve_sections(self, "ragen.{}.")
        check_choice("ragen.filter.apply", self.filter_apply, (*APPLY, None))
        for name, value, low in (("mi.seed", self.mi_seed, 0), ("mi.pairs_per_call", self.mi_pairs_per_call, 1),
                                 ("filter.seed", self.filter_seed, 0),
                                 ("filter.stop_after_empty", self.filter_stop_after_empty, 0)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"ragen.{name} must be an integer >= {low}, got {value!r}")
        if self.mi.probe_seeds:
            raise ValueError(
                f"ragen.mi.probe_seeds must be 0 with verl, got {self.mi.probe_seeds}: the probe rolls out its own "
                "seeds outside the batch (the learner and the TRL adapter do)"
            )

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
        for group, kind in (("filter", FilterOptions), ("mi", MIOptions)):
            known = [f.name for f in fields(kind)] + list(VERL_KEYS[group])
            shared: dict[str, Any] = {}
            for key, value in dict(section.get(group) or {}).items():
                if key not in known:
                    raise ValueError(f"unknown key ragen.{group}.{key}; allowed: {', '.join(sorted(known))}")
                if key in VERL_KEYS[group]:
                    out[f"{group}_{key}"] = value
                else:
                    shared[key] = tuple(value) if key == "schemes" else value
            try:
                out[group] = kind(**shared)
            except ValueError as error:  # the shared options name a field by its flag: say the config key
                raise ValueError(f"ragen.{group}.{str(error).removeprefix(group + '_')}") from None
        options = cls(**out)
        if upstream is None:
            return options
        rule = upstream_filter(upstream)
        clashing = [name for name, value in rule.items() if name != "enable"
                    and getattr(options.filter, name) != getattr(FilterOptions(), name)]  # fmt: skip
        if clashing:
            key = clashing[0]
            raise ValueError(
                f"ragen.filter.{key} is set and so is algorithm.reward_variance_filtering: set the filter rule in one "
                f"place (drop ragen.filter.{key}, or the algorithm.reward_variance_filtering section)"
            )
        enable = rule.pop("enable")
        # what the upstream ports do with dropped groups: mask them
        return replace(options, filter=replace(options.filter, **rule), filter_enable=enable,
                       filter_apply=options.filter_apply or "mask")  # fmt: skip


def upstream_filter(section: Any) -> dict[str, Any]:
    """``algorithm.reward_variance_filtering.{enable, strategy, top_p, top_k, include_zero, variance_ddof,
    selection_eps}`` (the upstream ports' names and defaults) as ``enable`` and :class:`FilterOptions` fields.

    ``strategy: top_p`` is ``select_groups``' linear top-p on the sample variance (``spread: var``), with
    ``selection_eps`` as its slack; ``strategy: top_k`` keeps the ``top_k`` highest-variance groups
    (``top_k_abs``); ``variance_ddof`` (0 or 1) is the spread's ``ddof``.
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
    check_choice("algorithm.reward_variance_filtering.variance_ddof", ddof, (0, 1))
    return {
        "enable": bool(values.get("enable", False)),
        "mode": "top_p" if strategy == "top_p" else "top_k_abs",
        "value": float(top_p) if strategy == "top_p" else float(top_k),
        "prob_mode": "linear",
        "spread": "var",
        "include_zero": bool(values.get("include_zero", False)),
        "eps": float(eps),
        "ddof": int(ddof),
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
    ``(groups, samples)`` (``baselines.algos.group_returns``)."""
    try:
        return group_returns([str(uid) for uid in uids], per_row)
    except ValueError as error:
        raise ValueError(f"{error}: the SNR filter needs rollout.n rows per uid") from None


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


def select(returns: np.ndarray, options: RagenOptions, step: int = 0) -> np.ndarray:
    """The kept groups (ascending): the learner's rule (``choose_groups``: ``select_groups``, or the random-drop
    control drawn by ``ragen.filter.seed`` and ``step``), or every group when the filter is off."""
    if not options.filter_enable:
        return np.arange(len(returns))
    return choose_groups(returns, options.filter, drop_draws(options.filter_seed, step))


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
