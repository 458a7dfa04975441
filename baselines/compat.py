"""The version check the trainer adapters share: import a trainer, or name the install that fixes it."""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def require_tested(module: str, name: str, tested_minor: str, install: str, any_version_env: str) -> ModuleType:
    """Import ``module`` (shown to users as ``name``), or raise ``ImportError`` naming ``install``: also for a
    minor other than ``tested_minor``, unless the environment variable ``any_version_env`` is ``1``."""
    try:
        imported = importlib.import_module(module)
    except ImportError as error:
        raise ImportError(f"The {name} adapter needs {name} {tested_minor}.x: {install}") from error
    version = getattr(imported, "__version__", "unknown")
    if version.split(".")[:2] != tested_minor.split(".") and os.environ.get(any_version_env) != "1":
        raise ImportError(
            f"{name} {version} is outside the adapter's tested range {tested_minor}.x: {install}, "
            f"or set {any_version_env}=1 to try this version anyway"
        )
    return imported
