"""Lockstep play: the same responses go to an in-process ``gym.make`` env and to a served one."""

from __future__ import annotations

import json

import gymnasium as gym

import ragen_envs  # noqa: F401  (registers the ids)

JUNK = ("", "<answer>", "<think>a</think>", "hello", "<think>x</think><answer>\u0000\ud800 ||||</answer>")


def responses(env: gym.Env, turn: int) -> str:
    """Junk and random well-formed actions first, the oracle every fifth turn: long episodes that still end."""
    phase = turn % 5
    if phase in (0, 2):
        return JUNK[turn % len(JUNK)]
    if phase in (1, 3):
        return env.action_space.sample()
    return env.unwrapped.oracle_response()


def lockstep(env_id: str, seed: int, remote, max_turns: int = 40, **kwargs) -> tuple[str, str]:
    """Play one episode on ``gym.make(env_id, **kwargs)`` and on ``remote`` (a Client of a server given the same
    kwargs) with the same responses; return both transcripts as JSON text."""
    env = gym.make(env_id, **kwargs)
    env.action_space.seed(seed)
    local = [env.reset(seed=seed)]
    served = [remote.reset(seed=seed)]
    for turn in range(max_turns):
        response = responses(env, turn)
        local.append(env.step(response))
        served.append(remote.step(response))
        if local[-1][2] or local[-1][3]:
            break
    env.close()
    return json.dumps(local), json.dumps(served)
