"""Guess a hidden number in a few tries, told "higher" or "lower" after each guess.

## Description
The env draws a whole number in ``[1, high]`` per seed and shows the same question on every seed: the number is
hidden state, so the first prompt carries no information about it (an example of an env whose input does not
identify the episode; the harness reports the MI family of its first turns as unavailable, with the reason).

## Action Space
A response whose answer is one whole number, e.g. ``<think>…</think><answer>7</answer>``.

## Observation Space
``"I am thinking of a whole number from 1 to 20. Guess it."``, then ``"Higher."`` or ``"Lower."`` before it.

## Rewards
1.0 for the right number; 0 for a wrong one; ``format_penalty`` for a response without a number.

## Episode End
Terminated at the right guess; truncated after ``max_turns`` (6) turns.

## Version History
- v0: initial release.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium

from ragen_envs.arguments import EnvConfig, argument
from ragen_envs.core import ActionResult, TextEnv


def register() -> None:
    """Register the env's ids with Gymnasium (the ``ragen_envs.envs`` entry point of this package)."""
    gymnasium.register(id="guess/Number-v0", entry_point="guess_env:GuessNumberEnv")


def feedback(guess: int, secret: int) -> ActionResult:
    """The outcome of one guess."""
    if guess == secret:
        return ActionResult(reward=1.0, effective=True, terminated=True, success=True, message="Right!")
    return ActionResult(reward=0.0, effective=True, message="Higher." if guess < secret else "Lower.")


@dataclass(frozen=True)
class GuessConfig(EnvConfig):
    """The env's arguments: each declared once, with its default, allowed range and what it sets."""

    high: int = argument(20, "The largest number the env may think of.", low=2, integer=True)


class GuessNumberEnv(TextEnv):  # noqa: D101 (its docstring is the module's)
    __doc__ = __doc__
    action_separator = None
    example_answer = "10"

    config_cls = GuessConfig
    base_defaults = {"max_turns": 6}  # the arguments every env takes keep theirs unless set here

    def _setup(self) -> None:
        self.secret = 0
        self.low_bound, self.high_bound = 1, self.high

    @property
    def high(self) -> int:
        """The largest number the env may think of."""
        return self.config.high

    def _generate(self) -> None:
        self.secret = int(self.np_random.integers(1, self.high + 1))
        self.low_bound, self.high_bound = 1, self.high

    def _instructions(self) -> str:
        return f"Guess the hidden whole number from 1 to {self.high}. After each wrong guess you hear Higher or Lower."

    def _observe(self) -> str:
        return f"I am thinking of a whole number from 1 to {self.high}. Guess it."

    def _parse_action(self, text: str) -> int | None:
        text = text.strip()
        return int(text) if text.isdigit() and len(text) <= 6 and 1 <= int(text) <= self.high else None

    def _apply(self, action: int) -> ActionResult:
        if action < self.secret:
            self.low_bound = max(self.low_bound, action + 1)
        elif action > self.secret:
            self.high_bound = min(self.high_bound, action - 1)
        return feedback(action, self.secret)

    def candidate_actions(self) -> tuple[str, ...]:
        """Every number still possible."""
        return tuple(str(n) for n in range(self.low_bound, self.high_bound + 1))

    def oracle(self) -> tuple[str, str]:
        """The hidden number itself (the oracle reads the state; a player would bisect)."""
        return f"The number is {self.secret}.", str(self.secret)
