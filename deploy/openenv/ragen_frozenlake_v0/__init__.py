"""ragen/FrozenLake-v0 as an OpenEnv environment. Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from .client import RagenFrozenlakeV0Action, RagenFrozenlakeV0Env, RagenFrozenlakeV0Observation

__all__ = ["RagenFrozenlakeV0Action", "RagenFrozenlakeV0Env", "RagenFrozenlakeV0Observation"]
