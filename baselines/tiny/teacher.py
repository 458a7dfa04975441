"""Teacher responses for behaviour cloning: the oracle's moves, with reasoning a small model can follow.

The envs' own ``oracle_response()`` explains its moves in one sentence ("a shortest safe path takes 3 more
moves; next: Down || Right"): right, but the work that found the moves (a breadth-first search, a Sokoban
solver) is not on the page, so a 3M-parameter model that imitates it has to guess the moves from the board in
one step, and it learns to guess badly (it did: the first shipped model copied the sentence's shape and got
the coordinates wrong). The teacher plays moves of the same quality (every move is on a shortest safe path,
or the next move of a move-optimal Sokoban solution) and writes the reasoning as short steps, each of which
is a copy or a one-cell lookup from the input:

- it first copies the lines that matter from the observation, in the observation's own words and line
  breaks (``Player: (3, 1)`` newline ``Goal: (2, 0)``), so each copy is the plain "find the same tokens
  earlier, copy what came next" pattern small transformers learn first (with the cells as single tokens,
  see :mod:`baselines.tiny.tokenizer`);
- **FrozenLake**: for each move, the moves toward the goal (vertical first) with the cell each leads to and
  what is there (``ok``, ``hole``, ``goal``), then the chosen move; a ``Detour`` when no move toward the goal
  is on a shortest safe path, one line per move. Example (lines joined by ``/``): ``Player: (3, 1) / Goal:
  (2, 0) / Up (2, 1) ok, Left (3, 0) ok: Up. / Left (2, 0) goal: Left.``
- **Sokoban**: the next push of an optimal solution as a sub-goal (``Push Down from (1, 2):``), then each move
  with the cell it reaches, a push with where the box goes. Example: ``Player: (2, 1) / Boxes: (2, 2) /
  Targets: (3, 1) / Push Down from (1, 2): Up (1, 1). Right (1, 2).``

Other envs keep their oracle's response, which already reasons about the actual input: Bandit's names the arms,
SearchQA's copies what each gold passage it has retrieved said ("The Silent Harbor: director Maren Holt.") and
names the next title to search, a copy from the observation as well. The teacher
answers None where there is nothing sound to imitate (a Sokoban box stuck for good); the data recorder then
plays the oracle's move without making it a training target.
"""

from __future__ import annotations

from ragen_envs.frozen_lake import ACTIONS as LAKE_ACTIONS
from ragen_envs.frozen_lake import FrozenLakeEnv, bfs_layers, cell_texts, distance_to_goal, move_table
from ragen_envs.parsing import format_response
from ragen_envs.sokoban.board import ACTIONS as SOKOBAN_ACTIONS
from ragen_envs.sokoban.board import offsets
from ragen_envs.sokoban.env import ORACLE_MAX_NODES, SokobanEnv
from ragen_envs.sokoban.render import coordinate
from ragen_envs.sokoban.solver import solve

_LEFT, _DOWN, _RIGHT, _UP = (LAKE_ACTIONS.index(name) for name in ("Left", "Down", "Right", "Up"))


def respond(reasoning: str, actions: list[str]) -> str:
    """The response format every planning env accepts: think, then the ``||``-joined actions."""
    return format_response(reasoning, " || ".join(actions), "think")


def teacher_response(env) -> str | None:
    """The teacher's response for the env's current state (``env`` may be wrapped); see the module docstring."""
    base = env.unwrapped
    if isinstance(base, FrozenLakeEnv) and base.config.slip == 0:
        return frozen_lake_response(base)
    if isinstance(base, SokobanEnv):
        return sokoban_response(base)
    return base.oracle_response()


# ---- FrozenLake -----------------------------------------------------------------------------------------
def toward_goal(size: int, cell: int, goal: int) -> list[int]:
    """The moves that bring ``cell`` closer to ``goal`` in row (first) and column, as action indices."""
    (row, col), (goal_row, goal_col) = divmod(cell, size), divmod(goal, size)
    moves = []
    if goal_row != row:
        moves.append(_DOWN if goal_row > row else _UP)
    if goal_col != col:
        moves.append(_RIGHT if goal_col > col else _LEFT)
    return moves


