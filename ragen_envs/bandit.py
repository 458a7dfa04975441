"""Two-armed bandit whose arm names carry the hint (RAGEN's BiArmBandit, one pull per episode).

## Description
Two arms are shown by name. One is *safe*: it always pays ``safe_reward`` (0.1). The other is *risky*: it pays
``risky_reward`` (1.0) with probability ``risky_prob`` (0.25) and 0 otherwise, so its expected value (0.25) is
higher. Which name belongs to which arm is drawn per seed from two lists: cautious names (``Librarian``,
``Turtle``…) for the safe arm and bold names (``Dragon``, ``Gambler``…) for the risky one, and their order on
screen is shuffled. The payout rules are in the instructions; the names are in the observation. A policy that
always answers the same word cannot win across inputs: it has to read the names (input dependence is the
whole point for the MI diagnostics).

## Action Space
A response whose answer is one arm name (case-insensitive), e.g. ``<think>…</think><answer>Dragon</answer>``.

## Observation Space
``"Arms: <name A> and <name B>. Which arm do you pull?"``

## Rewards
The pulled arm's payout, sampled from ``self.np_random`` (so deterministic per seed). An unparseable response
or an unknown name costs ``format_penalty`` and uses the turn.

## Episode End
Terminated after the first valid pull. A response that names no arm costs the penalty and the turn, and the
model may try again: truncated after ``max_turns`` (5, RAGEN's agent turn limit; RAGEN likewise ends a
bandit episode at its first *valid* action) turns without a valid pull.
``success`` is True when the arm with the higher expected payout (the risky one by default) was pulled.

## Version History
- v0: initial release.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragen_envs.arguments import EnvConfig, argument
from ragen_envs.core import ActionResult, TextEnv
from ragen_envs.parsing import normalize_action
from ragen_envs.tools import ActionTool

_FORGIVEN = ".!\"'"  # punctuation around an arm's name that still names it

CAUTIOUS_NAMES = (
    "Librarian", "Turtle", "Accountant", "Lighthouse", "Anchor", "Oak", "Teacher", "Bank Vault",
    "Gardener", "Monk", "Tortoise", "Shepherd", "Archivist", "Bedrock", "Harbor", "Notary",
)  # fmt: skip
BOLD_NAMES = (
    "Dragon", "Gambler", "Phoenix", "Volcano", "Pirate", "Tornado", "Daredevil", "Meteor",
    "Wildfire", "Stuntman", "Jackpot", "Lightning", "Berserker", "Avalanche", "Raider", "Comet",
)  # fmt: skip


@dataclass(frozen=True)
class BanditConfig(EnvConfig):
    """Payouts of the two arms."""

    safe_reward: float = argument(0.1, "What the safe arm always pays.", number=True)
    risky_reward: float = argument(1.0, "What the risky arm pays when it pays.", number=True)
    risky_prob: float = argument(0.25, "Probability that the risky arm pays.", low=0.0, high=1.0)

    @property
    def best_arm(self) -> str:
        """``"risky"`` when its expected payout is at least the safe one's, else ``"safe"``."""
        return "risky" if self.risky_reward * self.risky_prob >= self.safe_reward else "safe"


def draw_arms(rng) -> tuple[str, str, tuple[str, str]]:
    """Pick (safe name, risky name, on-screen order) from the seeded generator."""
    safe = CAUTIOUS_NAMES[int(rng.integers(len(CAUTIOUS_NAMES)))]
    risky = BOLD_NAMES[int(rng.integers(len(BOLD_NAMES)))]
    order = (safe, risky) if rng.random() < 0.5 else (risky, safe)
    return safe, risky, order


class BanditEnv(TextEnv):  # noqa: D101 (its docstring is the module's, through __doc__ = __doc__)
    __doc__ = __doc__
    action_separator = None
    example_answer = "Turtle"
    action_tools = (ActionTool("pull", "Pull one arm (once per episode).", "arm", "The arm's name, as shown."),)
    config_cls = BanditConfig
    base_defaults = {"max_turns": 5}

    def _setup(self) -> None:
        self.safe_name = self.risky_name = ""
        self.order: tuple[str, str] = ("", "")

    def _generate(self) -> None:
        self.safe_name, self.risky_name, self.order = draw_arms(self.np_random)

    def _instructions(self) -> str:
        c = self.config
        return (
            "You are playing a two-armed bandit. You pull one arm, once.\n"
            f"One arm is safe: it always pays {c.safe_reward}. The other is risky: it pays {c.risky_reward} with "
            f"probability {c.risky_prob} and 0 otherwise.\n"
            "The arms' names hint at their nature: a cautious name belongs to the safe arm, a bold name to the "
            "risky arm. Maximize your expected reward. Answer with the name of the arm you pull."
        )

    def _observe(self) -> str:
        return f"Arms: {self.order[0]} and {self.order[1]}. Which arm do you pull?"

    def _parse_action(self, text: str) -> str | None:
        wanted = normalize_action(text, _FORGIVEN)
        for name in self.order:
            if wanted == name.casefold():
                return name
        return None

    def _apply(self, action: str) -> ActionResult:
        c = self.config
        if action == self.safe_name:
            reward, arm = c.safe_reward, "safe"
        else:
            reward, arm = (c.risky_reward if self.np_random.random() < c.risky_prob else 0.0), "risky"
        return ActionResult(reward=reward, effective=True, terminated=True, success=arm == c.best_arm)

    def candidate_actions(self) -> tuple[str, ...]:
        """The two arm names, in the order shown."""
        return self.order

    def prompt_features(self) -> dict[str, str]:
        """The two arm names (the order on screen is not a feature a reasoning keys on)."""
        return {"safe": self.safe_name, "risky": self.risky_name}

    def oracle(self) -> tuple[str, str]:
        """The arm with the higher expected reward, with the comparison as reasoning."""
        best = self.risky_name if self.config.best_arm == "risky" else self.safe_name
        c = self.config
        return (
            f"{self.safe_name} sounds cautious, {self.risky_name} sounds bold. The risky arm is worth "
            f"{c.risky_reward}×{c.risky_prob} on average against {c.safe_reward} for the safe one, so I pull {best}.",
            best,
        )
