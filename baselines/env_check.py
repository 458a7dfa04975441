"""What the trainer adapters (TRL, verl) check about an env before training starts, and its first-turn chat.

Both adapters build their datasets from the same first-turn conversation the learner's rollouts start from
(:class:`harness.transcript.Transcript`), so a dataset row shows what the model is asked, and both fail at construction, not
mid-run, on an unknown id or a bad keyword argument.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

import ragen_envs  # noqa: F401  (registers the ids)
from harness.transcript import Transcript
from ragen_envs import resolve_env_id


def check_env(env_id: str, env_kwargs: dict[str, Any] | None = None) -> str:
    """The registered id for ``env_id`` (``ValueError`` with a "did you mean" otherwise), after building the env
    once with ``env_kwargs`` so a misspelled or out-of-range argument fails here with the env's own message."""
    resolved = resolve_env_id(env_id)
    if env_kwargs is not None and not isinstance(env_kwargs, dict):
        raise ValueError(f"env_kwargs must be a dict of keyword arguments for {resolved}, got {env_kwargs!r}")
    env = gym.make(resolved, **(env_kwargs or {}))
    env.close()
    return resolved


def first_turn_chat(env_id: str, env_kwargs: dict[str, Any], seed: int) -> tuple[list[dict[str, str]], str]:
    """The (system, user) messages of turn 1 on ``seed`` and the assistant prefill, as the rollouts build them."""
    env = gym.make(env_id, **env_kwargs)
    try:
        observation, info = env.reset(seed=seed)
        transcript = Transcript(info["instructions"], observation, env.unwrapped.response_format)
    finally:
        env.close()
    return list(transcript.context().messages), transcript.prefill


def check_seed(seed: Any) -> int:
    """An env seed as an int in [0, 2**31) (what the envs accept), else ``ValueError`` naming it."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        raise ValueError(f"env seeds must be integers in [0, 2**31), got {seed!r}")
    return seed
