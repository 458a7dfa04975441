"""The typed OpenEnv client of ragen/MathWord-v0 (the names ``AutoEnv`` looks for). Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from ragen_envs.serve.openenv_client import RagenAction, RagenEnvClient, RagenObservation

__all__ = ["RagenMathwordV0Action", "RagenMathwordV0Env", "RagenMathwordV0Observation"]

RagenMathwordV0Action = RagenAction
RagenMathwordV0Observation = RagenObservation


class RagenMathwordV0Env(RagenEnvClient):
    """OpenEnv's ``EnvClient`` for a ragen/MathWord-v0 server: ``await env.reset(seed=3)``,
    ``await env.step(model_text)``."""
