"""Sokoban: push every box onto a target (RAGEN's CoordSokoban, with solver-proven levels).

## Description
A room of walls and floor holds ``num_boxes`` boxes and as many targets. The player moves one cell per
action and pushes a box by walking into it, if the cell behind the box is free; boxes cannot be pulled, and
only one box moves at a time. The episode is won when every box is on a target.

Levels come from reverse play from the solved state (``ragen_envs.sokoban.generate``). Every level is proven
solvable; where exact search is affordable (every 6×6/1 and 8×8/2 level) it carries its **move-optimal**
solution length, otherwise a verified solution and a proven lower bound. ``difficulty`` is the minimum
optimal number of moves; the solution always fits in the episode's budget of
``max_turns × max_actions_per_turn`` moves.

## Action Space
A response whose answer lists up to ``max_actions_per_turn`` moves separated by ``||``, each one of
``Up``, ``Down``, ``Left``, ``Right`` (case-insensitive), e.g. ``<think>…</think><answer>Left || Up</answer>``.
Extra moves are dropped (as in RAGEN). Moving into a wall, or pushing a box into a wall or another box,
is a valid action that changes nothing (``action_is_effective`` is False).

## Observation Space
RAGEN's ``grid_coord`` text: the board size, the coordinates of targets, boxes and player as zero-indexed
``(row, col)`` pairs, then the grid: ``#`` wall, ``_`` floor, ``O`` target, ``X`` box, ``√`` box on
target, ``P`` player, ``S`` player on target.

## Rewards
As gym-sokoban and RAGEN: −0.1 per action, +1 when a box is pushed onto a target, −1 when one is pushed off
a target, +10 when the last box reaches its target. A turn whose response does not parse costs
``format_penalty`` (−0.1).

## Episode End
Terminated (``success`` True) when all boxes are on targets; truncated after ``max_turns`` turns.

## Arguments
``reset(options={"level": grid_text})`` plays a given level (drawn in the grid symbols) instead.

Reset info: ``optimal_moves`` (None where not computed), ``solution_moves`` (length of the verified
solution the oracle follows), ``lower_bound_moves``, ``difficulty_met`` (False only for a fallback level).

## Oracle
``oracle_response()`` describes the board (player, boxes off target, free targets) and answers the next
``max_actions_per_turn`` moves of a move-optimal plan: the level's own where it is exact, otherwise one A*
search (≤ ``ORACLE_MAX_NODES``) replaces the verified plan, and it re-plans whenever the agent left the plan.

## Version History
- v0: initial release.
"""

from __future__ import annotations

from typing import Any

from ragen_envs.core import ActionResult, TextEnv, TurnConfig
from ragen_envs.parsing import normalize_action
from ragen_envs.sokoban.board import (
    ACTIONS,
    BOX_OFF_TARGET_REWARD,
    BOX_ON_TARGET_REWARD,
    SOLVED_REWARD,
    STEP_REWARD,
    Level,
    offsets,
)
from ragen_envs.sokoban.config import SokobanConfig
from ragen_envs.sokoban.generate import generate_level, level_from_text
from ragen_envs.sokoban.render import (
    BOX,
    BOX_ON_TARGET,
    FLOOR,
    PLAYER,
    PLAYER_ON_TARGET,
    SYMBOL_MEANINGS,
    TARGET,
    coordinate,
    grid_chars,
    observation_header,
    observation_text,
)
from ragen_envs.sokoban.solver import solve
from ragen_envs.tools import ActionTool

ORACLE_MAX_NODES = 100_000
# ActionResult is frozen, so the two commonest outcomes are shared instead of rebuilt on every move.
_BLOCKED = ActionResult(reward=STEP_REWARD, effective=False)
_MOVED = ActionResult(reward=STEP_REWARD, effective=True)
_ACTION_INDEX = {name.casefold(): i for i, name in enumerate(ACTIONS)}
_ACTION_INDEX_EXACT = {name: i for i, name in enumerate(ACTIONS)}
_FORGIVEN = ".!\"'`*"  # punctuation around an action ("**Left**", "Up!") that still names it


