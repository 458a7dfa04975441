"""Golden transcripts: fixed response scripts replayed against an env and compared with a stored JSON file.

The one recorder and checker of every env's golden files (``tests/ragen_envs/golden``). Regenerate after an intended
change (then bump the env's version if prompt text, reward or termination changed):
``RAGEN_REGEN_GOLDEN=1 python -m pytest tests/ragen_envs -k golden``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import gymnasium as gym

import ragen_envs  # noqa: F401  (registers the ids)

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "ragen_envs" / "golden"


def record(env_id: str, seed: int, responses: list[str], oracle: bool = False, **kwargs: Any) -> dict[str, Any]:
    """Reset ``env_id`` with ``seed`` and play ``responses`` until the episode ends, then, with ``oracle``, the env's
    oracle until it ends; everything as JSON data."""
    env = gym.make(env_id, **kwargs)
    obs, info = env.reset(seed=seed)
    first = {"obs": obs, "info": info}
    turns, done = [], False
    scripted = iter(responses)
    while not done:
        response = next(scripted, None)
        if response is None:
            if not oracle:
                break
            response = env.unwrapped.oracle_response()
        obs, reward, terminated, truncated, info = env.step(response)
        turns.append(
            {
                "response": response,
                "obs": obs,
                "reward": reward,
                "terminated": terminated,
                "truncated": truncated,
                "info": info,
            }
        )
        done = terminated or truncated
    env.close()
    return {"env_id": env_id, "kwargs": kwargs, "seed": seed, "reset": first, "turns": turns}


def check_golden(
    name: str, env_id: str, seed: int, responses: list[str], oracle: bool = False, **kwargs: Any
) -> dict[str, Any]:
    """Replay and compare with ``golden/<name>.json`` (written instead when ``RAGEN_REGEN_GOLDEN=1``)."""
    path = GOLDEN_DIR / f"{name}.json"
    # A JSON round trip makes tuples lists and keeps floats exact, so both sides compare as stored.
    actual = json.loads(json.dumps(record(env_id, seed, responses, oracle, **kwargs)))
    if os.environ.get("RAGEN_REGEN_GOLDEN") == "1":
        GOLDEN_DIR.mkdir(exist_ok=True)
        path.write_text(json.dumps(actual, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    expected = json.loads(path.read_text(encoding="utf-8"))
    assert actual == expected, f"{name}: the episode differs from {path} (see the module docstring to regenerate)"
    return actual
