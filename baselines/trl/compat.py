"""The TRL versions the adapter is tested with, and the error that names the fix outside them."""

from __future__ import annotations

import os

TESTED_MINOR = "1.16"
"""``rollout_func`` is experimental in TRL and the filter hooks ``GRPOTrainer`` internals
(``_generate_and_score_completions``, ``_calculate_rewards``, ``_metrics``) that change between minors."""
INSTALL = "pip install 'ragen-envs[trl]'  (trl~=1.16.0)"
ANY_VERSION_ENV = "RAGEN_TRL_ANY_VERSION"


def require_trl():
    """Import TRL, or raise ``ImportError`` naming the install command (also for an untested minor, unless
    ``RAGEN_TRL_ANY_VERSION=1`` asks to try it anyway)."""
    try:
        import trl
    except ImportError as error:
        raise ImportError(f"The TRL adapter needs TRL {TESTED_MINOR}.x: {INSTALL}") from error
    version = getattr(trl, "__version__", "unknown")
    if version.split(".")[:2] != TESTED_MINOR.split(".") and os.environ.get(ANY_VERSION_ENV) != "1":
        raise ImportError(
            f"TRL {version} is outside the adapter's tested range {TESTED_MINOR}.x: {INSTALL}, "
            f"or set {ANY_VERSION_ENV}=1 to try this version anyway"
        )
    return trl
