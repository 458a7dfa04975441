"""The contract every registered ``ragen/*`` env keeps. A new env is covered by adding its register() line."""

from __future__ import annotations

import pickle

import gymnasium as gym
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transcripts import play, play_in_subprocess

import ragen_envs
from ragen_envs.core import INFO_KEYS

ENV_IDS = ragen_envs.registered_ids()
ORACLE_SEEDS = range(5)


def test_registry_is_not_empty():
    assert "ragen/Bandit-v0" in ENV_IDS


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_passes(env_id):
    env = gym.make(env_id).unwrapped
    check_env(env, skip_render_check=False)
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_make_through_module_prefix(env_id):
    env = gym.make(f"ragen_envs:{env_id}")
    obs, info = env.reset(seed=0)
    assert isinstance(obs, str) and obs
    assert isinstance(info["instructions"], str) and info["instructions"]
    assert obs in env.observation_space


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_same_episode_across_processes(env_id):
    here = play(env_id, seed=11)
    assert play_in_subprocess(env_id, 11, hash_seed="1") == here
    assert play_in_subprocess(env_id, 11, hash_seed="2") == here


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_different_seeds_give_different_episodes(env_id):
    assert len({play(env_id, seed=s, turns=0) for s in range(8)}) > 1


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_pickle_round_trip_continues_identically(env_id):
    env = gym.make(env_id).unwrapped
    env.reset(seed=3)
    env.step("<think>x</think><answer>nonsense</answer>")
    if env._done:
        env.reset(seed=3)
    clone = pickle.loads(pickle.dumps(env))
    for _ in range(3):
        response = env.oracle_response()
        assert clone.oracle_response() == response
        a, b = env.step(response), clone.step(response)
        assert repr(a) == repr(b)
        if a[2] or a[3]:
            break


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_oracle_solves_every_seed(env_id):
    env = gym.make(env_id)
    for seed in ORACLE_SEEDS:
        env.reset(seed=seed)
        terminated = truncated = False
        while not (terminated or truncated):
            _, _, terminated, truncated, info = env.step(env.unwrapped.oracle_response())
        assert terminated and info["success"], f"{env_id} seed {seed}: oracle did not succeed"


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize(
    "response",
    ["", "no tags at all", "<think>only thinking</think>", "<answer>x", "<think>a</think>text<answer>b</answer>"],
)
def test_invalid_format_costs_penalty_and_keeps_state(env_id, response):
    env = gym.make(env_id).unwrapped
    env.reset(seed=5)
    before = env._observe()
    obs, reward, terminated, truncated, info = env.step(response)
    assert reward == pytest.approx(env.format_penalty)
    assert not terminated and not info["action_is_valid"] and not info["success"]
    assert env._observe() == before
    assert obs.endswith(before) and "invalid" in obs
    assert set(INFO_KEYS) <= set(info)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_max_turns_truncates(env_id):
    env = gym.make(env_id).unwrapped
    env.reset(seed=0)
    for turn in range(1, env.max_turns + 1):
        _, _, terminated, truncated, info = env.step("not a valid response")
        assert info["turn"] == turn and not terminated
    assert truncated
    with pytest.raises(ResetNeeded):
        env.step("again")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_step_before_reset_raises(env_id):
    with pytest.raises(ResetNeeded):
        gym.make(env_id).step("<think></think><answer>x</answer>")
    with pytest.raises(ResetNeeded):
        gym.make(env_id).unwrapped.step("<think></think><answer>x</answer>")


_tag = st.sampled_from(["<think>", "</think>", "<answer>", "</answer>", "||", "\n", " ", "\x00", "√"])
hostile_text = st.one_of(
    st.text(max_size=400),
    st.lists(st.one_of(_tag, st.text(max_size=12)), max_size=60).map("".join),
    st.builds(lambda a, b: f"<think>{a}</think><answer>{b}</answer>", st.text(max_size=60), st.text(max_size=60)),
    st.builds(lambda n, s: s * n, st.integers(1, 20_000), st.sampled_from(["<think>", "||", "a", "<answer>(", "9"])),
)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_no_response_can_raise(env_id):
    env = gym.make(env_id).unwrapped

    @settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(hostile_text)
    def step_never_raises(response):
        if env._needs_reset or env._done:
            env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step(response)
        assert isinstance(obs, str) and isinstance(reward, float)
        assert obs in env.observation_space, "an observation that echoes model text must stay in the charset"
        assert set(INFO_KEYS) <= set(info)

    step_never_raises()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_misspelled_kwarg_names_the_closest_argument(env_id):
    with pytest.raises(ValueError, match=r"unknown argument 'max_turn'\. Did you mean 'max_turns'\? Allowed: "):
        gym.make(env_id, max_turn=3)
