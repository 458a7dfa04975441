"""MathWord: every family at every difficulty, worked solutions that check out, retries, tolerant answers."""

from __future__ import annotations

import re
from fractions import Fraction

import gymnasium as gym
import numpy as np
import pytest

import ragen_envs  # noqa: F401
from ragen_envs.math.answers import format_number, parse_number
from ragen_envs.math.math_word import FAMILIES, FAMILY_NAMES, MathWordConfig, generate_problem
from tests.helpers.transcripts import check_golden

LINE = re.compile(r"^(\S+) ([+\-×÷]) (\S+) = (\S+)$")
OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "×": lambda a, b: a * b, "÷": lambda a, b: a / b}


def think(answer: str) -> str:
    return f"<think>working</think><answer>{answer}</answer>"


def replay(lines: tuple[str, ...]) -> Fraction:
    """Check every line's arithmetic exactly and return the last result."""
    result = None
    for line in lines:
        match = LINE.match(line)
        assert match, line
        a, op, b, r = (match.group(1), match.group(2), match.group(3), match.group(4))
        result = OPS[op](Fraction(a), Fraction(b))
        assert result == Fraction(r), line
    return result


def test_at_least_25_families_over_the_topics():
    assert len(FAMILIES) >= 25
    for topic in (
        "wallet",
        "price_changes",
        "funnel",
        "ratios",
        "unit_conversion",
        "mixtures",
        "ages",
        "work_together",
    ):
        assert topic in FAMILIES


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_family_has_exactly_the_asked_steps_and_a_correct_worked_solution(family):
    for steps in range(2, 9):
        texts = set()
        for seed in range(40):
            p = generate_problem(np.random.default_rng(seed), steps, (family,))
            assert p.family == family and p.steps == steps
            assert len(p.solution) == steps, (family, steps, seed, p.solution)
            assert replay(p.solution) == p.answer, (family, steps, seed)
            assert p.answer > 0, (family, steps, seed, p.text)
            assert parse_number(format_number(p.answer)) == p.answer
            assert p.text.endswith("?") and p.text.isascii()
            texts.add(p.text)
        assert len(texts) >= 30, f"{family} at {steps} steps repeats itself: {len(texts)} distinct texts of 40"


def test_numbers_in_the_text_feed_the_solution():
    """The text and the answer come from the same values: the first operand is a number the text states."""
    for seed in range(300):
        p = generate_problem(np.random.default_rng(seed))
        stated = {parse_number(token) for token in re.findall(r"\d+(?:\.\d+)?", p.text.replace(",", ""))}
        operands = set()
        for line in p.solution:
            a, _, b, _ = LINE.match(line).groups()
            operands.update((Fraction(a), Fraction(b)))
        assert stated & operands, (p.text, p.solution)


def test_generation_is_a_pure_function_of_the_seed():
    a = generate_problem(np.random.default_rng(5))
    b = generate_problem(np.random.default_rng(5))
    assert (a.text, a.answer, a.solution) == (b.text, b.answer, b.solution)


def test_surface_varies_across_seeds():
    env = gym.make("ragen/MathWord-v0")
    infos = [env.reset(seed=s)[1] for s in range(200)]
    assert len({i["family"] for i in infos}) == len(FAMILY_NAMES)
    assert {i["steps"] for i in infos} == set(range(2, 9))


@pytest.mark.parametrize("steps", [2, 5, 8])
def test_difficulty_kwarg_fixes_the_step_count(steps):
    env = gym.make("ragen/MathWord-v0", steps=steps)
    for seed in range(20):
        _, info = env.reset(seed=seed)
        assert info["steps"] == steps and len(info["solution"]) == steps


def test_oracle_and_tolerant_answer_forms_score_one():
    env = gym.make("ragen/MathWord-v0", families=["wallet", "wages", "packing"])
    for seed in range(30):
        _, info = env.reset(seed=seed)
        value = Fraction(info["answer"])
        forms = [info["answer"], f"\\boxed{{{info['answer']}}}", f"{info['answer']} dollars", f"x = {info['answer']}"]
        if value.denominator == 1:
            forms += [f"{int(value):,}", f"${int(value)}.00", f"{int(value)}.0"]
        for form in forms:
            env.reset(seed=seed)
            assert env.step(think(form))[1] == 1.0, form
        env.reset(seed=seed)
        assert env.step(think(format_number(value + Fraction(1, 2))))[1] == 0.0


def test_reward_halves_with_each_attempt_and_feedback_says_try_again():
    env = gym.make("ragen/MathWord-v0", max_turns=3)
    obs, info = env.reset(seed=7)
    wrong = format_number(Fraction(info["answer"]) + 1)
    obs, reward, terminated, truncated, _ = env.step(think(wrong))
    assert (reward, terminated, truncated) == (0.0, False, False) and obs.startswith("Incorrect, try again.")
    obs, reward, _, _, _ = env.step("no tags")  # a format error costs the penalty but is not an attempt
    assert reward == -0.1
    obs, reward, _, _, _ = env.step(think(wrong))
    assert reward == 0.0
    env.reset(seed=7)
    env.step(think(wrong))
    _, reward, terminated, _, step_info = env.step(think(info["answer"]))
    assert reward == 0.5 and terminated and step_info["success"] and step_info["attempts"] == 2


def test_wrong_answer_on_the_last_turn_is_a_judged_failure():
    env = gym.make("ragen/MathWord-v0")
    env.reset(seed=1)
    obs, reward, terminated, truncated, info = env.step(think("-1"))
    assert reward == 0.0 and terminated and not truncated and not info["success"] and obs.startswith("Incorrect.")


def test_bad_arguments_name_the_field():
    with pytest.raises(ValueError, match="steps"):
        MathWordConfig(steps=9)
    with pytest.raises(ValueError, match="Did you mean 'wages'"):
        MathWordConfig(families=("wage",))
    with pytest.raises(ValueError, match="families"):
        gym.make("ragen/MathWord-v0", families="wallet")


def test_golden_math_word_retries():
    env = gym.make("ragen/MathWord-v0", steps=4)
    _, info = env.reset(seed=3)
    check_golden(
        "math_word_seed3_retries",
        "ragen/MathWord-v0",
        3,
        [think("12 or 13"), think(info["answer"])],
        steps=4,
        max_turns=2,
    )


def test_oracle_scores_one_on_many_seeds():
    env = gym.make("ragen/MathWord-v0").unwrapped
    for seed in range(300):
        env.reset(seed=seed)
        response = env.oracle_response()
        assert "=" in response  # the worked solution is the oracle's reasoning
        _, reward, terminated, _, info = env.step(response)
        assert reward == 1.0 and terminated and info["success"], seed
