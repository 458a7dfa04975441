"""Helpers that turn an episode into bytes, so tests can compare episodes across processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym

import ragen_envs  # noqa: F401  (registers the ids)

JUNK_RESPONSES = ("", "<answer>", "<think>a</think>", "<think></think><answer>  </answer>", "hello")


def play(env_id: str, seed: int, turns: int = 50, junk_every: int = 3) -> str:
    """Roll out the oracle with a junk response every ``junk_every`` turns; return the transcript as JSON."""
    env = gym.make(env_id)
    obs, info = env.reset(seed=seed)
    record = [{"obs": obs, "info": info}]
    for t in range(turns):
        if junk_every and t % junk_every == junk_every - 1:
            response = JUNK_RESPONSES[t % len(JUNK_RESPONSES)]
        else:
            response = env.unwrapped.oracle_response()
        obs, reward, terminated, truncated, info = env.step(response)
        record.append(
            {
                "response": response,
                "obs": obs,
                "reward": reward,
                "terminated": terminated,
                "truncated": truncated,
                "info": info,
            }
        )
        if terminated or truncated:
            break
    env.close()
    return json.dumps(record, sort_keys=True, default=repr)


def play_in_subprocess(env_id: str, seed: int, hash_seed: str) -> str:
    """The same as :func:`play`, in a fresh interpreter with its own ``PYTHONHASHSEED``."""
    code = f"import sys; sys.path.insert(0, 'tests'); from transcripts import play; sys.stdout.write(play({env_id!r}, {seed}))"
    env = {"PYTHONHASHSEED": hash_seed, "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