class SokobanEnv(TextEnv):  # noqa: D101 (its docstring is the module's, through __doc__ = __doc__)
    __doc__ = __doc__
    example_answer = "Right || Up"
    action_tools = (
        ActionTool("move", "Move the player one cell, pushing a box ahead of it.", "direction", "Where to move.", choices=ACTIONS),
    )  # fmt: skip
    config_cls = SokobanConfig
    base_defaults = {"max_turns": 5, "max_actions_per_turn": 2}

    def _derived_config(self, turns: TurnConfig) -> dict[str, Any]:
        return {"max_moves": turns.max_turns * turns.max_actions_per_turn}

    def _setup(self) -> None:
        self.level: Level | None = None

    # ---- state ----------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode; ``options={"level": grid_text}`` plays that level instead of a generated one."""
        self._custom_level = level_from_text(options["level"]) if options and "level" in options else None
        return super().reset(seed=seed, options=options)

    def _generate(self) -> None:
        level = self._custom_level or generate_level(self.np_random, self.config)
        self.level = level
        self._steps = offsets(level.cols)
        self._targets = frozenset(level.targets)
        self._header = observation_header(level.rows, level.cols, level.targets)
        self._coords = [coordinate(i, level.cols) for i in range(level.rows * level.cols)]
        self.player = level.player
        self.boxes = set(level.boxes)
        self._off_target = sum(b not in self._targets for b in self.boxes)
        self._chars = grid_chars(level.rows, level.cols, level.walls, self._targets, self.boxes, self.player)
        self._plan = level.solution
        self._plan_pos = 0
        self._on_plan = True
        self._plan_optimal = level.optimal
        self._optimal_tried = False
        self._observation = ""  # cached text of the current state; "" after any change

    def _reset_info(self) -> dict[str, Any]:
        level = self.level
        return {
            "optimal_moves": level.optimal_moves,
            "solution_moves": level.solution_moves,
            "lower_bound_moves": level.lower_bound,
            "difficulty_met": not level.fallback,
        }

    def _step_info(self) -> dict[str, Any]:
        return {"boxes_on_target": len(self.boxes) - self._off_target}

    # ---- rules --------------------------------------------------------------------------------------------
    def _parse_action(self, text: str) -> int | None:
        exact = _ACTION_INDEX_EXACT.get(text)  # the common case, without normalizing
        return exact if exact is not None else _ACTION_INDEX.get(normalize_action(text, _FORGIVEN))

    def _apply(self, action: int) -> ActionResult:
        if self._on_plan:
            if self._plan_pos < len(self._plan) and self._plan[self._plan_pos] == action:
                self._plan_pos += 1
            else:
                self._on_plan = False
        walls = self.level.walls
        step = self._steps[action]
        start = self.player
        ahead = start + step
        if walls[ahead]:
            return _BLOCKED
        reward = STEP_REWARD
        boxes = self.boxes
        beyond = -1
        if ahead in boxes:
            beyond = ahead + step
            if walls[beyond] or beyond in boxes:
                return _BLOCKED
            boxes.discard(ahead)
            boxes.add(beyond)
            if ahead in self._targets:
                reward += BOX_OFF_TARGET_REWARD
                self._off_target += 1
            if beyond in self._targets:
                reward += BOX_ON_TARGET_REWARD
                self._off_target -= 1
        self.player = ahead
        self._observation = ""
        # Redraw only the (at most three) cells that changed; char index = cell + its row (the newlines).
        targets, chars, cols = self._targets, self._chars, self.level.cols
        chars[start + start // cols] = TARGET if start in targets else FLOOR
        chars[ahead + ahead // cols] = PLAYER_ON_TARGET if ahead in targets else PLAYER
        if beyond >= 0:
            chars[beyond + beyond // cols] = BOX_ON_TARGET if beyond in targets else BOX
        if self._off_target == 0:
            return ActionResult(reward=reward + SOLVED_REWARD, effective=True, terminated=True, success=True)
        return _MOVED if beyond < 0 else ActionResult(reward=reward, effective=True)

    # ---- text ---------------------------------------------------------------------------------------------
    def _observe(self) -> str:
        if not self._observation:  # a blocked move or an invalid turn reuses the previous text
            coords = self._coords
            box_coords = [coords[b] for b in sorted(self.boxes)]
            self._observation = observation_text(self._header, box_coords, coords[self.player], "".join(self._chars))
        return self._observation

    def _instructions(self) -> str:
        level = self.level
        rows, cols = (level.rows, level.cols) if level else (self.config.rows, self.config.cols)
        symbols = "\n".join(f"{glyph} : {meaning}" for glyph, meaning in SYMBOL_MEANINGS)
        separated = "" if self.response_format == "tool" else ", separated by ' || '"  # tool calls: one each
        return (
            "You are solving a Sokoban puzzle. You are the player; push every box onto a target.\n"
            "Each action moves you one cell Up, Down, Left or Right. Walking into a box pushes it one cell in the "
            "same direction, but only if the cell behind it is empty floor or a target: you cannot push two boxes "
            "at once, push a box into a wall, or pull a box. A box pushed into a corner can never be recovered.\n"
            f"Coordinates are zero-indexed (row, col) pairs on a {rows}x{cols} board: (0, 0) is the top-left corner, "
            f"the row grows downward (Down adds 1 to row) and the column rightward (Right adds 1 to col).\n"
            f"The meaning of each symbol in the grid:\n{symbols}\n"
            "Rewards: -0.1 per action, +1 for pushing a box onto a target, -1 for pushing one off, +10 when all "
            "boxes are on targets.\n"
            f"Your available actions are: {', '.join(ACTIONS)}.\n"
            f"You may give up to {self.max_actions_per_turn} actions per turn{separated} (extra ones "
            f"are ignored), and you have {self.max_turns} turns, so at most "
            f"{self.max_turns * self.max_actions_per_turn} actions in all."
        )

    def candidate_actions(self) -> tuple[str, ...]:
        """The four pushes."""
        return ACTIONS

    def prompt_features(self) -> dict[str, object]:
        """Where the player, the boxes and the targets are (the coordinates a reasoning names)."""
        return {"player": self.player, "boxes": tuple(sorted(self.boxes)), "targets": tuple(self.level.targets)}

    # ---- oracle -------------------------------------------------------------------------------------------
    def oracle(self) -> tuple[str, str]:
        """The next moves of an optimal (or at least verified) solution from here, re-planned when the player left the plan."""
        level = self.level
        cols = level.cols
        # Re-plan when the agent left the plan, and once to replace a verified (non-optimal) plan by an
        # optimal one where the search fits in ORACLE_MAX_NODES (it usually does up to 10×10/3 boxes).
        if not self._on_plan or not (self._plan_optimal or self._optimal_tried):
            self._optimal_tried = True
            result = solve(
                level.walls, cols, level.targets, self.player, tuple(sorted(self.boxes)), max_nodes=ORACLE_MAX_NODES
            )
            if result.solved:
                self._plan, self._plan_pos, self._on_plan = result.moves, 0, True
                self._plan_optimal = True
            elif not self._on_plan:
                why = "no sequence of moves can solve it" if result.status == "unsolvable" else "no solution found"
                return f"The boxes are stuck: {why}. I try a move anyway.", ACTIONS[0]
        remaining = self._plan[self._plan_pos :]
        if not remaining:
            return "Every box is already on a target.", ACTIONS[0]
        off = [coordinate(b, cols) for b in sorted(self.boxes) if b not in self._targets]
        free_targets = [coordinate(t, cols) for t in level.targets if t not in self.boxes]
        kind = "An optimal" if self._plan_optimal else "A verified"
        moves = ", ".join(ACTIONS[d] for d in remaining)
        nxt = [ACTIONS[d] for d in remaining[: self.max_actions_per_turn]]
        thinking = (
            f"I am at {coordinate(self.player, cols)}. Boxes off target: {', '.join(off)}; "
            f"free targets: {', '.join(free_targets)}. {kind} solution from here takes {len(remaining)} "
            f"moves: {moves}. Next: {', '.join(nxt)}."
        )
        return thinking, " || ".join(nxt)
