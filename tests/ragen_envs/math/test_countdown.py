"""Countdown: solver-proven problems, the safe exact parser, RAGEN's rewards, hostile answers, feedback turns."""

from __future__ import annotations

import tracemalloc
from fractions import Fraction

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragen_envs  # noqa: F401
from ragen_envs.math.arith import MAX_DEPTH, MAX_EXPRESSION_CHARS, ExpressionError, evaluate
from ragen_envs.math.countdown import (
    CORRECT_REWARD,
    WELL_FORMED_REWARD,
    CountdownConfig,
    generate_problem,
    reachable_values,
    score_answer,
    solve,
)
from tests.helpers.transcripts import check_golden


def think(answer: str) -> str:
    return f"<think>try</think><answer>{answer}</answer>"


def check_solution(numbers, target, solution):
    value, used = evaluate(solution)
    assert value == target, (numbers, target, solution)
    assert sorted(used) == sorted(numbers), (numbers, solution)


# ---- generation and the solver ------------------------------------------------------------------------
def test_every_generated_problem_is_proven_by_its_solution():
    rng = np.random.default_rng(123)
    config = CountdownConfig()
    sizes = set()
    for _ in range(2000):
        p = generate_problem(rng, config)
        assert 3 <= len(p.numbers) <= 4 and all(1 <= n <= 99 for n in p.numbers) and 1 <= p.target <= 100
        check_solution(p.numbers, p.target, p.solution)
        sizes.add(len(p.numbers))
    assert sizes == {3, 4}


@pytest.mark.parametrize("seed", range(0, 300, 7))
def test_env_problem_is_solved_by_an_independent_search(seed):
    env = gym.make("ragen/Countdown-v0")
    _, info = env.reset(seed=seed)
    check_solution(info["numbers"], info["target"], info["solution"])
    found = solve(info["numbers"], info["target"])  # the DFS search, not the table the generator read
    assert found is not None
    check_solution(info["numbers"], info["target"], found)


def test_more_numbers_and_larger_targets_by_kwargs():
    env = gym.make("ragen/Countdown-v0", min_numbers=5, max_numbers=6, max_target=1000)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        assert 5 <= len(info["numbers"]) <= 6 and 1 <= info["target"] <= 1000
        check_solution(info["numbers"], info["target"], info["solution"])
        assert env.step(think(info["solution"]))[1] == CORRECT_REWARD


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=2, max_size=4), st.integers(1, 120))
def test_solver_and_reachable_table_agree(numbers, target):
    found = solve(numbers, target)
    assert (found is not None) == (target in reachable_values(numbers))
    if found is not None:
        check_solution(numbers, target, found)


def test_solver_known_cases():
    check_solution([1, 2, 3, 4], 24, solve([1, 2, 3, 4], 24))
    check_solution([25, 50, 75, 100, 3, 6], 952, solve([25, 50, 75, 100, 3, 6], 952))
    assert solve([2, 2], 5) is None
    # 24 from 3 3 8 8 needs the fraction 8/3 on the way: outside the positive-integer search, by design.
    assert solve([3, 3, 8, 8], 24) is None and evaluate("8 / (3 - 8 / 3)")[0] == 24


def test_generation_is_a_pure_function_of_the_seed():
    a = [generate_problem(np.random.default_rng(9), CountdownConfig()) for _ in range(3)]
    b = [generate_problem(np.random.default_rng(9), CountdownConfig()) for _ in range(3)]
    assert a == b


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"min_numbers": 1}, "min_numbers"),
        ({"min_numbers": 4, "max_numbers": 3}, "max_numbers"),
        ({"max_numbers": 7}, "max_numbers"),
        ({"max_target": 0}, "max_target"),
        ({"max_number": 1.5}, "max_number"),
    ],
)
def test_bad_config_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        CountdownConfig(**kwargs)


# ---- scoring --------------------------------------------------------------------------------------------
NUMBERS, TARGET = (25, 7, 3, 8), 46


@pytest.mark.parametrize(
    ("answer", "reward"),
    [
        ("(25 - 7) * 3 - 8", CORRECT_REWARD),
        ("(25 − 7) × 3 − 8", CORRECT_REWARD),
        ("(25 - 7) * 3 - 8 = 46", CORRECT_REWARD),
        ("3 * (25 - 7) - 8", CORRECT_REWARD),
        ("25 + 7 + 3 + 8", WELL_FORMED_REWARD),
        ("25 + 7 + 3 + 8 = 46", WELL_FORMED_REWARD),  # the claimed value is ignored, the left side judged
        ("(25 - 7) * 3 - 8 = 50", CORRECT_REWARD),
        ("25 + 7 + 3", 0.0),  # a number missing
        ("25 + 7 + 3 + 8 + 3", 0.0),  # a number used twice
        ("25 + 21", 0.0),  # a number that was not given
        ("46", 0.0),
        ("the answer is 46", 0.0),
        ("(25 - 7) * 3 - 8 = 46 = 46", 0.0),
    ],
)
def test_rewards_as_ragen(answer, reward):
    assert score_answer(answer, NUMBERS, TARGET)[0] == reward


