"""Vectorized use of every registered env: the strings a vector env returns are exactly a single env's.

Every way in works: ``gym.make_vec(id, vectorization_mode="async" | "sync")``, ``AsyncVectorEnv(fns)`` with
Gymnasium's default shared memory (the envs' observation space decodes it on read: ``ragen_envs.text_space``),
``AsyncVectorEnv(fns, shared_memory=False)`` and ``SyncVectorEnv``.
"""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

import ragen_envs

ENV_IDS = ragen_envs.registered_ids()
SEEDS = [3, 11]
STEPS = 10
JUNK = "<think>hmm</think><answer>not an action</answer>"


def _factory(env_id: str):
    return lambda: gym.make(env_id)


def _lockstep(vector: gym.vector.VectorEnv, env_id: str) -> int:
    """Drive ``vector`` and one single env per slot with the same responses; return the number of autoresets."""
    singles = [gym.make(env_id) for _ in SEEDS]
    obs, info = vector.reset(seed=SEEDS)
    assert isinstance(obs, tuple) and len(obs) == len(SEEDS)
    for slot, (single, seed) in enumerate(zip(singles, SEEDS, strict=True)):
        expected, expected_info = single.reset(seed=seed)
        assert obs[slot] == expected
        assert info["instructions"][slot] == expected_info["instructions"]
    needs_reset = [False] * len(SEEDS)
    autoresets = 0
    for t in range(STEPS):
        # The oracle's answer most turns, a wrong answer every third turn; ignored on an autoreset step.
        actions = tuple(
            "" if needs_reset[i] else (JUNK if t % 3 == 2 else single.unwrapped.oracle_response())
            for i, single in enumerate(singles)
        )
        obs, rewards, terminations, truncations, infos = vector.step(actions)
        for slot, single in enumerate(singles):
            if needs_reset[slot]:  # NEXT_STEP autoreset: this step reset the sub-env without a seed
                expected, _ = single.reset()
                expected_step = (expected, 0.0, False, False)
                needs_reset[slot] = False
                autoresets += 1
            else:
                expected, reward, terminated, truncated, step_info = single.step(actions[slot])
                expected_step = (expected, reward, terminated, truncated)
                assert bool(infos["success"][slot]) == step_info["success"]
                needs_reset[slot] = terminated or truncated
            got = (obs[slot], float(rewards[slot]), bool(terminations[slot]), bool(truncations[slot]))
            assert got == expected_step, f"{env_id} slot {slot} step {t}"
    vector.close()
    return autoresets


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_async_vector_env_without_shared_memory_returns_each_envs_strings(env_id):
    vector = AsyncVectorEnv([_factory(env_id) for _ in SEEDS], shared_memory=False)
    assert vector.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    _lockstep(vector, env_id)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_sync_vector_env_returns_each_envs_strings(env_id):
    _lockstep(SyncVectorEnv([_factory(env_id) for _ in SEEDS]), env_id)


def test_lockstep_covers_autoreset():
    # Bandit ends after one valid pull, so ten steps go through several automatic resets.
    assert _lockstep(SyncVectorEnv([_factory("ragen/Bandit-v0") for _ in SEEDS]), "ragen/Bandit-v0") >= 4


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_make_vec_async_with_default_shared_memory_returns_each_envs_strings(env_id):
    vector = gym.make_vec(env_id, num_envs=len(SEEDS), vectorization_mode="async")
    assert vector.shared_memory  # Gymnasium's default, the path that used to return stale tab characters
    _lockstep(vector, env_id)


@pytest.mark.parametrize("env_id", ["ragen/Bandit-v0", "ragen/FrozenLake-v0"])
def test_async_vector_env_defaults_deliver_text_observations(env_id):
    expected = [gym.make(env_id).reset(seed=seed)[0] for seed in SEEDS]
    vector = AsyncVectorEnv([_factory(env_id) for _ in SEEDS])  # shared_memory=True, copy=True
    try:
        obs, _ = vector.reset(seed=SEEDS)
        assert obs == tuple(expected) and all(type(o) is str for o in obs)
        live = AsyncVectorEnv([_factory(env_id) for _ in SEEDS], copy=False)
        try:
            view, _ = live.reset(seed=SEEDS)
            assert list(view) == expected and len(view) == 2 and view[1:] == (expected[1],)
        finally:
            live.close()
    finally:
        vector.close()
