"""Countdown: reach the target with an arithmetic expression over the given numbers (RAGEN's Countdown).

## Description
A target and 3–4 numbers (RAGEN's sizes: numbers 1–99, target 1–100) are drawn from the seed. Every
problem is *proven* solvable before it is shown: the numbers are drawn uniformly, then the target uniformly
among the values in range that the numbers reach, and the solver writes an expression for it (the oracle's
answer, returned in ``info["solution"]``). The solver is exhaustive over all expressions whose intermediate
values are positive integers (the classic Countdown rule; the checker accepts any exact expression, so a
model may also use fractions on the way): a subset table of reachable values for up to 5 numbers, a
memoized depth-first search (:func:`solve`) for 6. Numbers that reach no target in range are redrawn.

## Action Space
A response whose answer is one arithmetic expression that uses each given number exactly once, with
``+ - * /`` (``×``, ``÷`` and ``−`` are accepted too) and parentheses, e.g. ``<answer>(25 - 7) * 3 - 8</answer>``.
A trailing ``= 46`` is allowed and ignored. The whole answer is one action (no ``||``).

## Observation Space
``"Target: 46, nums: [25, 7, 3, 8]. Using each number exactly once, write an expression equal to 46."``

## Rewards
As RAGEN: 1 for a correct expression; 0.1 for a well-formed expression that uses exactly the given
numbers but has another value; 0 otherwise (not an expression, wrong numbers, division by zero, powers,
too long or too deeply nested). Checking is exact (rationals) and safe (:mod:`ragen_envs.math.arith`, no
``eval``). A response without the ``<answer>`` format costs ``format_penalty`` (-0.1).

## Episode End
Terminated after a correct answer (success) or after a wrong answer on the last turn (judged failure).
With ``max_turns`` > 1 a wrong answer gets feedback (its value, or what was wrong) and the model tries
again; a wrong answer on an earlier turn earns 0, and the 0.1 partial credit is paid only on the last turn.
Truncated after ``max_turns`` turns without a judged answer (only format errors).

## Version History
- v0: initial release.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragen_envs.arguments import EnvConfig, argument
from ragen_envs.core import ActionResult, TextEnv
from ragen_envs.math.arith import ExpressionError, evaluate
from ragen_envs.tools import ActionTool

CORRECT_REWARD = 1.0
WELL_FORMED_REWARD = 0.1
MAX_DRAWS = 10_000
TARGETS_PER_DRAW = 16


@dataclass(frozen=True)
class CountdownConfig(EnvConfig):
    """Sizes of a Countdown problem."""

    min_numbers: int = argument(3, "Fewest numbers in a problem.", low=2, high=6, integer=True)
    max_numbers: int = argument(4, "Most numbers in a problem.", low="min_numbers", high=6, integer=True)
    max_number: int = argument(99, "Largest number drawn.", low=1, high=10_000, integer=True)
    min_target: int = argument(1, "Smallest target.", low=1, integer=True)
    max_target: int = argument(100, "Largest target.", low="min_target", high=1_000_000, integer=True)


@dataclass(frozen=True)
class CountdownProblem:
    """One Countdown puzzle: the numbers to use, the target and one solving expression."""

    numbers: tuple[int, ...]
    target: int
    solution: str


# ---- solver ------------------------------------------------------------------------------------------
# A node is (value, expr) where expr is an int leaf or a tuple (op, left, right); strings are built only for
# the solution that is found.


def _render(expr: Any, parent: str = "", right_side: bool = False) -> str:
    if not isinstance(expr, tuple):
        return str(expr)
    op, left, right = expr
    text = f"{_render(left, op)} {op} {_render(right, op, True)}"
    needs = (op in "+-" and parent in ("*", "/")) or (right_side and (parent == "-" and op in "+-" or parent == "/"))
    return f"({text})" if needs else text


def _combine(a: tuple[int, Any], b: tuple[int, Any]):
    """Every positive-integer result of one operation on two nodes (the larger operand goes left)."""
    if a[0] < b[0]:
        a, b = b, a
    x, y = a[0], b[0]
    yield x + y, ("+", a[1], b[1])
    yield x * y, ("*", a[1], b[1])
    if x > y:
        yield x - y, ("-", a[1], b[1])
    if x % y == 0:
        yield x // y, ("/", a[1], b[1])


def _search(nodes: list[tuple[int, Any]], target: int, failed: set) -> Any | None:
    if len(nodes) == 2:
        for value, expr in _combine(nodes[0], nodes[1]):
            if value == target:
                return expr
        return None
    key = tuple(sorted(node[0] for node in nodes))
    if key in failed:
        return None
    count = len(nodes)
    for i in range(count - 1):
        for j in range(i + 1, count):
            rest = [nodes[k] for k in range(count) if k != i and k != j]
            for node in _combine(nodes[i], nodes[j]):
                found = _search([*rest, node], target, failed)
                if found is not None:
                    return found
    failed.add(key)
    return None


def solve(numbers: list[int] | tuple[int, ...], target: int) -> str | None:
    """An expression that uses every number once and equals ``target``, or ``None`` if there is none.

    Exhaustive over expressions with positive-integer intermediate values (failed sub-multisets are memoized).
    """
    if len(numbers) == 1:
        return str(numbers[0]) if numbers[0] == target else None
    found = _search([(int(n), int(n)) for n in numbers], int(target), set())
    return None if found is None else _render(found)


def _subset_values(numbers: list[int], low: int = 1, high: int | None = None) -> list[set[int]]:
    """For every subset (bitmask) of ``numbers``, the values its expressions reach (positive-integer steps).

    The set of the full mask keeps only values in [low, high] (the targets that can be asked for).
    """
    count = len(numbers)
    full = (1 << count) - 1
    values: list[set[int]] = [set() for _ in range(1 << count)]
    for i, n in enumerate(numbers):
        values[1 << i] = {n}
    for mask in range(1, 1 << count):
        if mask & (mask - 1) == 0:
            continue
        out = values[mask]
        low_bit = mask & -mask  # each split {A, B} is visited once: A holds the lowest number
        sub = (mask - 1) & mask
        while sub:
            if sub & low_bit:
                rest = mask ^ sub
                for a in values[sub]:
                    for b in values[rest]:
                        x, y = (a, b) if a >= b else (b, a)
                        out.add(x + y)
                        out.add(x * y)
                        if x > y:
                            out.add(x - y)
                        if x % y == 0:
                            out.add(x // y)
            sub = (sub - 1) & mask
        if mask == full and (low > 1 or high is not None):
            values[mask] = {v for v in out if low <= v and (high is None or v <= high)}
    return values


def reachable_values(numbers: list[int] | tuple[int, ...]) -> set[int]:
    """Every value an expression over all of ``numbers`` reaches with positive-integer intermediates."""
    return _subset_values([int(n) for n in numbers])[(1 << len(numbers)) - 1]


def _witness(values: list[set[int]], numbers: list[int], mask: int, target: int) -> Any:
    """An expression tree over the subset ``mask`` equal to ``target`` (which must be in ``values[mask]``)."""
    if mask & (mask - 1) == 0:
        return numbers[mask.bit_length() - 1]
    low = mask & -mask
    sub = (mask - 1) & mask
    while sub:
        if sub & low:
            rest = mask ^ sub
            right = values[rest]
            for a in values[sub]:
                # b such that (a op b) or (b op a) == target, for each operation
                for b, op, a_left in (
                    (target - a, "+", True),
                    (a - target, "-", True),
                    (target + a, "-", False),
                    (target // a if target % a == 0 else 0, "*", True),
                    (a // target if a % target == 0 else 0, "/", True),
                    (a * target, "/", False),
                ):
                    if b > 0 and b in right:
                        left_expr = _witness(values, numbers, sub, a)
                        right_expr = _witness(values, numbers, rest, b)
                        return (op, left_expr, right_expr) if a_left else (op, right_expr, left_expr)
        sub = (sub - 1) & mask
    raise AssertionError(f"{target} is not reachable from subset {mask:b} of {numbers}")  # pragma: no cover


def generate_problem(rng, config: CountdownConfig) -> CountdownProblem:
    """Draw numbers, then a target uniformly among those they reach in range, and a proof (the solution).

    Up to 5 numbers the solver enumerates every reachable value (subset dynamic programming) and reads the
    solution back from the table. With 6 numbers the table is large while most targets are reachable, so
    targets are drawn and proven one at a time by the search in :func:`solve` (rejection sampling gives the
    same uniform distribution).
    """
    c = config
    spread = c.max_numbers - c.min_numbers + 1
    for _ in range(MAX_DRAWS):
        # one numpy call per draw: [count, numbers..., target pick]
        u = rng.random(c.max_numbers + 2).tolist()
        count = c.min_numbers + int(u[0] * spread)
        numbers = [1 + int(x * c.max_number) for x in u[1 : count + 1]]
        if count > 5:
            for target in rng.integers(c.min_target, c.max_target + 1, size=TARGETS_PER_DRAW).tolist():
                solution = solve(numbers, target)
                if solution is not None:
                    return CountdownProblem(tuple(numbers), target, solution)
            continue
        values = _subset_values(numbers, c.min_target, c.max_target)
        if values[-1]:
            targets = sorted(values[-1])
            target = targets[int(u[-1] * len(targets))]
            solution = _render(_witness(values, numbers, len(values) - 1, target))
            return CountdownProblem(tuple(numbers), target, solution)
    raise RuntimeError(f"no solvable Countdown problem in {MAX_DRAWS} draws for {config}")  # pragma: no cover


def score_answer(answer: str, numbers: tuple[int, ...], target: int) -> tuple[float, bool, str]:
    """(reward, well_formed, feedback) for one answer; never raises."""
    try:
        value, used = evaluate(answer)
    except ExpressionError as error:
        return 0.0, False, f"Your answer is not a valid expression: {error}."
    if sorted(used) != sorted(numbers):
        return 0.0, False, f"Your expression must use each of the numbers {list(numbers)} exactly once."
    if value == target:
        return CORRECT_REWARD, True, ""
    return WELL_FORMED_REWARD, True, f"Your expression equals {value}, not {target}."


class CountdownEnv(TextEnv):  # noqa: D101 (its docstring is the module's, through __doc__ = __doc__)
    __doc__ = __doc__
    action_separator = None
    example_answer = "(25 - 7) * 3 - 8"
    action_tools = (
        ActionTool("answer", "Submit your expression.", "expression", "An arithmetic expression over the numbers."),
    )
    config_cls = CountdownConfig
    base_defaults = {"max_turns": 1}

    def _setup(self) -> None:
        self.problem = CountdownProblem((), 0, "")
        self.last_well_formed = False

    def _generate(self) -> None:
        self.problem = generate_problem(self.np_random, self.config)
        self.last_well_formed = False

    def _instructions(self) -> str:
        retry = " If your answer is wrong you will be told why and may try again." if self.max_turns > 1 else ""
        return (
            "You are playing Countdown. Write an arithmetic expression that equals the target number, using each "
            "of the given numbers exactly once and only + - * / and parentheses. "
            "Reward: 1 for a correct expression, 0.1 for a valid expression with the right numbers but the wrong "
            f"value, 0 otherwise.{retry}"
        )

    def _observe(self) -> str:
        p = self.problem
        nums = ", ".join(map(str, p.numbers))
        return f"Target: {p.target}, nums: [{nums}]. Using each number exactly once, write an expression equal to {p.target}."

    def _parse_action(self, text: str) -> str | None:
        return text  # any answer is judged (0 when it is not an expression), as RAGEN does

    def _apply(self, action: str) -> ActionResult:
        p = self.problem
        reward, self.last_well_formed, feedback = score_answer(action, p.numbers, p.target)
        if reward == CORRECT_REWARD:
            return ActionResult(reward=reward, effective=True, terminated=True, success=True, message="Correct!")
        last = self.turn >= self.max_turns
        message = feedback if last else f"{feedback} Try again."
        return ActionResult(reward=reward if last else 0.0, effective=True, terminated=last, message=message)

    def _step_info(self) -> dict[str, Any]:
        # read once per step: a turn that was not judged (format error) reports False, not the previous answer
        well_formed, self.last_well_formed = self.last_well_formed, False
        return {"answer_is_well_formed": well_formed}

    def _reset_info(self) -> dict[str, Any]:
        p = self.problem
        return {"target": p.target, "numbers": list(p.numbers), "solution": p.solution}

    def candidate_actions(self) -> tuple[str, ...]:
        """The solution and five other expressions over the given numbers."""
        nums = [str(n) for n in self.problem.numbers]
        if not nums:
            return ()
        rev = nums[::-1]
        return (
            self.problem.solution,
            " + ".join(nums),
            " * ".join(nums),
            " - ".join(rev),
            f"({nums[0]} + {nums[1]}) * " + " / ".join(nums[2:]) if len(nums) > 2 else f"{nums[0]} / {nums[1]}",
            f"{nums[0]} * {nums[1]} - " + " - ".join(nums[2:]) if len(nums) > 2 else f"{nums[0]} - {nums[1]}",
        )

    def oracle(self) -> tuple[str, str]:
        """The stored solution and a line checking that it reaches the target."""
        p = self.problem
        return f"I need {p.target} from {list(p.numbers)}. {p.solution} = {p.target}.", p.solution
