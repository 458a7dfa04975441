"""The typed OpenEnv client of ragen/Bandit-v0 (the names ``AutoEnv`` looks for). Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from ragen_envs.serve.openenv_client import RagenAction, RagenEnvClient, RagenObservation

__all__ = ["RagenBanditV0Action", "RagenBanditV0Env", "RagenBanditV0Observation"]

RagenBanditV0Action = RagenAction
RagenBanditV0Observation = RagenObservation


class RagenBanditV0Env(RagenEnvClient):
    """OpenEnv's ``EnvClient`` for a ragen/Bandit-v0 server: ``await env.reset(seed=3)``,
    ``await env.step(model_text)``."""
