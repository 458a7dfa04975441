"""The RAGEN-2 pieces every trainer shares: the learner (``baselines.ppo``), the TRL adapter and the verl adapter
each take these options and call these functions, so a setting means the same in all three.

- :mod:`~baselines.algos.filter`: the SNR filter (:class:`FilterOptions`, the rule with its modes as a name →
  function table, the random-drop control, the logged stats);
- :mod:`~baselines.algos.returns`: a batch's returns as a ``(groups, samples)`` matrix;
- :mod:`~baselines.algos.mi`: the MI family during training (:class:`MIOptions`, records, scoring agent, keys);
- :mod:`~baselines.algos.rollout`: :class:`RolloutSpec`, what a rollout reads.
"""

from baselines.algos.filter import (
    FILTER_MODES,
    FilterOptions,
    FilterStats,
    choose_groups,
    drop_draws,
    filter_stats,
    group_spread,
    random_groups,
    register_mode,
    select_groups,
)
from baselines.algos.mi import MIOptions, episode_records, family_log, mi_family, policy_agent
from baselines.algos.returns import episode_returns, group_returns
from baselines.algos.rollout import RolloutSpec

__all__ = [
    "FILTER_MODES",
    "FilterOptions",
    "FilterStats",
    "MIOptions",
    "RolloutSpec",
    "choose_groups",
    "drop_draws",
    "episode_records",
    "episode_returns",
    "family_log",
    "filter_stats",
    "group_returns",
    "group_spread",
    "mi_family",
    "policy_agent",
    "random_groups",
    "register_mode",
    "select_groups",
]
