"""FrozenLake on random maps with a guaranteed path (RAGEN's CoordFrozenLake, as a text env).

## Description
Walk from the start to the goal across a square lake without falling into a hole. Every episode draws a new
map from ``self.np_random`` as RAGEN does: each cell is frozen with probability ``frozen_prob`` (0.9) and a
hole otherwise, then a start and a *different* goal cell are drawn uniformly. A map is kept only when a
breadth-first search from the goal proves the start can reach it within the episode's action budget
(``max_turns × max_actions_per_turn``); otherwise it is drawn again, at most 64 times. If no draw passes
(only likely with a very low ``frozen_prob``), the last draw is repaired deterministically: the holes on an
L-shaped path from the start towards the goal are filled in (and the goal is moved onto that path when it
lies beyond the budget), so generation never fails and never loops without bound. ``reset`` returns the
shortest path length in ``info["shortest_path_length"]``.

## Action Space
``Left``, ``Down``, ``Right``, ``Up`` (case-insensitive; RAGEN's actions 1–4), ``||``-separated, up to
``max_actions_per_turn`` (2) per response, e.g. ``<think>…</think><answer>Down || Right</answer>``.
Walking into the edge of the board leaves the player in place (valid, but not effective).

## Observation Space
RAGEN's ``grid_coord`` text: a coordinate listing, then the grid::

    Coordinates:
    Board size: 4 rows x 4 cols (zero-indexed).
    Start: (0, 1)
    Goal: (3, 2)
    Player: (0, 1)
    Holes: (1, 1), (2, 3)
    Grid Map:
    _P__
    _O__
    ___O
    __G_

Symbols: ``P`` player, ``_`` frozen ice (the start cell too), ``O`` hole, ``G`` goal, ``X`` player in a hole,
``√`` player on the goal. The player line reads ``Player in hole:`` / ``Player on goal:`` at the end.

## Rewards
1 for reaching the goal, 0 otherwise (also 0 for falling into a hole). A response that does not parse, or
that names an unknown action, costs ``format_penalty`` (-0.1) for the turn (the valid actions of the
response are still played, as in RAGEN).

## Episode End
Terminated when the player reaches the goal (``success``) or falls into a hole; actions after that in the
same response are ignored. Truncated after ``max_turns`` (5) turns. With 2 actions per turn that is RAGEN's
budget of 10 actions per episode.

## Slip
``slip`` is the probability that a move goes sideways: with probability ``1 - slip`` the player moves as
intended, otherwise to one of the two perpendicular directions (``slip / 2`` each), drawn from
``self.np_random``. RAGEN's ``success_rate`` is ``1 - slip``. The default is **0 (deterministic)**, the
setting of RAGEN-2's main results table (success_rate 1.0); RAGEN's stochasticity sweep uses 0–1 and its
tag default is 0.2. ``info["moves"]`` lists the directions actually taken in the turn.

## Oracle
With ``slip == 0`` the oracle walks a shortest safe path (read off the BFS layers), so it always succeeds with
the default arguments: every map's shortest path fits the action budget. With ``slip > 0`` no policy can
always succeed; the oracle then plays the response that maximises the probability of reaching the goal in
the turns left, found by finite-horizon value iteration over every sequence of 1..``max_actions_per_turn``
moves (at most 3; a response is committed before the slips are seen).

## Caches
Moves do not depend on the map, so the move table (``move_table``) is built once per board size. Per map
(i.e. per episode) the env caches the text frame (rows, coordinate lines) and every observation it has
rendered by player cell, the full BFS layers once the oracle first asks, and with ``slip > 0`` the
value-iteration policy (from the move table and the map's absorbing cells) on the oracle's first call.

## Arguments
``ragen/FrozenLake-8x8-v0`` is ``size=8, frozen_prob=0.8, max_turns=10`` (20 actions: the longest shortest
path between two cells of an empty 8×8 board is 14).

## Version History
- v0: initial release.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cache
from typing import Any, NamedTuple

import numpy as np

from ragen_envs.arguments import EnvConfig, argument, derived
from ragen_envs.core import ActionResult, TextEnv, TurnConfig, check_range
from ragen_envs.parsing import normalize_action
from ragen_envs.tools import ActionTool

ACTIONS = ("Left", "Down", "Right", "Up")
"""Action names by index; RAGEN numbers them 1..4 in the same order (and so does Gymnasium, from 0)."""
_ACTION_INDEX = {name.casefold(): index for index, name in enumerate(ACTIONS)}
_FORGIVEN = " .!\"'`[]()"  # punctuation around an action ("[Left]", "Up .") that still names it
_DELTAS = ((0, -1), (1, 0), (0, 1), (-1, 0))
MAX_TRIES = 64
"""Map draws before the deterministic repair; at the default frozen_prob the first draw almost always passes."""


@dataclass(frozen=True)
class FrozenLakeConfig(EnvConfig):
    """The map generator's and the dynamics' settings."""

    size: int = argument(4, "Board side; the board is ``size × size``.", low=2, high=16, integer=True)
    frozen_prob: float = argument(
        0.9, "Probability that a cell is frozen (walkable) rather than a hole.", low=0.0, high=1.0
    )
    slip: float = argument(
        0.0, "Probability that a move goes to a perpendicular direction instead (0 = deterministic).", low=0.0, high=1.0
    )
    max_path_length: int = derived(
        10, "The action budget (``max_turns × max_actions_per_turn``): every map's shortest path is at most this long."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range("max_path_length", self.max_path_length, 1, integer=True)


class LakeMap(NamedTuple):
    """One generated map (immutable). Cells are numbered ``row * size + col``."""

    size: int
    start: int
    goal: int
    holes: int
    """Bitmask over cells: bit ``cell`` is set when the cell is a hole."""
    hole_cells: tuple[int, ...]
    shortest_path_length: int
    """Moves on a shortest safe path from the start to the goal (proven by BFS)."""


# ---- pure rules ---------------------------------------------------------------------------------------------
@cache
def move_table(size: int) -> tuple[int, ...]:
    """``table[cell * 4 + action]``: the cell a move leads to (the same cell at the edge). Map-independent."""
    table = []
    for cell in range(size * size):
        row, col = divmod(cell, size)
        for d_row, d_col in _DELTAS:
            r, c = row + d_row, col + d_col
            table.append(r * size + c if 0 <= r < size and 0 <= c < size else cell)
    return tuple(table)


@cache
def _shift_masks(size: int) -> tuple[int, int, int]:
    """(all cells, cells not in the first column, cells not in the last column) as bitmasks."""
    full = (1 << size * size) - 1
    first = sum(1 << (row * size) for row in range(size))
    last = first << (size - 1)
    return full, full & ~first, full & ~last


@cache
def _column_bands(size: int) -> tuple[int, ...]:
    """``bands[lo * size + hi]``: the bitmask of the cells in columns ``lo..hi``."""
    column = sum(1 << (row * size) for row in range(size))
    return tuple(sum(column << c for c in range(lo, hi + 1)) for lo in range(size) for hi in range(size))


def _rectangle(size: int, a: int, b: int) -> int:
    """The bitmask of the cells in the rectangle spanned by cells ``a`` and ``b``."""
    (r0, c0), (r1, c1) = divmod(a, size), divmod(b, size)
    if r0 > r1:
        r0, r1 = r1, r0
    if c0 > c1:
        c0, c1 = c1, c0
    rows = ((1 << (r1 + 1) * size) - 1) ^ ((1 << r0 * size) - 1)
    return rows & _column_bands(size)[c0 * size + c1]


def bfs_layers(size: int, holes: int, goal: int, stop: int = -1, limit: int = -1) -> tuple[int, ...]:
    """Breadth-first search from ``goal`` over non-hole cells, as bitmask layers by distance.

    ``layers[d]`` holds the cells whose shortest safe path to the goal has ``d`` moves. The search ends early
    once it reaches cell ``stop`` or after ``limit`` layers (when those are given).
    """
    full, not_first, not_last = _shift_masks(size)
    free = full & ~holes
    seen = frontier = 1 << goal
    target = 1 << stop if stop >= 0 else 0
    layers = [frontier]
    while not frontier & target and len(layers) != limit + 1:
        grown = ((frontier >> 1) & not_last) | ((frontier << 1) & not_first) | (frontier >> size) | (frontier << size)
        frontier = grown & free & ~seen
        if not frontier:
            break
        seen |= frontier
        layers.append(frontier)
    return tuple(layers)


def distance_to_goal(layers: tuple[int, ...], cell: int) -> int:
    """The index of the BFS layer holding ``cell``: its moves to the goal, or -1 when it cannot get there."""
    bit = 1 << cell
    for distance, layer in enumerate(layers):
        if layer & bit:
            return distance
    return -1


def _l_path(size: int, start: int, goal: int) -> list[int]:
    """Cells from ``start`` to ``goal``: along the start's row first, then along the goal's column."""
    (r0, c0), (r1, c1) = divmod(start, size), divmod(goal, size)
    step_c = 1 if c1 >= c0 else -1
    step_r = 1 if r1 >= r0 else -1
    cells = [r0 * size + c for c in range(c0, c1 + step_c, step_c)]
    cells += [r * size + c1 for r in range(r0 + step_r, r1 + step_r, step_r)]
    return cells


def generate_map(rng: np.random.Generator, config: FrozenLakeConfig) -> LakeMap:
    """Draw a map whose goal is reachable from the start within ``config.max_path_length`` moves.

    Bounded: at most ``MAX_TRIES`` draws, then a deterministic repair of the last one.
    """
    size, cells, budget = config.size, config.size * config.size, config.max_path_length
    hole_prob = 1.0 - config.frozen_prob
    start = goal = 0
    hole_cells: list[int] = []
    for _ in range(MAX_TRIES):
        draws = rng.random(cells + 2).tolist()  # one call per try: a coin per cell, then start and goal
        start = int(draws[cells] * cells)
        goal = int(draws[cells + 1] * (cells - 1))
        goal += goal >= start  # uniform over the other cells: start != goal without a retry
        hole_cells = [cell for cell in range(cells) if draws[cell] < hole_prob and cell != start and cell != goal]
        holes = 0
        for cell in hole_cells:
            holes |= 1 << cell
        if holes and holes & _rectangle(size, start, goal):
            distance = distance_to_goal(bfs_layers(size, holes, goal, stop=start, limit=budget), start)
        else:  # no hole between start and goal: a monotone path has the Manhattan length, no search needed
            distance = abs(start // size - goal // size) + abs(start % size - goal % size)
        if 0 <= distance <= budget:
            return LakeMap(size, start, goal, holes, tuple(hole_cells), distance)
    path = _l_path(size, start, goal)[: budget + 1]
    goal = path[-1]
    hole_cells = [cell for cell in hole_cells if cell not in path]
    holes = sum(1 << cell for cell in hole_cells)
    distance = distance_to_goal(bfs_layers(size, holes, goal, stop=start), start)
    return LakeMap(size, start, goal, holes, tuple(hole_cells), distance)


def shortest_actions(lake: LakeMap, layers: tuple[int, ...], cell: int, limit: int) -> list[int]:
    """Up to ``limit`` actions of a shortest safe path from ``cell``, given the map's full ``bfs_layers``."""
    table = move_table(lake.size)
    distance = distance_to_goal(layers, cell)
    actions: list[int] = []
    while distance > 0 and len(actions) < limit:
        closer = layers[distance - 1]
        for action in range(4):
            nxt = table[cell * 4 + action]
            if closer >> nxt & 1:
                actions.append(action)
                cell, distance = nxt, distance - 1
                break
    return actions


