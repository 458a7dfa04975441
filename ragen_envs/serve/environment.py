"""A ``ragen/*`` env as an OpenEnv ``Environment``: the action, observation and state models of the protocol.

The observation carries exactly what ``gym.make(env_id).step`` returns (text, reward, terminated, truncated,
info), so a client can rebuild the Gymnasium tuple byte for byte; OpenEnv's ``done`` is
``terminated or truncated``. Reset returns ``reward=None``, as OpenEnv envs do.
"""

from __future__ import annotations

import uuid
from typing import Any

import gymnasium as gym
from openenv.core.env_server import Action, Environment, Observation, State
from pydantic import ConfigDict, Field

import ragen_envs  # noqa: F401  (registers the ids)


class RagenAction(Action):
    """One model response, played as one turn."""

    model_config = ConfigDict(extra="forbid", strict=True)
    response: str = Field(description="The raw text the model wrote for this turn")


class RagenObservation(Observation):
    """What the env returned for a reset or a step."""

    text: str = Field(description="The observation text")
    info: dict[str, Any] = Field(default_factory=dict, description="The env's info dict (reset: 'instructions')")
    terminated: bool = False
    truncated: bool = False


class RagenState(State):
    """Where the session's episode stands."""

    env_id: str
    seed: int | None = None
    turn: int = 0
    episode_done: bool = False
    needs_reset: bool = True


class RagenEnvironment(Environment[RagenAction, RagenObservation, RagenState]):
    """``gym.make(env_id, **env_kwargs)`` behind OpenEnv's Environment interface (one per session)."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # every session has its own env instance; envs share no mutable state

    def __init__(self, env_id: str, env_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.env_id = env_id
        self.env = gym.make(env_id, **(env_kwargs or {}))
        self._state = RagenState(env_id=env_id)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> RagenObservation:
        """OpenEnv's Environment.reset: start an episode from ``seed`` (``episode_id`` defaults to a fresh uuid)."""
        text, info = self.env.reset(seed=seed)
        self._state = RagenState(
            env_id=self.env_id, episode_id=episode_id or uuid.uuid4().hex, seed=seed, needs_reset=False
        )
        return RagenObservation(text=text, info=info, reward=None, done=False)

    def step(self, action: RagenAction, timeout_s: float | None = None, **kwargs: Any) -> RagenObservation:
        """OpenEnv's Environment.step: play one response; the observation carries reward, done and info."""
        text, reward, terminated, truncated, info = self.env.step(action.response)
        state = self._state
        state.step_count += 1
        state.turn = int(info.get("turn", state.step_count))
        state.episode_done = state.needs_reset = bool(terminated or truncated)
        return RagenObservation(
            text=text,
            info=info,
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            done=terminated or truncated,
        )

    @property
    def state(self) -> RagenState:
        """OpenEnv's Environment.state: the current :class:`RagenState`."""
        return self._state

    def close(self) -> None:
        """OpenEnv's Environment.close: close the wrapped env."""
        self.env.close()
