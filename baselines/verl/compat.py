"""The verl versions the adapter is tested with, and the error that names the fix outside them."""

from __future__ import annotations

import os

TESTED_MINOR = "0.9"
"""The agent-loop API (``AgentLoopBase``, the Continuous Token builder, ``AgentLoopOutput``) moved under
``verl.experimental`` and changes between minors."""
INSTALL = "bash scripts/install-verl.sh  (a separate venv, .venv-verl, with verl==0.9.1: verl pins transformers<5.11)"
ANY_VERSION_ENV = "RAGEN_VERL_ANY_VERSION"


def require_verl():
    """Import verl, or raise ``ImportError`` naming the install command (also for an untested minor, unless
    ``RAGEN_VERL_ANY_VERSION=1`` asks to try it anyway)."""
    try:
        import verl
    except ImportError as error:
        raise ImportError(f"The verl adapter needs verl {TESTED_MINOR}.x: {INSTALL}") from error
    version = getattr(verl, "__version__", "unknown")
    if version.split(".")[:2] != TESTED_MINOR.split(".") and os.environ.get(ANY_VERSION_ENV) != "1":
        raise ImportError(
            f"verl {version} is outside the adapter's tested range {TESTED_MINOR}.x: {INSTALL}, "
            f"or set {ANY_VERSION_ENV}=1 to try this version anyway"
        )
    return verl
