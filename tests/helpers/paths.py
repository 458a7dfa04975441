"""Where the repository and the shipped tiny model are, for tests at any depth of the tree."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TINY_MODEL = ROOT / "baselines" / "tiny" / "model"
