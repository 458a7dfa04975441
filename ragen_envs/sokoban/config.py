"""Sokoban generation settings, validated on construction."""

from __future__ import annotations

from dataclasses import dataclass

from ragen_envs.core import check_range

MAX_SIDE = 30


def box_capacity(rows: int, cols: int) -> int:
    """Most boxes a ``rows × cols`` room is guaranteed to hold in a solvable level.

    This is the capacity of the constructed fallback level (``generate._constructed_level``): lanes of
    target-box-gap triples under a free corridor row, laid along whichever side gives more room.
    """
    inner_rows, inner_cols = rows - 2, cols - 2
    along_rows = (inner_rows - 1) * (inner_cols // 3)
    along_cols = (inner_cols - 1) * (inner_rows // 3)
    return max(along_rows, along_cols)


@dataclass(frozen=True)
class SokobanConfig:
    """What a generated level looks like and how hard it must be."""

    rows: int = 6
    """Board height including the surrounding wall (≥ 4)."""
    cols: int = 6
    """Board width including the surrounding wall (≥ 4)."""
    num_boxes: int = 1
    """Boxes (and targets) per level."""
    difficulty: int = 3
    """Minimum optimal solution length in moves. Where exact search is not affordable (see
    ``generate.EXACT_MAX_STATES``) a proven lower bound must reach it instead."""
    max_moves: int = 10
    """Longest solution a level may need: the episode's action budget, so the oracle can always finish."""
    max_attempts: int = 200
    """Random rooms tried before falling back to the hardest verified level found."""

    def __post_init__(self) -> None:
        check_range("rows", self.rows, 4, MAX_SIDE, integer=True)
        check_range("cols", self.cols, 4, MAX_SIDE, integer=True)
        if max(self.rows, self.cols) < 5:
            raise ValueError(
                f"room_size must be at least 5 on one side (got {self.rows}×{self.cols}): a 4×4 room has a 2×2 "
                "interior where every cell is a corner, so no box can ever be pushed"
            )
        capacity = box_capacity(self.rows, self.cols)
        check_range(f"num_boxes (for a {self.rows}×{self.cols} room)", self.num_boxes, 1, capacity, integer=True)
        check_range("max_moves", self.max_moves, 1, integer=True)
        check_range(
            "difficulty (the minimum optimal moves; at most max_moves = max_turns × max_actions_per_turn)",
            self.difficulty,
            0,
            self.max_moves,
            integer=True,
        )
        check_range("max_attempts", self.max_attempts, 1, 100_000, integer=True)
