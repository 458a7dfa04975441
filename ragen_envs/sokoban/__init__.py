"""Sokoban with solver-proven levels: ``gym.make("ragen/Sokoban-v0")``; the manual is ``SokobanEnv.__doc__``.

Modules: ``config`` (validated settings), ``board`` (rules on flat indices), ``generate`` (reverse-play level
generator), ``solver`` (move-optimal A*), ``render`` (text), ``env`` (the gymnasium env).
"""

from ragen_envs.sokoban.board import ACTIONS, Level
from ragen_envs.sokoban.config import SokobanConfig
from ragen_envs.sokoban.env import SokobanEnv
from ragen_envs.sokoban.generate import generate_level
from ragen_envs.sokoban.solver import SolveResult, solve

__all__ = ["ACTIONS", "Level", "SokobanConfig", "SokobanEnv", "SolveResult", "generate_level", "solve"]
