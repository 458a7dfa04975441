"""Exact, move-optimal Sokoban solver: A* over (player, sorted boxes) with deadlock pruning.

*Move-optimal*: the cost is the number of moves (walks and pushes alike), because that is what an agent
spends from its per-episode action budget. States are packed into one int (player index, then the sorted
box indices, ``shift`` bits each), so hashing and dict look-ups are cheap. The heuristic is the sum of each
box's push distance to its nearest target (other boxes ignored) plus the player's Manhattan walk to the
nearest box minus one. Both terms change by at most one per move, so the heuristic is consistent and the
first goal popped is optimal. Pruned: boxes on dead cells (no push sequence reaches a target) and boxes
frozen in a 2×2 block of walls and boxes that is not all on targets.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from ragen_envs.sokoban.board import UNREACHABLE, offsets, push_distances

DEFAULT_MAX_NODES = 200_000


@dataclass(frozen=True)
class SolveResult:
    """The outcome of one search."""

    status: str
    """``"solved"`` (``moves`` is optimal), ``"unsolvable"`` (search space exhausted: no solution exists)
    or ``"budget"`` (``max_nodes`` expanded without an answer)."""
    moves: tuple[int, ...] | None
    expanded: int

    @property
    def solved(self) -> bool:
        """Whether the search found an optimal solution."""
        return self.status == "solved"


def _frozen(walls: bytes, cols: int, boxes: tuple[int, ...], target_set: frozenset[int], cell: int) -> bool:
    """True when the box on ``cell`` sits in a 2×2 block of walls/boxes with a box that is off target."""
    for corner in (cell, cell - 1, cell - cols, cell - cols - 1):
        block = (corner, corner + 1, corner + cols, corner + cols + 1)
        if all(walls[c] or c in boxes for c in block):
            if any(c in boxes and c not in target_set for c in block):
                return True
    return False


def solve(
    walls: bytes,
    cols: int,
    targets: tuple[int, ...],
    player: int,
    boxes: tuple[int, ...],
    *,
    max_nodes: int = DEFAULT_MAX_NODES,
    pushes: list[int] | None = None,
) -> SolveResult:
    """Find a move-optimal solution from (player, boxes); see the module docstring."""
    if pushes is None:
        pushes = push_distances(walls, cols, targets)
    target_set = frozenset(targets)
    boxes = tuple(sorted(boxes))
    h_boxes = sum(pushes[b] for b in boxes)
    if h_boxes >= UNREACHABLE:
        return SolveResult("unsolvable", None, 0)
    steps = offsets(cols)
    shift = len(walls).bit_length()
    row_of = [i // cols for i in range(len(walls))]
    col_of = [i % cols for i in range(len(walls))]

    def pack(p: int, bs: tuple[int, ...]) -> int:
        key, sh = p, shift
        for b in bs:
            key |= b << sh
            sh += shift
        return key

    def walk(p: int, bs: tuple[int, ...]) -> int:
        pr, pc = row_of[p], col_of[p]
        return max(min(abs(pr - row_of[b]) + abs(pc - col_of[b]) for b in bs) - 1, 0)

    start = pack(player, boxes)
    best_g = {start: 0}
    parent: dict[int, tuple[int, int]] = {}
    counter = 0
    heap = [(h_boxes + (walk(player, boxes) if h_boxes else 0), 0, counter, player, boxes, h_boxes, start)]
    expanded = 0
    while heap:
        _, neg_g, _, p, bs, h, key = heapq.heappop(heap)
        g = -neg_g
        if best_g[key] < g:
            continue  # a stale entry: this state was reached more cheaply since
        if h == 0:
            path = []
            while key != start:
                key, direction = parent[key]
                path.append(direction)
            return SolveResult("solved", tuple(reversed(path)), expanded)
        expanded += 1
        if expanded > max_nodes:
            return SolveResult("budget", None, expanded)
        ng = g + 1
        for direction in range(4):
            step = steps[direction]
            q = p + step
            if walls[q]:
                continue
            if q in bs:
                r = q + step
                if walls[r] or r in bs or pushes[r] >= UNREACHABLE:
                    continue
                nbs = tuple(sorted(r if b == q else b for b in bs))
                if _frozen(walls, cols, nbs, target_set, r):
                    continue
                nh = h - pushes[q] + pushes[r]
            else:
                nbs, nh = bs, h
            nkey = pack(q, nbs)
            if best_g.get(nkey, UNREACHABLE) <= ng:
                continue
            best_g[nkey] = ng
            parent[nkey] = (key, direction)
            counter += 1
            f = ng + nh + (walk(q, nbs) if nh else 0)
            heapq.heappush(heap, (f, -ng, counter, q, nbs, nh, nkey))
    return SolveResult("unsolvable", None, expanded)
