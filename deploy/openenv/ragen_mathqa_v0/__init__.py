"""ragen/MathQA-v0 as an OpenEnv environment. Generated from the env registry by `python -m ragen_envs.serve.manifest`: do not edit."""

from .client import RagenMathqaV0Action, RagenMathqaV0Env, RagenMathqaV0Observation

__all__ = ["RagenMathqaV0Action", "RagenMathqaV0Env", "RagenMathqaV0Observation"]
