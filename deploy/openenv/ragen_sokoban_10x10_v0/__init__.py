"""ragen/Sokoban-10x10-v0 as an OpenEnv environment. Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from .client import RagenSokoban10x10V0Action, RagenSokoban10x10V0Env, RagenSokoban10x10V0Observation

__all__ = ["RagenSokoban10x10V0Action", "RagenSokoban10x10V0Env", "RagenSokoban10x10V0Observation"]
