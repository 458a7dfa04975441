"""The typed OpenEnv client of ragen/Sokoban-v0 (the names ``AutoEnv`` looks for). Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from ragen_envs.serve.openenv_client import RagenAction, RagenEnvClient, RagenObservation

__all__ = ["RagenSokobanV0Action", "RagenSokobanV0Env", "RagenSokobanV0Observation"]

RagenSokobanV0Action = RagenAction
RagenSokobanV0Observation = RagenObservation


class RagenSokobanV0Env(RagenEnvClient):
    """OpenEnv's ``EnvClient`` for a ragen/Sokoban-v0 server: ``await env.reset(seed=3)``,
    ``await env.step(model_text)``."""
