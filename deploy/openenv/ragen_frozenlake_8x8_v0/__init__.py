"""ragen/FrozenLake-8x8-v0 as an OpenEnv environment. Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from .client import RagenFrozenlake8x8V0Action, RagenFrozenlake8x8V0Env, RagenFrozenlake8x8V0Observation

__all__ = ["RagenFrozenlake8x8V0Action", "RagenFrozenlake8x8V0Env", "RagenFrozenlake8x8V0Observation"]
