"""ragen/SearchQA-v0 as an OpenEnv environment. Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from .client import RagenSearchqaV0Action, RagenSearchqaV0Env, RagenSearchqaV0Observation

__all__ = ["RagenSearchqaV0Action", "RagenSearchqaV0Env", "RagenSearchqaV0Observation"]
