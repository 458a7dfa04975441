"""The typed OpenEnv client of ragen/FrozenLake-v0 (the names ``AutoEnv`` looks for). Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from ragen_envs.serve.openenv_client import RagenAction, RagenEnvClient, RagenObservation

__all__ = ["RagenFrozenlakeV0Action", "RagenFrozenlakeV0Env", "RagenFrozenlakeV0Observation"]

RagenFrozenlakeV0Action = RagenAction
RagenFrozenlakeV0Observation = RagenObservation


class RagenFrozenlakeV0Env(RagenEnvClient):
    """OpenEnv's ``EnvClient`` for a ragen/FrozenLake-v0 server: ``await env.reset(seed=3)``,
    ``await env.step(model_text)``."""
