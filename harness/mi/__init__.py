"""The MI proxy family in two halves: the pairs a model cross-scores, and the estimator of the scored matrix.

- :mod:`harness.mi.pairs`: which (prompt, reasoning) pairs a batch compares (the first-turn and trajectory-uniform
  schemes over a run's records, column subsampling, or your own prompts and reasonings);
- :mod:`harness.mi.scoring`: the agent scores them into a matrix (:func:`collapse_for` on a run's records,
  :func:`mi_family` on your own pairs);
- :mod:`harness.mi.estimator`: the family of that matrix (:func:`collapse_metrics`) and its registered metrics.

The names below are the package's API, importable from ``harness.mi``.
"""

from harness.mi.estimator import COLLAPSE_KEYS, COLLAPSE_SEQ_KEYS, FEW_PROMPTS, ZScoreEMA, collapse_metrics
from harness.mi.pairs import (
    SCHEMES,
    Pairs,
    context_pairs,
    first_turn_pairs,
    pair_contexts,
    subsample_columns,
    trajectory_pairs,
    turn_context,
)
from harness.mi.scoring import collapse_for, draw_bootstrap, mi_family, pair_family, pair_matrix, score_pairs

__all__ = [
    "COLLAPSE_KEYS",
    "COLLAPSE_SEQ_KEYS",
    "FEW_PROMPTS",
    "SCHEMES",
    "Pairs",
    "ZScoreEMA",
    "collapse_for",
    "collapse_metrics",
    "context_pairs",
    "draw_bootstrap",
    "first_turn_pairs",
    "mi_family",
    "pair_contexts",
    "pair_family",
    "pair_matrix",
    "score_pairs",
    "subsample_columns",
    "trajectory_pairs",
    "turn_context",
]
