"""The typed OpenEnv client of ragen/Sokoban-8x8-v0 (the names ``AutoEnv`` looks for). Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from ragen_envs.serve.openenv_client import RagenAction, RagenEnvClient, RagenObservation

__all__ = ["RagenSokoban8x8V0Action", "RagenSokoban8x8V0Env", "RagenSokoban8x8V0Observation"]

RagenSokoban8x8V0Action = RagenAction
RagenSokoban8x8V0Observation = RagenObservation


class RagenSokoban8x8V0Env(RagenEnvClient):
    """OpenEnv's ``EnvClient`` for a ragen/Sokoban-8x8-v0 server: ``await env.reset(seed=3)``,
    ``await env.step(model_text)``."""
