"""Procedurally generated multi-step word problems in the spirit of GSM8K.

## Description
Each episode draws one of 26 problem families (money, wages, prices and percentages, fractions of an
amount, savings, profit, interest, bills and tips, fuel, ages, comparisons, trips, conversion funnels,
ratios, time-unit conversion, recipe scaling, mixtures, schedules, working together, meeting trains,
fencing, averages, packing, growth and decay, painting, reading plans) and builds a problem with exactly
``steps`` arithmetic operations (the difficulty: 2 to 8). Names, objects, wording and quantities all come
from the seed; the answer is an exact rational computed from the very values that wrote the text, and the
worked solution (one line per operation) is the oracle's reasoning and ``info["solution"]``.

## Action Space
A response whose answer is the final number, e.g. ``<think>…</think><answer>157</answer>``. Extraction
is tolerant (``1,250``, ``$1250.00``, ``12.5%``, ``3/4``, ``\\boxed{…}``, a unit after the number) and the
comparison strict: the values must be equal exactly (``0.5`` = ``1/2``; ``12`` ≠ ``12.5``); see
:mod:`ragen_envs.math.answers`.

## Observation Space
The problem text, e.g. ``"Farah has $300. Farah buys 4 sandwiches at $8 each. How many dollars does Farah
have left?"``; after a wrong answer with retries left, ``"Incorrect, try again."`` above it.

## Rewards
``1 / 2**attempt`` for a correct answer (1 on the first judged answer, 0.5 on the second, …), 0 for a wrong
one; a response without the answer format costs ``format_penalty`` (-0.1) and a turn.

## Episode End
Terminated on a correct answer (success) or on a wrong answer at the last turn (judged failure). Truncated
after ``max_turns`` turns of format errors. ``max_turns`` is 1 by default, as RAGEN's MetaMathQA.

## Version History
- v0: initial release.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ragen_envs.arguments import EnvConfig, argument
from ragen_envs.math.answer_env import SingleAnswerEnv
from ragen_envs.math.answers import format_number
from ragen_envs.math.word_counts import FAMILIES as COUNT_FAMILIES
from ragen_envs.math.word_kit import Draw, Work
from ragen_envs.math.word_money import FAMILIES as MONEY_FAMILIES
from ragen_envs.math.word_rates import FAMILIES as RATE_FAMILIES

FAMILIES = {**MONEY_FAMILIES, **COUNT_FAMILIES, **RATE_FAMILIES}
FAMILY_NAMES = tuple(FAMILIES)
MIN_STEPS, MAX_STEPS = 2, 8


@dataclass(frozen=True)
class WordProblem:
    """One generated word problem: its family, step count, text, exact answer and the worked solution."""

    family: str
    steps: int
    text: str
    answer: Fraction
    work: Work

    @property
    def solution(self) -> tuple[str, ...]:
        """One line per operation, e.g. ``"4 × 8 = 32"``; the last line's result is the answer."""
        return tuple(self.work.lines)


@dataclass(frozen=True)
class MathWordConfig(EnvConfig):
    """Which problems to draw."""

    steps: int | None = argument(
        None,
        "Arithmetic operations per problem (``None``: drawn per episode).",
        low=MIN_STEPS,
        high=MAX_STEPS,
        integer=True,
    )
    families: tuple[str, ...] = argument(
        FAMILY_NAMES,
        "Problem families to draw from (``FAMILY_NAMES``).",
        allowed="a non-empty tuple of family names",
        shown_default="all",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.families, list):  # as JSON (``--env-kwargs``) gives it
            object.__setattr__(self, "families", tuple(self.families))
        if isinstance(self.families, str) or not self.families:
            raise ValueError(f"families must be a non-empty tuple of family names, got {self.families!r}")
        for name in self.families:
            if name not in FAMILIES:
                close = difflib.get_close_matches(str(name), FAMILY_NAMES, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise ValueError(f"families: unknown family {name!r}.{hint} Available: {', '.join(FAMILY_NAMES)}")


def generate_problem(rng, steps: int | None = None, families: tuple[str, ...] = FAMILY_NAMES) -> WordProblem:
    """One word problem drawn from ``rng`` (a numpy Generator); ``steps`` None draws it from 2..8."""
    draw = Draw(rng)
    family = draw.pick(families)
    if steps is None:
        steps = draw.int(MIN_STEPS, MAX_STEPS)
    work = Work()
    text, answer = FAMILIES[family](draw, work, steps)
    return WordProblem(family, steps, text, Fraction(answer), work)


class MathWordEnv(SingleAnswerEnv):  # noqa: D101 (its docstring is the module's, through __doc__ = __doc__)
    __doc__ = __doc__

    config_cls = MathWordConfig

    def _setup(self) -> None:
        super()._setup()
        self.problem: WordProblem | None = None

    def _generate(self) -> None:
        self.problem = generate_problem(self.np_random, self.config.steps, self.config.families)
        self.question = self.problem.text
        self.reference_value = self.problem.answer
        self.reference = format_number(self.problem.answer)
        self.worked_solution = ""  # written on demand by oracle()
        self.attempts = 0

    def _task_instructions(self) -> str:
        return "You are solving a math word problem. Work it out step by step, then give the final answer."

    def _reset_info(self) -> dict[str, Any]:
        p = self.problem
        return {"answer": self.reference, "family": p.family, "steps": p.steps, "solution": list(p.solution)}

    def oracle(self) -> tuple[str, str]:
        """The problem's solution steps as reasoning (written once per episode) and the reference answer."""
        if not self.worked_solution and self.problem is not None:
            self.worked_solution = " ".join(f"{line}." for line in self.problem.solution)
        return super().oracle()
