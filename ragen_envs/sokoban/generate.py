"""Sokoban level generation by reverse play from the solved state; every level is proven solvable.

One attempt:

1. **Room.** A digger random-walks the interior and carves small masks of floor (single cell, pairs,
   2×2, L), like gym-sokoban's topology, until at least ``MIN_FLOOR_FRACTION`` of the interior is floor.
2. **Targets.** ``num_boxes`` distinct floor cells; the boxes start on them (the solved state).
3. **Reverse play.** Moves are undone backwards from the solved state, so every state reached is solvable
   by construction, and the generator also *proves* it:

   - *small state spaces* (``floor × C(floor − 1, boxes) ≤ REVERSE_BFS_MAX_STATES``: 1-box rooms up to
     10×10, small 2-box rooms): a breadth-first search over reversed moves (un-walks and pulls) from every
     solved state (the player anywhere) labels each state with its exact move-optimal distance. A depth in
     ``[max(difficulty, 1), max_moves]`` is drawn uniformly among those that exist and a state uniformly in
     that layer; the BFS parent pointers are its optimal solution.
   - *larger ones*: the boxes are pulled one at a time, each pull taking a box one cell farther from every
     target (the player first walks to the pulling side), until the summed push distance reaches the
     difficulty. The pushes in reverse order with shortest walks between them form a solution that is
     replayed to check it. Where ``floor × C(floor − 1, boxes) ≤ EXACT_MAX_STATES`` (every 8×8 room with
     2 boxes) the A* solver then finds the optimum (its node budget is the state-space bound, so it always
     finishes); otherwise the level carries the verified length and a proven lower bound.

4. **Difficulty.** A level is kept when its optimal length (or, without exact search, the lower bound) is
   at least ``difficulty`` and its solution fits in ``max_moves``. After ``max_attempts`` rejected rooms the
   hardest verified level seen is returned (``Level.fallback``); if there was none at all, a constructed
   level (boxes one push from their targets, see ``_constructed_level``). Generation never loops unbounded
   and never fails.

All randomness comes from the ``numpy.random.Generator`` passed in (drawn in blocks of floats), so a seed
gives the same level in every process. The inner loops use plain ints, tuples and bytes: no numpy.
"""

from __future__ import annotations

from math import comb

from ragen_envs.sokoban.board import (
    OPPOSITE,
    Level,
    is_solution,
    lower_bound,
    offsets,
    push_distances,
    reachable,
    walk_path,
)
from ragen_envs.sokoban.config import SokobanConfig
from ragen_envs.sokoban.render import parse_grid
from ragen_envs.sokoban.solver import solve

REVERSE_BFS_MAX_STATES = 6_000
EXACT_MAX_STATES = 25_000
MIN_FLOOR_FRACTION = 0.6
_MASKS = (
    ((0, 0),),
    ((0, 0), (0, 1)),
    ((0, 0), (1, 0)),
    ((0, 0), (0, 1), (1, 0), (1, 1)),
    ((0, 0), (0, 1), (1, 1)),
    ((0, 0), (1, 0), (1, -1)),
)
_DR = (-1, 1, 0, 0)
_DC = (0, 0, -1, 1)


class _Uniforms:
    """Floats in [0, 1) from a numpy Generator, drawn 256 at a time (one call per block, not per draw)."""

    __slots__ = ("_rng", "_values")

    def __init__(self, rng) -> None:
        self._rng = rng
        self._values = iter(())

    def below(self, n: int) -> int:
        """A uniform integer in [0, n)."""
        for value in self._values:  # at most one iteration: the cheapest way to take the next float
            return int(value * n)
        self._values = iter(self._rng.random(256).tolist())
        return int(next(self._values) * n)