MAX_PLANNED_MOVES = 3
"""With slip > 0 the oracle commits to at most this many moves per turn (4 + 16 + 64 candidate sequences)."""


def success_policy(
    lake: LakeMap, slip: float, turns: int, per_turn: int
) -> tuple[tuple[tuple[tuple[int, ...], ...], ...], np.ndarray]:
    """Finite-horizon value iteration over committed move sequences.

    Returns ``(policy, value)``: ``policy[t][cell]`` is the sequence of 1..``min(per_turn, 3)`` actions that
    maximises the probability of reaching the goal when ``t + 1`` turns are left, and ``value[t, cell]`` is
    that probability. Holes and the goal are absorbing, so moves after the end of an episode change nothing.
    """
    cells = lake.size * lake.size
    nxt = np.array(move_table(lake.size)).reshape(cells, 4)  # (S, 4): the cell each direction leads to
    absorbing = np.array([bool(lake.holes >> cell & 1) or cell == lake.goal for cell in range(cells)])

    def expect(action: int, value: np.ndarray) -> np.ndarray:  # (S,): E[value after one slippery move]
        moved = (1.0 - slip) * value[nxt[:, action]] + (slip / 2) * (
            value[nxt[:, (action - 1) % 4]] + value[nxt[:, (action + 1) % 4]]
        )
        return np.where(absorbing, value, moved)

    length = min(per_turn, MAX_PLANNED_MOVES)
    sequences = [seq for n in range(1, length + 1) for seq in itertools.product(range(4), repeat=n)]
    value = np.zeros(cells)
    value[lake.goal] = 1.0
    policy, values = [], []
    for _ in range(turns):
        # value of a sequence = E over the first move of the value of the rest: built from the shortest suffix.
        after: dict[tuple[int, ...], np.ndarray] = {(): value}
        for seq in sorted(sequences, key=len):
            after[seq] = expect(seq[0], after[seq[1:]])
        # Rounded so that float noise cannot flip a tie between platforms; argmax takes the first best.
        q_values = np.round(np.stack([after[seq] for seq in sequences]), 12)  # (Q, S)
        best = q_values.argmax(axis=0)
        policy.append(tuple(sequences[int(q)] for q in best))
        value = q_values.max(axis=0)
        values.append(value)
    return tuple(policy), np.stack(values)