def frozen_lake_response(base: FrozenLakeEnv) -> str:
    """Moves along a shortest safe path, each checked cell by cell toward the goal (deterministic lake)."""
    lake = base.lake
    size, names, table = lake.size, cell_texts(lake.size), move_table(lake.size)
    layers = bfs_layers(size, lake.holes, lake.goal)
    cell = base.player
    distance = distance_to_goal(layers, cell)

    def check(action: int) -> str:  # "Up (2, 1) ok": the move, the cell it reaches, what is there
        nxt = table[cell * 4 + action]
        there = "goal" if nxt == lake.goal else ("hole" if lake.holes >> nxt & 1 else "ok")
        return f"{LAKE_ACTIONS[action]} {names[nxt]} {there}"

    steps, actions = [f"Player: {names[cell]}\nGoal: {names[lake.goal]}"], []
    while 0 < distance < len(layers) and len(actions) < base.max_actions_per_turn:
        candidates = toward_goal(size, cell, lake.goal)
        checks = ", ".join(check(a) for a in candidates)
        # the first move toward the goal that is on a shortest safe path; else (holes or a dead end that way)
        # a detour, the first such move of any direction
        action = next(
            a for a in (*candidates, *range(4)) if distance_to_goal(layers, table[cell * 4 + a]) == distance - 1
        )
        if action in candidates:
            steps.append(f"{checks}: {LAKE_ACTIONS[action]}.")
        else:
            steps.append(f"{checks}. Detour: {check(action)}.")
        actions.append(LAKE_ACTIONS[action])
        cell, distance = table[cell * 4 + action], distance - 1
    if not actions:  # at the goal or cut off from it: any legal answer will do
        return base.oracle_response()
    return respond("\n".join(steps), actions)


# ---- Sokoban --------------------------------------------------------------------------------------------
def sokoban_response(base: SokobanEnv) -> str | None:
    """The next moves of a move-optimal solution, walked toward the cell behind the next push."""
    level, cols = base.level, base.level.cols
    boxes = tuple(sorted(base.boxes))
    result = solve(level.walls, cols, level.targets, base.player, boxes, max_nodes=ORACLE_MAX_NODES)
    if not result.solved or not result.moves:
        return None
    moves, deltas = list(result.moves), offsets(cols)
    # Replay the solution once, noting for every move where the player stands and which box (if any) it pushes.
    player, occupied, trace = base.player, set(boxes), []
    for direction in moves:
        ahead = player + deltas[direction]
        pushed = ahead if ahead in occupied else None
        if pushed is not None:
            occupied.remove(pushed)
            occupied.add(pushed + deltas[direction])
        trace.append((player, direction, pushed))
        player = ahead

    def subgoal(index: int) -> str:
        """The next push at or after move ``index``: its direction and the cell to push from."""
        for at in range(index, len(trace)):
            stand, direction, pushed = trace[at]
            if pushed is not None:
                which = f" {coordinate(pushed, cols)}" if len(boxes) > 1 else ""
                return f"Push{which} {SOKOBAN_ACTIONS[direction]} from {coordinate(stand, cols)}:"
        return "Walk:"  # cannot happen: a solution ends with a push

    header = (
        f"Player: {coordinate(base.player, cols)}\nBoxes: {', '.join(coordinate(b, cols) for b in boxes)}\n"
        f"Targets: {', '.join(coordinate(t, cols) for t in level.targets)}"
    )
    parts, actions = [header], []
    for index, (stand, direction, pushed) in enumerate(trace[: base.max_actions_per_turn]):
        if index == 0 or trace[index - 1][2] is not None:  # a new walk starts: name its goal
            parts.append("\n" + subgoal(index))
        name = SOKOBAN_ACTIONS[direction]
        if pushed is None:
            parts.append(f"{name} {coordinate(stand + deltas[direction], cols)}.")
        else:
            parts.append(f"{name} pushes the box to {coordinate(pushed + deltas[direction], cols)}.")
        actions.append(name)
    return respond(" ".join(parts).replace(" \n", "\n"), actions)
