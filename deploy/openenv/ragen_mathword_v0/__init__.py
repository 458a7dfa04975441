"""ragen/MathWord-v0 as an OpenEnv environment. Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from .client import RagenMathwordV0Action, RagenMathwordV0Env, RagenMathwordV0Observation

__all__ = ["RagenMathwordV0Action", "RagenMathwordV0Env", "RagenMathwordV0Observation"]
