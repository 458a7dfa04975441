"""The single-answer env that MathWord and MathQA share: one question, one answer per turn, retries.

A subclass's ``_generate`` sets ``question``, ``reference`` (the answer as text), ``reference_value`` (its
exact value, or ``None`` when it is not a number) and ``worked_solution`` (the oracle's reasoning).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ragen_envs.core import ActionResult, TextEnv
from ragen_envs.math.answers import answers_match, format_number
from ragen_envs.tools import ActionTool

INCORRECT_RETRY = "Incorrect, try again."
INCORRECT_FINAL = "Incorrect."


class SingleAnswerEnv(TextEnv):
    """Reward ``1 / 2**attempt`` for a correct answer (attempt 0 is the first judged answer), 0 for a wrong one.

    A wrong answer on the last turn ends the episode as a judged failure (terminated); on earlier turns it
    earns "Incorrect, try again." Responses without the answer format cost the format penalty and a turn but
    are not attempts.
    """

    action_separator = None
    example_answer = "42"
    action_tools = (
        ActionTool("answer", "Submit your final answer.", "answer", "The final answer only.", accepts_numbers=True),
    )
    answer_hint = "a number (an integer, a decimal or a fraction such as 3/4)"

    base_defaults = {"max_turns": 1}

    def _setup(self) -> None:
        self.question = ""
        self.reference = ""
        self.reference_value: Fraction | None = None
        self.worked_solution = ""
        self.attempts = 0

    def _task_instructions(self) -> str:
        raise NotImplementedError

    def _instructions(self) -> str:
        retry = (
            f" A wrong answer is answered with '{INCORRECT_RETRY}' and you may answer again, up to "
            f"{self.max_turns} turns; a correct answer on attempt k (from 0) earns 1/2^k."
            if self.max_turns > 1
            else ""
        )
        return (
            f"{self._task_instructions()} Your answer must be the final answer only: {self.answer_hint}, without "
            f"working.{retry}"
        )

    def _observe(self) -> str:
        return self.question

    def _parse_action(self, text: str) -> str | None:
        return text  # every answer is judged; one that states no number is simply wrong

    def _apply(self, answer: str) -> ActionResult:
        attempt = self.attempts
        self.attempts += 1
        if answers_match(answer, self.reference, self.reference_value):
            return ActionResult(
                reward=1.0 / 2**attempt, effective=True, terminated=True, success=True, message="Correct!"
            )
        last = self.turn >= self.max_turns
        return ActionResult(
            reward=0.0, effective=True, terminated=last, message=INCORRECT_FINAL if last else INCORRECT_RETRY
        )

    def _step_info(self) -> dict[str, Any]:
        return {"attempts": self.attempts}

    def candidate_actions(self) -> tuple[str, ...]:
        """The reference answer and a few others near it (fixed guesses when the answer is not a number)."""
        value = self.reference_value
        if value is None:
            return (self.reference, "0", "1", "42")
        if value.denominator == 1:  # the common case, without Fraction arithmetic
            value = value.numerator
        return tuple(dict.fromkeys(format_number(v) for v in (value, value + 1, value * 2, -value, 0)))

    def oracle(self) -> tuple[str, str]:
        """The worked solution and the reference answer."""
        answer = self.reference if self.reference_value is None else format_number(self.reference_value)
        return self.worked_solution, answer