def carve_room(rows: int, cols: int, u: _Uniforms) -> bytearray:
    """Walls (1) and floor (0) of a random room: a digger walks the interior carving small masks.

    It walks ``1.7 × (rows + cols)`` steps (gym-sokoban's count) and then on until at least
    ``MIN_FLOOR_FRACTION`` of the interior is floor, so large boards get rooms that use them.
    """
    walls = bytearray(b"\x01") * (rows * cols)
    inner_rows, inner_cols = rows - 2, cols - 2
    min_floor = int(MIN_FLOOR_FRACTION * inner_rows * inner_cols)
    r, c = 1 + u.below(inner_rows), 1 + u.below(inner_cols)
    direction = u.below(4)
    floor = 0
    steps, min_steps, max_steps = 0, int(1.7 * (rows + cols)), 20 * inner_rows * inner_cols
    while steps < min_steps or (floor < min_floor and steps < max_steps):
        steps += 1
        if u.below(100) < 35:
            direction = u.below(4)
        nr, nc = r + _DR[direction], c + _DC[direction]
        if 1 <= nr <= inner_rows and 1 <= nc <= inner_cols:
            r, c = nr, nc
        else:  # bounce off the wall instead of idling against it: rooms spread over the board
            direction = u.below(4)
        for dr, dc in _MASKS[u.below(len(_MASKS))]:
            mr, mc = r + dr, c + dc
            if 1 <= mr <= inner_rows and 1 <= mc <= inner_cols and walls[mr * cols + mc]:
                walls[mr * cols + mc] = 0
                floor += 1
    return walls


def _pack(player: int, boxes: tuple[int, ...], shift: int) -> int:
    key, sh = player, shift
    for b in boxes:
        key |= b << sh
        sh += shift
    return key


def _reverse_bfs_level(
    walls: bytes, cols: int, floor: list[int], targets: tuple[int, ...], config: SokobanConfig, u: _Uniforms
) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
    """(player, boxes, optimal solution) at a random depth of the exact reverse BFS, or None if it is empty.

    Returns the deepest reachable depth's state when no depth reaches ``difficulty`` (the caller notices).
    """
    steps = offsets(cols)
    shift = len(walls).bit_length()
    # A state is (player, boxes, packed boxes); its key is player | packed boxes (see _pack).
    # next_of[key] = (key one move nearer the goal, direction of that forward move); goal states map to None.
    next_of: dict[int, tuple[int, int] | None] = {}
    goal_boxes = _pack(0, targets, shift)
    frontier = []
    for p in floor:
        if p not in targets:
            next_of[p | goal_boxes] = None
            frontier.append((p, targets, goal_boxes))
    layers = [frontier]
    while frontier and len(layers) <= config.max_moves:
        nxt = []
        for p, bs, packed in frontier:
            here = p | packed
            for direction in range(4):
                step = steps[direction]
                q = p - step  # where the player stood before moving `direction` onto p
                if walls[q] or q in bs:
                    continue
                key = q | packed
                if key not in next_of:
                    next_of[key] = (here, direction)
                    nxt.append((q, bs, packed))
                if p + step in bs:  # ...or before pushing the box from p to p + step
                    pulled = p + step
                    nbs = tuple(sorted(p if b == pulled else b for b in bs))
                    npacked = _pack(0, nbs, shift)
                    key = q | npacked
                    if key not in next_of:
                        next_of[key] = (here, direction)
                        nxt.append((q, nbs, npacked))
        frontier = nxt
        if frontier:
            layers.append(frontier)
    depths = [d for d in range(max(config.difficulty, 1), len(layers))]
    if not depths:
        if len(layers) < 2:
            return None
        depths = [len(layers) - 1]
    layer = layers[depths[u.below(len(depths))]]
    player, boxes, packed = layer[u.below(len(layer))]
    moves = []
    link = next_of[player | packed]
    while link is not None:
        key, direction = link
        moves.append(direction)
        link = next_of[key]
    return player, boxes, tuple(moves)


