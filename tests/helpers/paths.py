"""Where the repository and the shipped tiny model are, for tests at any depth of the tree, and how a test
imports a script that is not in a package (``scripts/``, ``benchmarks/``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
TINY_MODEL = ROOT / "baselines" / "tiny" / "model"


def load_script(relative: str) -> ModuleType:
    """The script at ``relative`` (from the repository root) imported as a module named after its file; it is
    registered in ``sys.modules`` first, which dataclasses defined in it need."""
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module
