"""Text rendering of a Sokoban board: RAGEN's grid symbols plus its coordinate listing (``grid_coord``).

The grid is kept as a list of characters (rows separated by newline entries) so that a move, which
changes at most three cells, updates three list items instead of redrawing the board.
"""

from __future__ import annotations

WALL, FLOOR, TARGET, BOX, BOX_ON_TARGET, PLAYER, PLAYER_ON_TARGET = "#", "_", "O", "X", "√", "P", "S"
SYMBOL_MEANINGS = (
    (WALL, "wall"),
    (FLOOR, "empty floor"),
    (TARGET, "target"),
    (BOX, "box"),
    (BOX_ON_TARGET, "box on a target"),
    (PLAYER, "you (the player)"),
    (PLAYER_ON_TARGET, "you standing on a target"),
)


def symbol(walls: bytes, targets: frozenset[int], boxes: set[int] | frozenset[int], player: int, cell: int) -> str:
    """The grid character of one cell."""
    if walls[cell]:
        return WALL
    on_target = cell in targets
    if cell == player:
        return PLAYER_ON_TARGET if on_target else PLAYER
    if cell in boxes:
        return BOX_ON_TARGET if on_target else BOX
    return TARGET if on_target else FLOOR


def grid_chars(
    rows: int, cols: int, walls: bytes, targets: frozenset[int], boxes: set[int] | frozenset[int], player: int
) -> list[str]:
    """The grid as characters; cell ``i`` sits at ``char_index(i, cols)``, rows are separated by ``"\\n"``."""
    chars = []
    for r in range(rows):
        if r:
            chars.append("\n")
        chars.extend(symbol(walls, targets, boxes, player, r * cols + c) for c in range(cols))
    return chars


def char_index(cell: int, cols: int) -> int:
    """Position of a cell's character in :func:`grid_chars`."""
    return cell + cell // cols


def coordinate(cell: int, cols: int) -> str:
    """``(row, col)``, zero-indexed from the top-left corner."""
    r, c = divmod(cell, cols)
    return f"({r}, {c})"


def observation_header(rows: int, cols: int, targets: tuple[int, ...] | list[int]) -> str:
    """The lines of the observation that never change within an episode: board size and targets."""
    target_line = ", ".join(coordinate(t, cols) for t in sorted(targets))
    return f"Board size: {rows} rows x {cols} cols (zero-indexed).\nTargets: {target_line}\n"


def observation_text(header: str, box_coords: list[str], player_coord: str, grid: str) -> str:
    """RAGEN's ``grid_coord`` observation: board size, target/box/player coordinates, then the grid."""
    return f"{header}Boxes: {', '.join(box_coords)}\nPlayer: {player_coord}\nGrid Map:\n{grid}"


def render_board(rows: int, cols: int, walls: bytes, targets, boxes, player: int) -> str:
    """The full observation of a state, drawn from scratch (the env updates its grid incrementally)."""
    target_set = frozenset(targets)
    grid = "".join(grid_chars(rows, cols, walls, target_set, set(boxes), player))
    box_coords = [coordinate(b, cols) for b in sorted(boxes)]
    return observation_text(
        observation_header(rows, cols, list(target_set)), box_coords, coordinate(player, cols), grid
    )


def parse_grid(grid: str) -> tuple[int, int, bytearray, list[int], list[int], list[int]]:
    """(rows, cols, walls, targets, boxes, players) of a grid drawn in the symbols above.

    Raises ``ValueError`` for an unknown symbol, ragged rows or an open border.
    """
    if not isinstance(grid, str):
        raise ValueError(f"a level must be a grid string in the symbols # _ O X √ P S, got {type(grid).__name__}")
    lines = [line.strip() for line in grid.strip().splitlines() if line.strip()]
    if not lines or len({len(line) for line in lines}) != 1:
        raise ValueError("level grid must be non-empty with rows of equal length")
    rows, cols = len(lines), len(lines[0])
    walls, targets, boxes, players = bytearray(rows * cols), [], [], []
    for r, line in enumerate(lines):
        for c, ch in enumerate(line):
            i = r * cols + c
            if ch not in "#_OX√PS":
                raise ValueError(f"unknown symbol {ch!r} at ({r}, {c}); allowed: # _ O X √ P S")
            walls[i] = ch == "#"
            if ch in "O√S":
                targets.append(i)
            if ch in "X√":
                boxes.append(i)
            if ch in "PS":
                players.append(i)
            on_border = r in (0, rows - 1) or c in (0, cols - 1)
            if on_border and ch != "#":
                raise ValueError(f"the border must be wall, found {ch!r} at ({r}, {c})")
    if len(players) != 1:
        raise ValueError(f"level needs exactly one player (P or S), found {len(players)}")
    if not boxes or len(boxes) != len(targets):
        raise ValueError(f"level needs as many targets as boxes (at least one), found {len(boxes)} and {len(targets)}")
    return rows, cols, walls, targets, boxes, players
