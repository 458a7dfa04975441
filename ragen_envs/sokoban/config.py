"""Sokoban generation settings, validated on construction."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ragen_envs.arguments import EnvConfig, argument, check_range, derived

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


def _room_shape(room_size: Any) -> tuple[int, int]:
    if isinstance(room_size, int) and not isinstance(room_size, bool):
        return room_size, room_size
    if isinstance(room_size, (tuple, list)) and len(room_size) == 2:
        return room_size[0], room_size[1]
    hint = ""
    if isinstance(room_size, str):
        sides = re.fullmatch(r"\s*(\d+)\s*[xX×,]?\s*(\d+)?\s*", room_size)
        if sides:
            rows, cols = int(sides.group(1)), int(sides.group(2) or sides.group(1))
            hint = f"; did you mean room_size={rows if rows == cols else (rows, cols)!r}?"
    raise ValueError(f"room_size must be an int or a (rows, cols) pair, got {room_size!r}{hint}")


@dataclass(frozen=True)
class SokobanConfig(EnvConfig):
    """What a generated level looks like and how hard it must be.

    The env's arguments are ``room_size``, ``num_boxes``, ``difficulty`` and ``max_attempts``; ``rows``, ``cols``
    and ``max_moves`` follow from them (the generator's own callers may give ``rows``/``cols`` directly, which
    then set ``room_size``).
    """

    room_size: int | tuple[int, int] = argument(
        6,
        "Board side, or a ``(rows, cols)`` pair; walls included.",
        allowed=f"integer or ``(rows, cols)`` pair, in [4, {MAX_SIDE}] per side and at least 5 on one",
    )
    num_boxes: int = argument(
        1, "Boxes (and targets) per level.", allowed="integer in [1, what the room holds (``box_capacity``)]"
    )
    difficulty: int | None = argument(
        None,
        "Minimum optimal solution length in moves (``None``: 3, or the action budget if that is smaller). Where "
        "exact search is not affordable (see ``generate.EXACT_MAX_STATES``) a proven lower bound must reach it "
        "instead.",
        allowed="integer in [0, ``max_turns × max_actions_per_turn``], or ``None``",
    )
    max_attempts: int = argument(
        200,
        "Random rooms tried before falling back to the hardest verified level found.",
        low=1,
        high=100_000,
        integer=True,
    )
    rows: int | None = derived(None, "Board height including the surrounding wall (from ``room_size``).")
    cols: int | None = derived(None, "Board width including the surrounding wall (from ``room_size``).")
    max_moves: int = derived(
        10, "Longest solution a level may need: the episode's action budget, so the oracle can always finish."
    )

    def __post_init__(self) -> None:
        if self.rows is None and self.cols is None:
            rows, cols = _room_shape(self.room_size)
        else:
            rows, cols = self.rows, self.cols if self.cols is not None else self.rows
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "cols", cols)
        object.__setattr__(self, "room_size", rows if rows == cols else (rows, cols))
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
        if self.difficulty is None:
            object.__setattr__(self, "difficulty", min(3, self.max_moves))
        check_range(
            "difficulty (the minimum optimal moves; at most max_moves = max_turns × max_actions_per_turn)",
            self.difficulty,
            0,
            self.max_moves,
            integer=True,
        )
        super().__post_init__()  # max_attempts
