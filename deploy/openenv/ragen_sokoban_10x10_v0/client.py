"""The typed OpenEnv client of ragen/Sokoban-10x10-v0 (the names ``AutoEnv`` looks for). Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from ragen_envs.serve.openenv_client import RagenAction, RagenEnvClient, RagenObservation

__all__ = ["RagenSokoban10x10V0Action", "RagenSokoban10x10V0Env", "RagenSokoban10x10V0Observation"]

RagenSokoban10x10V0Action = RagenAction
RagenSokoban10x10V0Observation = RagenObservation


class RagenSokoban10x10V0Env(RagenEnvClient):
    """OpenEnv's ``EnvClient`` for a ragen/Sokoban-10x10-v0 server: ``await env.reset(seed=3)``,
    ``await env.step(model_text)``."""
