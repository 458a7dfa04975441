"""ragen/Sokoban-v0 as an OpenEnv environment. Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from .client import RagenSokobanV0Action, RagenSokobanV0Env, RagenSokobanV0Observation

__all__ = ["RagenSokobanV0Action", "RagenSokobanV0Env", "RagenSokobanV0Observation"]
