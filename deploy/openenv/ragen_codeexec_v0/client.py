"""The typed OpenEnv client of ragen/CodeExec-v0 (the names ``AutoEnv`` looks for). Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from ragen_envs.serve.openenv_client import RagenAction, RagenEnvClient, RagenObservation

__all__ = ["RagenCodeexecV0Action", "RagenCodeexecV0Env", "RagenCodeexecV0Observation"]

RagenCodeexecV0Action = RagenAction
RagenCodeexecV0Observation = RagenObservation


class RagenCodeexecV0Env(RagenEnvClient):
    """OpenEnv's ``EnvClient`` for a ragen/CodeExec-v0 server: ``await env.reset(seed=3)``,
    ``await env.step(model_text)``."""
