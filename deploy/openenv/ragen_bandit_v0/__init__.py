"""ragen/Bandit-v0 as an OpenEnv environment. Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from .client import RagenBanditV0Action, RagenBanditV0Env, RagenBanditV0Observation

__all__ = ["RagenBanditV0Action", "RagenBanditV0Env", "RagenBanditV0Observation"]