HOSTILE = {
    "power tower": ("9**9**9**9", "unexpected '*'"),
    "caret": ("9^9^9^9", "not allowed"),
    "import": ("__import__('os').system('echo hi')", "not allowed"),
    "million chars": ("1+" * 500_000 + "1", "longer than"),
    "deep parens": ("(" * 400 + "1" + ")" * 400, None),
    "nested just past the limit": ("(" * (MAX_DEPTH + 1) + "25" + ")" * (MAX_DEPTH + 1), "nested"),
    "sign chain": ("-" * 100 + "25", "nested"),
    "too many tokens": ("1+" * 200 + "1", "tokens"),
    "division by zero": ("25 / (7 - 7) + 3 + 8", "division by zero"),
    "huge literal": ("9" * 40 + " + 7 + 3 + 8", "digits"),
    "float": ("25.0 + 7 + 3 + 8", "not allowed"),
    "name": ("y + 7", "not allowed"),
    "dangling operator": ("25 + 7 +", "ends too early"),
    "lambda": ("(lambda: 1)()", "not allowed"),
    "unbalanced": ("((25 + 7) * 3 - 8", "unbalanced"),
    "empty": ("", "empty"),
    "nul": ("25\x00+7", "not allowed"),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_answers_are_refused_by_rule(name):
    text, rule = HOSTILE[name]
    with pytest.raises(ExpressionError) as refused:
        evaluate(text)
    if rule:
        assert rule in str(refused.value)
    assert score_answer(text, NUMBERS, TARGET)[0] == 0.0


def test_million_character_answer_costs_no_memory_beyond_the_input():
    text = "(" * 1_000_000
    tracemalloc.start()
    try:
        assert score_answer(text, NUMBERS, TARGET)[0] == 0.0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024  # refused by its length before anything is tokenized
    assert len(text) > MAX_EXPRESSION_CHARS


def test_hostile_answers_through_the_env_end_with_zero():
    env = gym.make("ragen/Countdown-v0")
    for name, (text, _) in HOSTILE.items():
        env.reset(seed=1)
        _, reward, terminated, truncated, info = env.step(think(text))
        if "</" in text or not text.strip():
            continue
        assert reward == 0.0 and terminated and not truncated and not info["success"], name
        assert info["answer_is_well_formed"] is False


_leaf = st.integers(0, 999).map(lambda n: (Fraction(n), str(n)))


def _combine(children):
    (a, ta), (b, tb), op = children
    if op == "/" and b == 0:
        return (a, ta)
    value = {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else a}[op]
    return value, f"({ta} {op} {tb})"


expressions = st.recursive(
    _leaf, lambda inner: st.tuples(inner, inner, st.sampled_from("+-*/")).map(_combine), max_leaves=12
)


@settings(max_examples=400, deadline=None)
@given(expressions)
def test_parser_value_equals_exact_rational_arithmetic(expression):
    value, text = expression
    if len(text) <= MAX_EXPRESSION_CHARS:
        assert evaluate(text)[0] == value


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=200))
def test_any_text_either_evaluates_or_raises_expression_error(text):
    try:
        evaluate(text)
    except ExpressionError:
        pass


# ---- episodes -------------------------------------------------------------------------------------------
def test_single_turn_wrong_answer_is_a_judged_failure():
    env = gym.make("ragen/Countdown-v0")
    _, info = env.reset(seed=4)
    wrong = " + ".join(map(str, info["numbers"]))
    expected = CORRECT_REWARD if sum(info["numbers"]) == info["target"] else WELL_FORMED_REWARD
    obs, reward, terminated, truncated, step_info = env.step(think(wrong))
    assert reward == expected and terminated and not truncated
    assert step_info["answer_is_well_formed"] is True


def test_feedback_turns_then_success():
    env = gym.make("ragen/Countdown-v0", max_turns=4)
    obs, info = env.reset(seed=2)
    assert "try again" in info["instructions"]
    obs, reward, terminated, truncated, _ = env.step(think("1 + 1"))
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert "exactly once" in obs and "Try again." in obs
    wrong = " * ".join(map(str, info["numbers"]))
    obs, reward, terminated, _, _ = env.step(think(wrong))
    assert reward == 0.0 and not terminated and "Your expression equals" in obs
    assert env.step("no tags")[4]["answer_is_well_formed"] is False  # not judged: not the previous answer
    obs, reward, terminated, _, step_info = env.step(think(info["solution"]))
    assert reward == CORRECT_REWARD and terminated and step_info["success"]


def test_feedback_turns_last_wrong_answer_earns_partial_credit():
    env = gym.make("ragen/Countdown-v0", max_turns=2)
    _, info = env.reset(seed=3)
    wrong = " * ".join(map(str, info["numbers"]))
    env.step(think(wrong))
    _, reward, terminated, truncated, step_info = env.step(think(wrong))
    assert reward == WELL_FORMED_REWARD and terminated and not truncated and not step_info["success"]


def test_sampled_actions_are_well_formed_answers():
    env = gym.make("ragen/Countdown-v0").unwrapped
    env.reset(seed=0)
    env.action_space.seed(0)
    well_formed = 0
    for _ in range(30):
        env.reset(seed=0)
        _, _, _, _, info = env.step(env.action_space.sample())
        well_formed += info["answer_is_well_formed"]
    assert well_formed == 30


def test_golden_countdown_feedback_episode():
    env = gym.make("ragen/Countdown-v0")
    _, info = env.reset(seed=0)
    responses = [think("99 + 1"), "no tags", think(" - ".join(map(str, info["numbers"]))), think(info["solution"])]
    check_golden("countdown_seed0_feedback", "ragen/Countdown-v0", 0, responses, max_turns=4)


def test_oracle_scores_one_on_many_seeds():
    env = gym.make("ragen/Countdown-v0").unwrapped
    for seed in range(200):
        env.reset(seed=seed)
        _, reward, terminated, _, info = env.step(env.oracle_response())
        assert reward == CORRECT_REWARD and terminated and info["success"], seed
