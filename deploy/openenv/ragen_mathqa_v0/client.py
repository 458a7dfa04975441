"""The typed OpenEnv client of ragen/MathQA-v0 (the names ``AutoEnv`` looks for). Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from ragen_envs.serve.openenv_client import RagenAction, RagenEnvClient, RagenObservation

__all__ = ["RagenMathqaV0Action", "RagenMathqaV0Env", "RagenMathqaV0Observation"]

RagenMathqaV0Action = RagenAction
RagenMathqaV0Observation = RagenObservation


class RagenMathqaV0Env(RagenEnvClient):
    """OpenEnv's ``EnvClient`` for a ragen/MathQA-v0 server: ``await env.reset(seed=3)``,
    ``await env.step(model_text)``."""
