"""Sokoban board rules as pure functions over flat cell indices.

A board of ``rows × cols`` cells is addressed by ``index = row * cols + col``. The outer ring is always wall,
so the four neighbours of any floor cell are valid indices and no bounds check is needed: a move is one
integer addition (``offsets(cols)``). Walls are a ``bytes`` of 0/1, boxes and targets sorted tuples of
indices, directions the integers 0..3 in ``ACTIONS`` order.
"""

from __future__ import annotations

from dataclasses import dataclass

ACTIONS = ("Up", "Down", "Left", "Right")
OPPOSITE = (1, 0, 3, 2)
UNREACHABLE = 1 << 30

# gym-sokoban's reward scheme, which RAGEN uses unchanged.
STEP_REWARD = -0.1
BOX_ON_TARGET_REWARD = 1.0
BOX_OFF_TARGET_REWARD = -1.0
SOLVED_REWARD = 10.0


def offsets(cols: int) -> tuple[int, int, int, int]:
    """Index deltas of Up, Down, Left, Right on a board ``cols`` wide."""
    return (-cols, cols, -1, 1)


@dataclass(frozen=True)
class Level:
    """A generated level with the solution that proves it solvable."""

    rows: int
    cols: int
    walls: bytes
    """``rows * cols`` bytes, 1 for wall; the outer ring is wall."""
    targets: tuple[int, ...]
    boxes: tuple[int, ...]
    """Start positions of the boxes, sorted."""
    player: int
    solution: tuple[int, ...]
    """Directions (0..3) that solve the level; replayed by the generator before the level is returned."""
    optimal: bool
    """True when ``solution`` is proven move-optimal (exact search), False when it is only verified."""
    lower_bound: int
    """A proven lower bound on the optimal move count (equal to ``len(solution)`` when ``optimal``)."""
    fallback: bool = False
    """True when no level of the requested difficulty was found within the attempt budget."""

    @property
    def solution_moves(self) -> int:
        """The length of the stored solution (optimal only when ``optimal``)."""
        return len(self.solution)

    @property
    def optimal_moves(self) -> int | None:
        """The optimal move count when it is known, else None."""
        return len(self.solution) if self.optimal else None


def move(walls: bytes, cols: int, player: int, boxes: frozenset[int], direction: int) -> tuple[int, frozenset[int]]:
    """The state after one move; a move into a wall or a blocked box leaves the state unchanged."""
    step = offsets(cols)[direction]
    ahead = player + step
    if walls[ahead]:
        return player, boxes
    if ahead in boxes:
        beyond = ahead + step
        if walls[beyond] or beyond in boxes:
            return player, boxes
        boxes = (boxes - {ahead}) | {beyond}
    return ahead, boxes


def replay(
    walls: bytes, cols: int, player: int, boxes: tuple[int, ...], directions: tuple[int, ...] | list[int]
) -> tuple[int, tuple[int, ...]]:
    """The state (player, sorted boxes) after playing ``directions`` from the given state."""
    box_set = frozenset(boxes)
    for direction in directions:
        player, box_set = move(walls, cols, player, box_set, direction)
    return player, tuple(sorted(box_set))


def is_solution(level: Level, directions: tuple[int, ...] | list[int]) -> bool:
    """True when ``directions`` played from the level's start leaves every box on a target."""
    _, boxes = replay(level.walls, level.cols, level.player, level.boxes, directions)
    return set(boxes) == set(level.targets)


def push_distances(walls: bytes, cols: int, targets: tuple[int, ...]) -> list[int]:
    """Per cell: the fewest pushes that bring a lone box from there onto some target (``UNREACHABLE`` if none).

    Other boxes are ignored, so the sum over boxes is a lower bound on the pushes (hence moves) a state
    needs, and a box on an ``UNREACHABLE`` cell is a dead box (a corner or a wall it can never leave).
    """
    dist = [UNREACHABLE] * len(walls)
    steps = offsets(cols)
    frontier = list(targets)
    for cell in frontier:
        dist[cell] = 0
    depth = 0
    while frontier:
        depth += 1
        nxt = []
        for cell in frontier:
            for step in steps:
                # A box at cell - step pushed by a player at cell - 2*step lands on cell.
                source = cell - step
                # An interior source keeps source - step on the board (the ring is wall).
                if not walls[source] and not walls[source - step] and dist[source] == UNREACHABLE:
                    dist[source] = depth
                    nxt.append(source)
        frontier = nxt
    return dist


def lower_bound(cols: int, pushes: list[int], player: int, boxes: tuple[int, ...]) -> int:
    """An admissible bound on the moves to solve: pushes every box needs, plus the walk to the nearest box."""
    total = 0
    for box in boxes:
        total += pushes[box]
    if total == 0:
        return 0
    prow, pcol = divmod(player, cols)
    walk = min(abs(prow - b // cols) + abs(pcol - b % cols) for b in boxes) - 1
    return total + max(walk, 0)


def walk_path(walls: bytes, steps: tuple[int, ...], boxes: set[int], src: int, dst: int) -> list[int] | None:
    """Directions of a shortest walk from src to dst around the boxes (no pushes), or None."""
    if src == dst:
        return []
    came = {src: (-1, -1)}
    frontier = [src]
    while frontier:
        nxt = []
        for cell in frontier:
            for direction in range(4):
                q = cell + steps[direction]
                if walls[q] or q in boxes or q in came:
                    continue
                came[q] = (cell, direction)
                if q == dst:
                    path = []
                    while q != src:
                        q, d = came[q]
                        path.append(d)
                    return path[::-1]
                nxt.append(q)
        frontier = nxt
    return None


def reachable(walls: bytes, steps: tuple[int, ...], boxes: set[int], src: int) -> list[int]:
    """Cells the player reaches from src without pushing, in BFS order."""
    seen = {src}
    order = [src]
    for cell in order:
        for step in steps:
            q = cell + step
            if not walls[q] and q not in boxes and q not in seen:
                seen.add(q)
                order.append(q)
    return order
