"""ragen/WebShop-v0 as an OpenEnv environment. Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from .client import RagenWebshopV0Action, RagenWebshopV0Env, RagenWebshopV0Observation

__all__ = ["RagenWebshopV0Action", "RagenWebshopV0Env", "RagenWebshopV0Observation"]
