"""The TRL versions the adapter is tested with, and the error that names the fix outside them."""

from __future__ import annotations

from baselines.compat import require_tested

TESTED_MINOR = "1.16"
"""``rollout_func`` is experimental in TRL and the filter hooks ``GRPOTrainer`` internals
(``_generate_and_score_completions``, ``_calculate_rewards``, ``_metrics``) that change between minors."""
INSTALL = "pip install 'ragen-envs[trl]'  (trl~=1.16.0)"
ANY_VERSION_ENV = "RAGEN_TRL_ANY_VERSION"


def require_trl():
    """Import TRL, or raise ``ImportError`` naming the install command (also for an untested minor, unless
    ``RAGEN_TRL_ANY_VERSION=1`` asks to try it anyway)."""
    return require_tested("trl", "TRL", TESTED_MINOR, INSTALL, ANY_VERSION_ENV)