def _pull_walk_level(
    walls: bytes,
    cols: int,
    floor: list[int],
    targets: tuple[int, ...],
    pushes: list[int],
    want_pushes: int,
    max_pulls: int,
    u: _Uniforms,
) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
    """(player, boxes, verified solution) from random pulls off the solved state, or None.

    The boxes are pulled one at a time (so the forward solution walks between boxes only a few times), each
    until the boxes' summed push distance (a lower bound on the moves) reaches its share of
    ``want_pushes``, or for at most ``max_pulls`` pulls.
    """
    steps = offsets(cols)
    boxes = set(targets)
    free = [p for p in floor if p not in boxes]
    player = free[u.below(len(free))]
    pulls: list[tuple[int, int]] = []  # (box cell before the pull, direction index of the pull)
    order = sorted(boxes)
    for k in range(len(order) - 1, 0, -1):  # pull the boxes one after another, in random order
        j = u.below(k + 1)
        order[k], order[j] = order[j], order[k]
    bound = 0
    for _ in range(len(order) + 1):  # rounds over the boxes, while the bound still grows
        start_bound = bound
        for k in range(len(order)):
            box = order[k]
            share = bound + -(-(want_pushes - bound) // (len(order) - k))  # this box's part of what is left
            for _ in range(max_pulls):
                if bound >= share:
                    break
                # Only pulls that take the box farther from every target: each adds one to the lower bound,
                # and the reverse walk cannot cycle, so the forward solution has no detours.
                options, reach = [], None
                for direction in range(4):
                    stand = box + steps[direction]
                    back = stand + steps[direction]
                    if walls[stand] or walls[back] or back in boxes or pushes[stand] <= pushes[box]:
                        continue
                    if stand != player:
                        if reach is None:
                            reach = set(reachable(walls, steps, boxes, player))
                        if stand not in reach:
                            continue
                    options.append(direction)
                if not options:
                    break
                direction = options[u.below(len(options))]
                pulls.append((box, direction))
                boxes.discard(box)
                bound -= pushes[box]
                box += steps[direction]
                boxes.add(box)
                bound += pushes[box]
                player = box + steps[direction]
            order[k] = box
        if bound >= want_pushes or bound == start_bound:
            break
    if boxes == set(targets):
        return None
    region = reachable(walls, steps, boxes, player)
    start = region[u.below(len(region))]
    start_boxes = tuple(sorted(boxes))
    # Forward: undo the pulls last-first; each is a push opposite to the pull, after a shortest walk.
    moves: list[int] = []
    player = start
    for b, direction in reversed(pulls):
        push_from = b + 2 * steps[direction]
        walk = walk_path(walls, steps, boxes, player, push_from)
        if walk is None:  # cannot happen: the reverse walk came from there
            return None
        moves.extend(walk)
        moves.append(OPPOSITE[direction])
        boxes.discard(b + steps[direction])
        boxes.add(b)
        player = b + steps[direction]
    return start, start_boxes, tuple(moves)


def _state_bound(floor_cells: int, num_boxes: int) -> int:
    return floor_cells * comb(floor_cells - 1, num_boxes)


def _candidate(walls: bytes, config: SokobanConfig, u: _Uniforms) -> tuple[Level, bool] | None:
    """One attempt: (level, meets difficulty) or None when the room admits no level."""
    rows, cols, n = config.rows, config.cols, config.num_boxes
    floor = [i for i in range(rows * cols) if not walls[i]]
    if len(floor) < n + 2:
        return None
    picks = floor[:]
    for i in range(n):  # partial Fisher-Yates: n distinct target cells
        j = i + u.below(len(picks) - i)
        picks[i], picks[j] = picks[j], picks[i]
    targets = tuple(sorted(picks[:n]))
    bound = _state_bound(len(floor), n)
    if bound <= REVERSE_BFS_MAX_STATES:
        found = _reverse_bfs_level(walls, cols, floor, targets, config, u)
        if found is None:
            return None
        player, boxes, moves = found
        optimal, low = True, len(moves)
    else:
        pushes = push_distances(walls, cols, targets)
        want = max(config.difficulty, 1) + u.below(n + 1)
        found = _pull_walk_level(walls, cols, floor, targets, pushes, want, 4 * want, u)
        if found is None:
            return None
        player, boxes, moves = found
        low = lower_bound(cols, pushes, player, boxes)
        optimal = False
        if bound <= EXACT_MAX_STATES:
            result = solve(walls, cols, targets, player, boxes, max_nodes=bound + 1, pushes=pushes)
            if not result.solved:  # cannot happen: the pull walk proves a solution exists
                return None
            moves, optimal, low = result.moves, True, len(result.moves)
    if not moves or len(moves) > config.max_moves:
        return None
    level = Level(rows, cols, bytes(walls), targets, boxes, player, moves, optimal, low)
    return level, low >= config.difficulty


def _constructed_level(config: SokobanConfig) -> Level:
    """A level that always exists (see ``config.box_capacity``): boxes one push from targets, open room."""
    rows, cols, n = config.rows, config.cols, config.num_boxes
    walls = bytearray(b"\x01") * (rows * cols)
    for r in range(1, rows - 1):
        for c in range(1, cols - 1):
            walls[r * cols + c] = 0
    inner_rows, inner_cols = rows - 2, cols - 2
    along_rows = (inner_rows - 1) * (inner_cols // 3) >= (inner_cols - 1) * (inner_rows // 3)
    lane_len = inner_cols if along_rows else inner_rows

    def cell(lane: int, pos: int) -> int:  # lane 0 is the free corridor; pos counts from 1 along the lane
        return (lane + 1) * cols + pos if along_rows else pos * cols + lane + 1

    per_lane = lane_len // 3
    targets, boxes = [], []
    for k in range(n):
        lane, unit = 1 + k // per_lane, k % per_lane
        targets.append(cell(lane, 1 + 3 * unit))
        boxes.append(cell(lane, 2 + 3 * unit))
    walls = bytes(walls)
    player = cell(0, 1)
    moves = _push_each(walls, cols, player, boxes, targets)
    tgt, bxs = tuple(sorted(targets)), tuple(sorted(boxes))
    pushes = push_distances(walls, cols, tgt)
    return Level(rows, cols, walls, tgt, bxs, player, moves, False, lower_bound(cols, pushes, player, bxs), True)


def _push_each(walls: bytes, cols: int, player: int, boxes: list[int], targets: list[int]) -> tuple[int, ...]:
    """Walk behind each box of the constructed level and push it onto the target next to it."""
    steps = offsets(cols)
    box_set = set(boxes)
    moves: list[int] = []
    for box, target in zip(boxes, targets, strict=True):
        direction = steps.index(target - box)
        behind = box - steps[direction]
        moves.extend(walk_path(walls, steps, box_set, player, behind) or [])
        moves.append(direction)
        box_set.discard(box)
        box_set.add(target)
        player = box
    return tuple(moves)


def generate_level(rng, config: SokobanConfig) -> Level:
    """A solvable level drawn from ``rng`` (a ``numpy.random.Generator``); see the module docstring."""
    u = _Uniforms(rng)
    best: Level | None = None
    for _ in range(config.max_attempts):
        walls = carve_room(config.rows, config.cols, u)
        found = _candidate(walls, config, u)
        if found is None:
            continue
        level, meets = found
        if meets and is_solution(level, level.solution):
            return level
        if best is None or level.lower_bound > best.lower_bound:
            best = level
    if best is not None and is_solution(best, best.solution):
        return Level(**{**best.__dict__, "fallback": True})
    level = _constructed_level(config)
    if not is_solution(level, level.solution):
        raise RuntimeError(f"internal error: the constructed Sokoban level for {config} does not verify")
    return level


def level_from_text(grid: str, *, max_nodes: int = EXACT_MAX_STATES) -> Level:
    """A level from a grid drawn in the observation's symbols (``#_OX√PS``), solved move-optimally.

    Raises ``ValueError`` for an unknown symbol, ragged rows, an open border, not exactly one player, box and
    target counts that differ, or a level the solver proves unsolvable or cannot solve within ``max_nodes``.
    """
    rows, cols, walls, targets, boxes, players = parse_grid(grid)
    walls = bytes(walls)
    result = solve(walls, cols, tuple(targets), players[0], tuple(boxes), max_nodes=max_nodes)
    if not result.solved:
        why = "is unsolvable" if result.status == "unsolvable" else f"was not solved within {max_nodes} nodes"
        raise ValueError(f"level {why}")
    return Level(rows, cols, walls, tuple(targets), tuple(boxes), players[0], result.moves, True, len(result.moves))
