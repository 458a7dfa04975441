"""The contract every registered ``ragen/*`` env keeps (the public checks of :mod:`ragen_envs.contract`, which
users run on their own envs). A new env is covered by adding its register() line.

The checks whose outcome depends on the response format run in the default format and in the tool format
(``response_format="tool"``), which every env supports with nothing per env but its ``action_tools``.
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ragen_envs
from ragen_envs import contract
from ragen_envs.core import INFO_KEYS

ENV_IDS = [env_id for env_id in ragen_envs.registered_ids() if env_id.startswith("ragen/")]
FORMATS = {"default": {}, "tool": {"response_format": "tool"}}
"""The env's default format (``think``) and the tool format, as ``gym.make`` kwargs."""


@pytest.fixture(params=list(FORMATS))
def kwargs(request) -> dict:
    """The ``gym.make`` kwargs of each format in :data:`FORMATS`: a test taking it runs once per format."""
    return FORMATS[request.param]


def test_registry_is_not_empty():
    assert "ragen/Bandit-v0" in ENV_IDS


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_passes(env_id, kwargs):
    contract.check_gymnasium_api(env_id, kwargs)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_make_through_module_prefix(env_id, kwargs):
    env = gym.make(f"ragen_envs:{env_id}", **kwargs)
    obs, info = env.reset(seed=0)
    assert isinstance(obs, str) and obs
    assert isinstance(info["instructions"], str) and info["instructions"]
    assert obs in env.observation_space
    assert ("tools" in info) == bool(kwargs)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_refused_tool_calls_cost_the_penalty_and_say_why(env_id):
    contract.check_refused_tool_calls(env_id)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_same_episode_across_processes(env_id, kwargs):
    contract.check_same_seed_same_episode(env_id, kwargs)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_different_seeds_give_different_episodes(env_id):
    contract.check_seeds_differ(env_id, first_observation=True)  # ours show the state: the first prompt differs


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_pickle_round_trip_continues_identically(env_id, kwargs):
    contract.check_pickle_round_trip(env_id, kwargs)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_oracle_solves_every_seed(env_id, kwargs):
    contract.check_oracle_solves(env_id, kwargs)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_invalid_format_costs_penalty_and_keeps_state(env_id, kwargs):
    contract.check_invalid_format(env_id, kwargs)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_max_turns_truncates(env_id, kwargs):
    contract.check_truncation(env_id, kwargs)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_step_before_reset_raises(env_id):
    contract.check_step_before_reset(env_id)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_seeded_hostile_responses_never_raise(env_id, kwargs):
    contract.check_hostile_responses(env_id, kwargs)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_misspelled_kwarg_names_the_closest_argument(env_id):
    contract.check_unknown_kwarg(env_id)


_tag = st.sampled_from(["<think>", "</think>", "<answer>", "</answer>", "||", "\n", " ", "\x00", "√"])
hostile_text = st.one_of(
    st.text(max_size=400),
    st.lists(st.one_of(_tag, st.text(max_size=12)), max_size=60).map("".join),
    st.builds(lambda a, b: f"<think>{a}</think><answer>{b}</answer>", st.text(max_size=60), st.text(max_size=60)),
    st.builds(lambda n, s: s * n, st.integers(1, 20_000), st.sampled_from(["<think>", "||", "a", "<answer>(", "9"])),
)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_tool_names = st.sampled_from(["move", "pull", "answer", "submit", "search", "click", "finish"]) | st.text(max_size=12)
_arguments = st.dictionaries(
    st.sampled_from(["direction", "arm", "answer", "expression", "code", "query", "element", "action"]),
    _json,
    max_size=3,
)
_tool_tag = st.sampled_from(
    ["<tool_call>", "</tool_call>", "{", "}", '"name"', '"arguments"', ":", ",", "[", '"', "\\"]
)
hostile_tool_text = st.one_of(
    hostile_text,
    st.builds(
        lambda reasoning, name, arguments: (
            f"{reasoning}<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"
        ),
        st.text(max_size=30),
        _tool_names,
        _arguments | _json,
    ),
    st.lists(st.one_of(_tool_tag, st.text(max_size=12)), max_size=60).map("".join),
    st.builds(
        lambda n, s: s * n, st.integers(1, 20_000), st.sampled_from(["<tool_call>", "[", '{"a":', "</tool_call>"])
    ),
    st.builds(lambda n: "<tool_call>" + "[" * n + "</tool_call>", st.integers(1, 100_000)),
)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_no_response_can_raise(env_id, kwargs):
    env = gym.make(env_id, **kwargs).unwrapped

    @settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(hostile_tool_text if kwargs else hostile_text)
    def step_never_raises(response):
        if env._needs_reset or env._done:
            env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step(response)
        assert isinstance(obs, str) and isinstance(reward, float)
        assert obs in env.observation_space, "an observation that echoes model text must stay in the charset"
        assert set(INFO_KEYS) <= set(info)

    step_never_raises()