@cache
def cell_texts(size: int) -> tuple[str, ...]:
    """``"(row, col)"`` for every cell of a board, formatted once per size."""
    return tuple(f"({cell // size}, {cell % size})" for cell in range(size * size))


@cache
def _blank_grid(size: int) -> tuple[str, ...]:
    """An all-ice grid as characters, one ``"\n"`` after every row but the last: cell ``c`` is at ``c + c // size``."""
    row = ["_"] * size
    return tuple((row + ["\n"]) * (size - 1) + row)


def render_frame(lake: LakeMap) -> tuple[str, str, str]:
    """The parts of a map's text that do not depend on the player: (lines above the player line, lines
    between it and the grid, the grid without the player)."""
    size, names = lake.size, cell_texts(lake.size)
    head = (
        f"Coordinates:\nBoard size: {size} rows x {size} cols (zero-indexed).\n"
        f"Start: {names[lake.start]}\nGoal: {names[lake.goal]}\n"
    )
    grid = list(_blank_grid(size))
    for cell in lake.hole_cells:
        grid[cell + cell // size] = "O"
    grid[lake.goal + lake.goal // size] = "G"
    middle = "Holes: " + ", ".join(names[cell] for cell in lake.hole_cells) + "\n" if lake.hole_cells else ""
    return head, middle + "Grid Map:\n", "".join(grid)


# Precomputed, immutable results: _apply returns one of these instead of building a dataclass per move.
_BUMP = ActionResult(reward=0.0, effective=False)
_MOVE = ActionResult(reward=0.0, effective=True)
_HOLE = ActionResult(reward=0.0, effective=True, terminated=True, success=False)
_GOAL = ActionResult(reward=1.0, effective=True, terminated=True, success=True)


class FrozenLakeEnv(TextEnv):  # noqa: D101 (its docstring is the module's, through __doc__ = __doc__)
    __doc__ = __doc__
    example_answer = "Down || Right"
    action_tools = (ActionTool("move", "Move the player one cell.", "direction", "Where to move.", choices=ACTIONS),)
    argument_aliases = {"is_slippery": "slip", "success_rate": "slip", "p": "frozen_prob", "map_size": "size"}
    config_cls = FrozenLakeConfig
    base_defaults = {"max_turns": 5, "max_actions_per_turn": 2}

    def _derived_config(self, turns: TurnConfig) -> dict[str, Any]:
        return {"max_path_length": turns.max_turns * turns.max_actions_per_turn}

    def _setup(self) -> None:
        self._table = move_table(self.config.size)
        self._system_prompt: str | None = None
        self.lake: LakeMap | None = None
        self.player = 0
        self._moves: list[str] = []
        self._clear_caches()

    def _clear_caches(self) -> None:
        self._terminal = 0  # holes | goal, as a bitmask
        self._frame: tuple[str, str, str] | None = None
        self._observations: dict[int, str] = {}
        self._layers: tuple[int, ...] | None = None
        self._policy: tuple | None = None

    @property
    def instructions(self) -> str:
        # The rules depend on the config only, so the system prompt is built once per env, not per reset.
        """The system prompt (see :attr:`TextEnv.instructions`), built once per env: it depends on the config only."""
        if self._system_prompt is None:
            self._system_prompt = TextEnv.instructions.fget(self)
        return self._system_prompt

    # ---- hooks ------------------------------------------------------------------------------------------
    def _generate(self) -> None:
        self.lake = lake = generate_map(self.np_random, self.config)
        self.player = lake.start
        self._clear_caches()
        self._terminal = lake.holes | (1 << lake.goal)
        self._moves = []

    def _instructions(self) -> str:
        c, n = self.config, self.config.size
        slip_line = (
            f"The ice is slippery: a move goes the intended way with probability {1 - c.slip:g}, otherwise to "
            f"one of the two perpendicular directions.\n"
            if c.slip > 0
            else ""
        )
        return (
            "You are walking on a frozen lake. Reach the goal without falling into a hole.\n"
            f"The board has {n} rows and {n} columns, zero-indexed as (row, col) from (0, 0) at the top left to "
            f"({n - 1}, {n - 1}) at the bottom right; Down increases the row, Right increases the column.\n"
            "Symbols: P player, _ frozen ice, O hole, G goal, X player in a hole, √ player on the goal.\n"
            "Actions: Left, Down, Right, Up (one cell each; walking into the edge leaves you in place).\n"
            f"{slip_line}"
            "Reaching the goal pays 1. Falling into a hole ends the episode with 0.\n"
            f"You have {self.max_turns} turns and may play up to {self.max_actions_per_turn} actions per turn."
        )

    def _observe(self) -> str:
        player = self.player
        text = self._observations.get(player)
        if text is None:
            # Incremental render: the map's text is built once per episode; a position only changes the player
            # line and one character of the grid. Positions seen before come from the cache.
            if self._frame is None:
                self._frame = render_frame(self.lake)
            head, middle, grid = self._frame
            lake, size = self.lake, self.config.size
            if self._terminal >> player & 1:
                label, symbol = ("Player on goal: ", "√") if player == lake.goal else ("Player in hole: ", "X")
            else:
                label, symbol = "Player: ", "P"
            at = player + player // size
            text = f"{head}{label}{cell_texts(size)[player]}\n{middle}{grid[:at]}{symbol}{grid[at + 1 :]}"
            self._observations[player] = text
        return text

    def _parse_action(self, text: str) -> int | None:
        action = _ACTION_INDEX.get(text.casefold())
        if action is None:
            action = _ACTION_INDEX.get(normalize_action(text, _FORGIVEN))
        return action

    def _apply(self, action: int) -> ActionResult:
        slip = self.config.slip
        if slip:
            draw = self.np_random.random()
            if draw < slip:
                action = (action - 1) % 4 if draw < slip / 2 else (action + 1) % 4
        self._moves.append(ACTIONS[action])
        here = self.player
        there = self._table[here * 4 + action]
        if there == here:
            return _BUMP
        self.player = there
        if self._terminal >> there & 1:
            return _GOAL if there == self.lake.goal else _HOLE
        return _MOVE

    def candidate_actions(self) -> tuple[str, ...]:
        """The four moves."""
        return ACTIONS

    def _reset_info(self) -> dict[str, Any]:
        return {"shortest_path_length": self.lake.shortest_path_length}

    def _step_info(self) -> dict[str, Any]:
        moves, self._moves = self._moves, []
        return {"moves": moves}

    def prompt_features(self) -> dict[str, int]:
        """Where the player starts and where the goal is (the coordinates a reasoning names)."""
        return {"start": self.lake.start, "goal": self.lake.goal}

    def oracle(self) -> tuple[str, str]:
        """A shortest safe path on still ice, the most likely winning moves on slippery ice; at most a turn's worth of moves."""
        lake, names, per_turn = self.lake, cell_texts(self.config.size), self.max_actions_per_turn
        here, goal = names[self.player], names[lake.goal]
        if self.config.slip == 0:
            if self._layers is None:
                self._layers = bfs_layers(lake.size, lake.holes, lake.goal)
            actions = shortest_actions(lake, self._layers, self.player, per_turn)
            left = distance_to_goal(self._layers, self.player)
            reason = f"I am at {here} and the goal is at {goal}. A shortest safe path takes {left} more moves"
        else:
            if self._policy is None:
                self._policy = success_policy(lake, self.config.slip, self.max_turns, per_turn)[0]
            turns_left = max(self.max_turns - self.turn, 1)
            actions = list(self._policy[turns_left - 1][self.player])
            reason = f"I am at {here} and the goal is at {goal}. On slippery ice these moves are the safest bet"
        if not actions:  # at the goal, in a hole, or cut off: any legal answer will do
            actions = [0]
        answer = " || ".join(ACTIONS[a] for a in actions)
        return f"{reason}; next: {answer}.", answer
