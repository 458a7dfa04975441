"""The verl versions the adapter is tested with, and the error that names the fix outside them."""

from __future__ import annotations

from baselines.compat import require_tested

TESTED_MINOR = "0.9"
"""The agent-loop API (``AgentLoopBase``, the Continuous Token builder, ``AgentLoopOutput``) moved under
``verl.experimental`` and changes between minors."""
INSTALL = "bash scripts/install-verl.sh  (a separate venv, .venv-verl, with verl==0.9.1: verl pins transformers<5.11)"
ANY_VERSION_ENV = "RAGEN_VERL_ANY_VERSION"


def require_verl():
    """Import verl, or raise ``ImportError`` naming the install command (also for an untested minor, unless
    ``RAGEN_VERL_ANY_VERSION=1`` asks to try it anyway)."""
    return require_tested("verl", "verl", TESTED_MINOR, INSTALL, ANY_VERSION_ENV)
