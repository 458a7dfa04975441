"""The learner's training log: ``metrics.jsonl`` in a run folder, one JSON row per iteration, and the names of
the keys that more than one package reads.

The learner (``baselines/ppo``) and the TRL and verl adapters write these keys; ``harness report``
(:mod:`harness.training_report`) and the experiment pages read them. Both sides import the names from here, as
episode records are defined once in :mod:`harness.records`. The MI family of a batch is logged as
``<reading>_<scheme>/<metric>`` (:func:`mi_key`): reading :data:`BATCH` (the iteration's pre-filter batch) or
:data:`PROBE` (the fixed probe's prompts), scheme ``first_turn`` or ``trajectory``, metric a name of the family
(``harness.mi``) or of the batch's retrieval ceilings (:func:`harness.probe.batch_ceilings`).
"""

from __future__ import annotations

__all__ = [
    "BATCH",
    "CEILING",
    "ITERATION",
    "METRICS_FILE",
    "PROBE",
    "RETURN",
    "SHARED_FEATURES",
    "SUCCESS",
    "TOKEN_ENTROPY",
    "mi_key",
]

METRICS_FILE = "metrics.jsonl"
"""The log file in a learner run's folder; its presence marks the folder as a learner run."""

ITERATION = "iteration"
"""The row's iteration (every row has it)."""
SUCCESS = "rollout/success"
"""Fraction of the iteration's episodes that succeeded."""
RETURN = "rollout/return"
"""Mean episode return of the iteration."""
TOKEN_ENTROPY = "actor/token_entropy"
"""Mean entropy (nats) of the policy's sampling distribution over the iteration's response tokens."""

BATCH = "collapse"
"""Reading of the MI family on the iteration's pre-filter batch."""
PROBE = "probe"
"""Reading of the MI family on the fixed probe's prompts (never trained on)."""

SHARED_FEATURES = "shared_features"
"""First-turn reading: 1 when the batch's prompts share a key feature (its retrieval is capped by the batch)."""
CEILING = "ceiling/"
"""First-turn reading: ``ceiling/<feature>``, the batch's retrieval ceiling when only that feature is read."""


def mi_key(reading: str, scheme: str, metric: str) -> str:
    """The log key of an MI-family ``metric`` under ``scheme`` in ``reading``, e.g.
    ``collapse_first_turn/retrieval_accuracy``."""
    return f"{reading}_{scheme}/{metric}"
