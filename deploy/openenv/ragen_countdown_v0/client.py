"""The typed OpenEnv client of ragen/Countdown-v0 (the names ``AutoEnv`` looks for). Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from ragen_envs.serve.openenv_client import RagenAction, RagenEnvClient, RagenObservation

__all__ = ["RagenCountdownV0Action", "RagenCountdownV0Env", "RagenCountdownV0Observation"]

RagenCountdownV0Action = RagenAction
RagenCountdownV0Observation = RagenObservation


class RagenCountdownV0Env(RagenEnvClient):
    """OpenEnv's ``EnvClient`` for a ragen/Countdown-v0 server: ``await env.reset(seed=3)``,
    ``await env.step(model_text)``."""
