"""ragen/Countdown-v0 as an OpenEnv environment. Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from .client import RagenCountdownV0Action, RagenCountdownV0Env, RagenCountdownV0Observation

__all__ = ["RagenCountdownV0Action", "RagenCountdownV0Env", "RagenCountdownV0Observation"]
