"""The typed OpenEnv client of ragen/SearchQA-v0 (the names ``AutoEnv`` looks for). Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from ragen_envs.serve.openenv_client import RagenAction, RagenEnvClient, RagenObservation

__all__ = ["RagenSearchqaV0Action", "RagenSearchqaV0Env", "RagenSearchqaV0Observation"]

RagenSearchqaV0Action = RagenAction
RagenSearchqaV0Observation = RagenObservation


class RagenSearchqaV0Env(RagenEnvClient):
    """OpenEnv's ``EnvClient`` for a ragen/SearchQA-v0 server: ``await env.reset(seed=3)``,
    ``await env.step(model_text)``."""
