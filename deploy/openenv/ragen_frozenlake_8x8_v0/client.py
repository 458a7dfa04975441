"""The typed OpenEnv client of ragen/FrozenLake-8x8-v0 (the names ``AutoEnv`` looks for). Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from ragen_envs.serve.openenv_client import RagenAction, RagenEnvClient, RagenObservation

__all__ = ["RagenFrozenlake8x8V0Action", "RagenFrozenlake8x8V0Env", "RagenFrozenlake8x8V0Observation"]

RagenFrozenlake8x8V0Action = RagenAction
RagenFrozenlake8x8V0Observation = RagenObservation


class RagenFrozenlake8x8V0Env(RagenEnvClient):
    """OpenEnv's ``EnvClient`` for a ragen/FrozenLake-8x8-v0 server: ``await env.reset(seed=3)``,
    ``await env.step(model_text)``."""
