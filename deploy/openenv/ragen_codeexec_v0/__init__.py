"""ragen/CodeExec-v0 as an OpenEnv environment. Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from .client import RagenCodeexecV0Action, RagenCodeexecV0Env, RagenCodeexecV0Observation

__all__ = ["RagenCodeexecV0Action", "RagenCodeexecV0Env", "RagenCodeexecV0Observation"]
