"""The typed OpenEnv client of ragen/WebShop-v0 (the names ``AutoEnv`` looks for). Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from ragen_envs.serve.openenv_client import RagenAction, RagenEnvClient, RagenObservation

__all__ = ["RagenWebshopV0Action", "RagenWebshopV0Env", "RagenWebshopV0Observation"]

RagenWebshopV0Action = RagenAction
RagenWebshopV0Observation = RagenObservation


class RagenWebshopV0Env(RagenEnvClient):
    """OpenEnv's ``EnvClient`` for a ragen/WebShop-v0 server: ``await env.reset(seed=3)``,
    ``await env.step(model_text)``."""
