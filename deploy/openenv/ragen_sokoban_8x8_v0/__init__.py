"""ragen/Sokoban-8x8-v0 as an OpenEnv environment. Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from .client import RagenSokoban8x8V0Action, RagenSokoban8x8V0Env, RagenSokoban8x8V0Observation

__all__ = ["RagenSokoban8x8V0Action", "RagenSokoban8x8V0Env", "RagenSokoban8x8V0Observation"]
