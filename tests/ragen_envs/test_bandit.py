"""Bandit: names and order vary per seed, payouts, success semantics, bad arguments, golden transcripts."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest

from ragen_envs.bandit import BOLD_NAMES, CAUTIOUS_NAMES, BanditConfig, BanditEnv
from tests.helpers.transcripts import check_golden


def pull(name: str) -> str:
    return f"<think>pulling {name}</think><answer>{name}</answer>"


def test_names_and_their_order_vary_across_seeds():
    env = gym.make("ragen/Bandit-v0").unwrapped
    safe, risky, risky_first = set(), set(), set()
    for seed in range(300):
        obs, _ = env.reset(seed=seed)
        assert env.safe_name in CAUTIOUS_NAMES and env.risky_name in BOLD_NAMES
        assert obs == f"Arms: {env.order[0]} and {env.order[1]}. Which arm do you pull?"
        safe.add(env.safe_name)
        risky.add(env.risky_name)
        risky_first.add(env.order[0] == env.risky_name)
    assert safe == set(CAUTIOUS_NAMES) and risky == set(BOLD_NAMES)
    assert risky_first == {True, False}


def test_a_fixed_answer_cannot_win_across_seeds():
    env = gym.make("ragen/Bandit-v0").unwrapped
    for answer in ("Dragon", "left", "the first arm", "risky"):
        wins = 0
        for seed in range(200):
            env.reset(seed=seed)
            wins += env.step(pull(answer))[4]["success"]
        assert wins < 40, answer


def test_expected_payouts():
    env = gym.make("ragen/Bandit-v0").unwrapped
    n = 4000
    risky_total = 0.0
    for seed in range(n):
        env.reset(seed=seed)
        _, reward, terminated, _, _ = env.step(pull(env.risky_name))
        assert terminated and reward in (0.0, 1.0)
        risky_total += reward
    assert abs(risky_total / n - 0.25) <= 4 * math.sqrt(0.25 * 0.75 / n)
    for seed in range(50):
        env.reset(seed=seed)
        assert env.step(pull(env.safe_name))[1] == pytest.approx(0.1)


def test_success_means_pulling_the_arm_with_the_higher_expected_payout():
    env = gym.make("ragen/Bandit-v0").unwrapped
    outcomes = set()
    for seed in range(40):
        env.reset(seed=seed)
        _, reward, _, _, info = env.step(pull(env.risky_name))
        assert info["success"]  # even when this pull paid 0: success is about the choice, not the luck
        outcomes.add(reward)
        env.reset(seed=seed)
        assert not env.step(pull(env.safe_name))[4]["success"]
    assert outcomes == {0.0, 1.0}
    # When the safe arm is worth more in expectation, pulling it is the success.
    env = gym.make("ragen/Bandit-v0", safe_reward=0.5).unwrapped
    env.reset(seed=0)
    assert env.step(pull(env.safe_name))[4]["success"]
    assert BanditConfig(safe_reward=0.5).best_arm == "safe" and BanditConfig().best_arm == "risky"


def test_names_are_case_insensitive_and_unknown_names_are_retried():
    env = gym.make("ragen/Bandit-v0").unwrapped
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(pull("Nobody"))
    assert reward == pytest.approx(-0.1) and not terminated and not truncated and not info["action_is_valid"]
    assert obs.startswith("Unknown action(s) 'Nobody' were ignored.")
    _, _, terminated, _, info = env.step(pull(env.risky_name.upper() + "!"))
    assert terminated and info["action_is_valid"] and info["success"]


def test_oracle_picks_the_best_arm():
    for kwargs, arm in (({}, "risky"), ({"safe_reward": 0.9}, "safe")):
        env = gym.make("ragen/Bandit-v0", **kwargs).unwrapped
        for seed in range(20):
            env.reset(seed=seed)
            best = env.risky_name if arm == "risky" else env.safe_name
            assert env.oracle_response().endswith(f"<answer>{best}</answer>")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"risky_prob": 1.5}, r"risky_prob must be in \[0.0, 1.0\]"),
        ({"risky_prob": -0.01}, r"risky_prob must be in \[0.0, 1.0\]"),
        ({"safe_reward": "a lot"}, r"safe_reward must be a number"),
        ({"max_turns": 0}, r"max_turns must be in \[1, inf\]"),
        ({"response_format": "json"}, r"response_format must be one of \('think', 'answer', 'raw', 'tool'\)"),
    ],
)
def test_bad_arguments_raise_value_error_naming_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BanditEnv(**kwargs)


def test_golden_bandit_format_error_then_risky_pull():
    # seed 0: Bedrock (safe) and Jackpot (risky)
    check_golden("bandit_seed0", "ragen/Bandit-v0", 0, ["I pick Jackpot", pull("Lighthouse"), pull("jackpot")])


def test_golden_bandit_safe_pull():
    check_golden("bandit_seed1_safe", "ragen/Bandit-v0", 1, [pull("Bank Vault.")])


def test_golden_bandit_raw_format():
    check_golden("bandit_seed3_raw", "ragen/Bandit-v0", 3, ["", "  Gambler  "], response_format="raw")


def test_golden_bandit_tool_format():
    # seed 0: Bedrock (safe) and Jackpot (risky). No call, a misnamed tool, an unknown arm, then the risky pull.
    def call(name: str, arm: str) -> str:
        return f'<tool_call>\n{{"name": "{name}", "arguments": {{"arm": "{arm}"}}}}\n</tool_call>'

    responses = [
        "<answer>Jackpot</answer>",
        call("pul", "Jackpot"),
        call("pull", "Lighthouse"),
        "Bold.\n" + call("pull", "jackpot"),
    ]
    check_golden("bandit_seed0_tool", "ragen/Bandit-v0", 0, responses, response_format="tool")
