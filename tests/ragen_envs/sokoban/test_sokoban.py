"""Sokoban: generated levels checked by an independent BFS, golden transcripts, reward rules, bad kwargs.

Regenerate the golden files (only when a change of prompt/reward/generation is intended, with a version bump):
``RAGEN_REGEN_GOLDEN=1 python -m pytest tests/ragen_envs/sokoban -k golden``.
"""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest

import ragen_envs  # noqa: F401  (registers the ids)
from ragen_envs.sokoban import SokobanConfig, generate_level, solve
from ragen_envs.sokoban.board import push_distances
from ragen_envs.sokoban.config import box_capacity
from ragen_envs.sokoban.generate import _constructed_level, level_from_text
from ragen_envs.sokoban.render import render_board
from tests.helpers.transcripts import check_golden

MOVES = {"Up": (-1, 0), "Down": (1, 0), "Left": (0, -1), "Right": (0, 1)}
VARIANTS = {  # id: (rows, cols, boxes, difficulty, max moves, seeds generated, seeds checked by the plain BFS)
    "ragen/Sokoban-v0": (6, 6, 1, 3, 10, 300, range(300)),
    "ragen/Sokoban-8x8-v0": (8, 8, 2, 8, 30, 100, range(100)),
    "ragen/Sokoban-10x10-v0": (10, 10, 3, 10, 100, 60, (3, 10)),  # seeds whose plain BFS is quick
}


# ---- an independent reading of the observation and a plain BFS solver ----------------------------------------
def parse_observation(obs: str) -> dict:
    """Read the board back from the observation text alone (the grid and the coordinate lines)."""
    grid = obs.split("Grid Map:\n", 1)[1].splitlines()
    cells = {(r, c): ch for r, row in enumerate(grid) for c, ch in enumerate(row)}

    def coords(label: str) -> list[tuple[int, int]]:
        line = re.search(rf"^{label}: (.*)$", obs, re.M).group(1)
        return [(int(a), int(b)) for a, b in re.findall(r"\((\d+), (\d+)\)", line)]

    return {
        "grid": grid,
        "walls": {p for p, ch in cells.items() if ch == "#"},
        "targets": {p for p, ch in cells.items() if ch in "O√S"},
        "boxes": {p for p, ch in cells.items() if ch in "X√"},
        "player": [p for p, ch in cells.items() if ch in "PS"],
        "listed": {"targets": coords("Targets"), "boxes": coords("Boxes"), "player": coords("Player")},
    }


def bfs_moves(board: dict, limit: int = 2_000_000) -> int | None:
    """Fewest moves that put every box on a target: breadth-first over (player, boxes), no pruning at all."""
    walls, targets = board["walls"], frozenset(board["targets"])
    start = (board["player"][0], frozenset(board["boxes"]))
    if start[1] == targets:
        return 0
    seen, frontier, depth = {start}, [start], 0
    while frontier and len(seen) < limit:
        depth += 1
        nxt = []
        for (r, c), boxes in frontier:
            for dr, dc in MOVES.values():
                ahead = (r + dr, c + dc)
                if ahead in walls:
                    continue
                new_boxes = boxes
                if ahead in boxes:
                    beyond = (r + 2 * dr, c + 2 * dc)
                    if beyond in walls or beyond in boxes:
                        continue
                    new_boxes = (boxes - {ahead}) | {beyond}
                state = (ahead, new_boxes)
                if state in seen:
                    continue
                if new_boxes == targets:
                    return depth
                seen.add(state)
                nxt.append(state)
        frontier = nxt
    return None


def replay_names(board: dict, names: list[str]) -> frozenset:
    """Play move names with the rules written out again here; return the final box set."""
    (r, c), boxes = board["player"][0], set(board["boxes"])
    for name in names:
        dr, dc = MOVES[name]
        ahead, beyond = (r + dr, c + dc), (r + 2 * dr, c + 2 * dc)
        if ahead in board["walls"]:
            continue
        if ahead in boxes:
            if beyond in board["walls"] or beyond in boxes:
                continue
            boxes = (boxes - {ahead}) | {beyond}
        r, c = ahead
    return frozenset(boxes)


# ---- generated levels -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", VARIANTS)
def test_generated_levels_are_well_formed_solvable_and_hard_enough(env_id):
    rows, cols, n, difficulty, max_moves, seeds, bfs_seeds = VARIANTS[env_id]
    env = gym.make(env_id).unwrapped
    lengths = []
    for seed in range(seeds):
        obs, info = env.reset(seed=seed)
        board = parse_observation(obs)
        assert set("".join(board["grid"])) <= set("#_OX√PS")
        assert len(board["grid"]) == rows and {len(row) for row in board["grid"]} == {cols}
        assert all(ch == "#" for ch in board["grid"][0] + board["grid"][-1])
        assert all(row[0] == row[-1] == "#" for row in board["grid"])
        assert len(board["boxes"]) == len(board["targets"]) == n and len(board["player"]) == 1
        assert board["boxes"] != board["targets"], "already solved"
        assert sorted(board["listed"]["targets"]) == sorted(board["targets"])
        assert sorted(board["listed"]["boxes"]) == sorted(board["boxes"])
        assert board["listed"]["player"] == board["player"]
        # The solution the env holds, replayed with this file's own rules, solves the level.
        names = [ragen_envs.sokoban.ACTIONS[d] for d in env.level.solution]
        assert replay_names(board, names) == frozenset(board["targets"])
        assert info["solution_moves"] == len(names) <= max_moves
        assert info["difficulty_met"] and info["lower_bound_moves"] >= difficulty
        assert info["lower_bound_moves"] <= info["solution_moves"]
        if info["optimal_moves"] is not None:
            assert info["optimal_moves"] == info["solution_moves"] == info["lower_bound_moves"]
        if seed in bfs_seeds:
            optimum = bfs_moves(board)
            if info["optimal_moves"] is not None:
                assert optimum == info["optimal_moves"], f"seed {seed}"
            else:  # not exact: the BFS optimum lies between the proven bound and the verified solution
                assert info["lower_bound_moves"] <= optimum <= info["solution_moves"], f"seed {seed}"
        lengths.append(info["solution_moves"])
    assert len(set(lengths)) > 2, "difficulty does not vary"


def test_exact_where_affordable():
    for env_id in ("ragen/Sokoban-v0", "ragen/Sokoban-8x8-v0"):
        env = gym.make(env_id)
        assert all(env.reset(seed=s)[1]["optimal_moves"] is not None for s in range(40)), env_id


def test_default_levels_are_not_trivial():
    env = gym.make("ragen/Sokoban-v0")
    optimal = [env.reset(seed=s)[1]["optimal_moves"] for s in range(200)]
    assert min(optimal) >= 3 and np.median(optimal) >= 5 and max(optimal) <= 10


def test_difficulty_zero_still_never_gives_a_solved_level():
    config = SokobanConfig(difficulty=0)
    for seed in range(100):
        level = generate_level(np.random.default_rng(seed), config)
        assert set(level.boxes) != set(level.targets) and level.solution_moves >= 1


def test_generation_is_a_pure_function_of_the_rng():
    config = SokobanConfig(rows=8, cols=7, num_boxes=2, difficulty=5, max_moves=30)
    a = [generate_level(np.random.default_rng(s), config) for s in range(20)]
    b = [generate_level(np.random.default_rng(s), config) for s in range(20)]
    assert a == b and len({level.boxes + level.targets for level in a}) > 15


def test_generation_never_fails_on_random_valid_configs():
    rng = np.random.default_rng(7)
    for i in range(40):
        rows, cols = int(rng.integers(4, 13)), int(rng.integers(5, 13))
        boxes = int(rng.integers(1, min(box_capacity(rows, cols), 4) + 1))
        max_moves = int(rng.integers(1, 60))
        config = SokobanConfig(
            rows=rows,
            cols=cols,
            num_boxes=boxes,
            difficulty=int(rng.integers(0, max_moves + 1)),
            max_moves=max_moves,
            max_attempts=20,
        )
        level = generate_level(np.random.default_rng(i), config)
        board = parse_observation(render_board(rows, cols, level.walls, level.targets, level.boxes, level.player))
        names = [ragen_envs.sokoban.ACTIONS[d] for d in level.solution]
        assert len(board["boxes"]) == len(board["targets"]) == boxes, config
        assert board["boxes"] != board["targets"] and replay_names(board, names) == frozenset(board["targets"])
        assert level.fallback or level.lower_bound >= config.difficulty


def test_unreachable_difficulty_falls_back_to_a_verified_level():
    # A 2×3 interior has no 1-box level needing 10 moves.
    config = SokobanConfig(rows=4, cols=5, num_boxes=1, difficulty=10, max_moves=10, max_attempts=5)
    for seed in range(10):
        level = generate_level(np.random.default_rng(seed), config)
        board = parse_observation(render_board(4, 5, level.walls, level.targets, level.boxes, level.player))
        assert level.fallback and 1 <= bfs_moves(board) == level.solution_moves <= 10


@pytest.mark.parametrize("shape", [(4, 5), (5, 4), (6, 6), (9, 7), (10, 10)])
def test_constructed_fallback_holds_the_full_capacity(shape):
    rows, cols = shape
    config = SokobanConfig(rows=rows, cols=cols, num_boxes=box_capacity(rows, cols), difficulty=0, max_moves=500)
    level = _constructed_level(config)
    board = parse_observation(render_board(rows, cols, level.walls, level.targets, level.boxes, level.player))
    names = [ragen_envs.sokoban.ACTIONS[d] for d in level.solution]
    assert len(board["boxes"]) == config.num_boxes and level.fallback
    assert replay_names(board, names) == frozenset(board["targets"])


def test_solver_is_move_optimal_on_arbitrary_states():
    """From states along random walks (not just generated starts), A* agrees with the plain BFS."""
    rng = np.random.default_rng(0)
    config = SokobanConfig(rows=7, cols=7, num_boxes=2, difficulty=4, max_moves=40)
    checked = 0
    for seed in range(8):
        level = generate_level(np.random.default_rng(seed), config)
        env = gym.make("ragen/Sokoban-v0", max_turns=50).unwrapped
        grid = render_board(level.rows, level.cols, level.walls, level.targets, level.boxes, level.player)
        env.reset(options={"level": grid.split("Grid Map:\n")[1]})
        for _ in range(6):
            env.step(f"<think></think><answer>{['Up', 'Down', 'Left', 'Right'][rng.integers(4)]}</answer>")
            board = parse_observation(env._observe())
            expected = bfs_moves(board)
            result = solve(level.walls, level.cols, level.targets, env.player, tuple(sorted(env.boxes)))
            if expected is None:
                assert result.status == "unsolvable"
            else:
                assert result.solved and len(result.moves) == expected
                checked += 1
    assert checked > 20


# ---- rules and rewards ---------------------------------------------------------------------------------------
TWO_BOXES = """
#######
#P√___#
#_____#
#_X_O_#
#######
"""


def _custom(grid: str, **kwargs):
    env = gym.make("ragen/Sokoban-v0", **{"max_turns": 30, **kwargs}).unwrapped
    env.reset(seed=0, options={"level": grid})
    return env


def _act(env, *names):
    return env.step(f"<think>t</think><answer>{' || '.join(names)}</answer>")


def test_rewards_push_off_onto_target_wall_bump_and_solve():
    env = _custom(TWO_BOXES, max_actions_per_turn=1)
    _, reward, *_, info = _act(env, "Right")  # pushes the box on (1, 2) off its target
    assert reward == pytest.approx(-1.1) and info["action_is_effective"] and info["boxes_on_target"] == 0
    _, reward, *_, info = _act(env, "Up")  # wall: valid, not effective
    assert reward == pytest.approx(-0.1) and info["action_is_valid"] and not info["action_is_effective"]
    for name in ("Down", "Right", "Right", "Up"):  # walk round to (1, 4), no push
        _, reward, *_, info = _act(env, name)
        assert reward == pytest.approx(-0.1) and info["action_is_effective"]
    _, reward, terminated, _, info = _act(env, "Left")  # back onto its target
    assert reward == pytest.approx(0.9) and not terminated and info["boxes_on_target"] == 1
    for name in ("Down", "Left", "Left", "Down"):
        _act(env, name)
    _, reward, terminated, _, info = _act(env, "Right")  # (3, 2) -> (3, 3)
    assert reward == pytest.approx(-0.1) and not terminated
    _, reward, terminated, truncated, info = _act(env, "Right")  # (3, 3) -> (3, 4): solved
    assert terminated and not truncated and info["success"] and info["boxes_on_target"] == 2
    assert reward == pytest.approx(-0.1 + 1 + 10)


def test_push_into_box_or_wall_is_not_effective():
    env = _custom("""
#######
#_____#
#PXX__#
#_____#
#_OO__#
#######
""")
    before = env._observe()
    _, reward, *_, info = _act(env, "Right")
    assert reward == pytest.approx(-0.1) and not info["action_is_effective"] and env._observe() == before


def test_actions_are_case_insensitive_and_extra_ones_dropped():
    env = _custom(TWO_BOXES, max_actions_per_turn=2)
    *_, info = _act(env, "dOWN", " left ", "Up")
    assert info["parsed_actions"] == ["dOWN", "left"] and info["action_is_valid"]
    assert env.player == 2 * 7 + 1  # Down, then Left into the wall


def test_incremental_render_matches_a_full_redraw():
    rng = np.random.default_rng(1)
    env = gym.make("ragen/Sokoban-10x10-v0", max_turns=400, max_actions_per_turn=1).unwrapped
    for seed in range(3):
        env.reset(seed=seed)
        for _ in range(120):
            obs, *_, terminated, truncated, _ = env.step(
                f"<answer>{['Up', 'Down', 'Left', 'Right'][rng.integers(4)]}</answer>".replace(
                    "<answer>", "<think></think><answer>"
                )
            )
            lv = env.level
            assert obs.endswith(render_board(lv.rows, lv.cols, lv.walls, lv.targets, env.boxes, env.player))
            if terminated or truncated:
                break


def test_oracle_replans_after_the_agent_leaves_the_plan():
    env = gym.make("ragen/Sokoban-8x8-v0", max_turns=40).unwrapped
    for seed in range(5):
        _, info = env.reset(seed=seed)
        _act(env, "Up", "Left")  # almost surely off the plan
        done = False
        while not done:
            _, _, terminated, truncated, info = env.step(env.oracle_response())
            done = terminated or truncated
        assert info["success"], seed


def test_oracle_reasoning_talks_about_the_board():
    env = gym.make("ragen/Sokoban-v0")
    obs, info = env.reset(seed=3)
    response = env.unwrapped.oracle_response()
    player = re.search(r"^Player: (.*)$", obs, re.M).group(1)
    assert f"I am at {player}" in response and f"takes {info['optimal_moves']} moves" in response


def test_oracle_plays_optimally_where_the_level_has_only_a_verified_solution():
    env = gym.make("ragen/Sokoban-10x10-v0").unwrapped
    obs, info = env.reset(seed=3)
    optimum = bfs_moves(parse_observation(obs))
    assert info["optimal_moves"] is None and info["lower_bound_moves"] <= optimum < info["solution_moves"]
    assert f"An optimal solution from here takes {optimum} moves" in env.oracle_response()
    moves, done = 0, False
    while not done:
        response = env.oracle_response()
        _, _, terminated, truncated, info = env.step(response)
        moves += len(info["parsed_actions"])
        done = terminated or truncated
    assert info["success"] and moves == optimum


def test_level_from_text_rejects_bad_maps():
    with pytest.raises(ValueError, match="unknown symbol"):
        level_from_text("#####\n#P?O#\n#####")
    with pytest.raises(ValueError, match="as many targets as boxes"):
        level_from_text("######\n#PXOO#\n######")
    with pytest.raises(ValueError, match="unsolvable"):
        level_from_text("#####\n#X_P#\n#O__#\n#####")
    with pytest.raises(ValueError, match="border"):
        level_from_text("#####\n_PXO#\n#####")
    with pytest.raises(ValueError, match="must be a grid string"):
        gym.make("ragen/Sokoban-v0").reset(options={"level": 42})


# ---- bad kwargs ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"room_size": 3}, r"rows must be in \[4, 30\], got 3"),
        ({"room_size": (6, 2)}, r"cols must be in \[4, 30\], got 2"),
        ({"room_size": 4}, "at least 5 on one side"),
        ({"room_size": "big"}, r"room_size must be an int or a \(rows, cols\) pair"),
        ({"room_size": "8x10"}, r"got '8x10'; did you mean room_size=\(8, 10\)\?"),
        ({"room_size": "7"}, r"did you mean room_size=7\?"),
        ({"num_boxes": 0}, r"num_boxes \(for a 6×6 room\) must be in \[1, 3\], got 0"),
        ({"num_boxes": 9}, r"num_boxes \(for a 6×6 room\) must be in \[1, 3\], got 9"),
        ({"num_boxes": 1.5}, "num_boxes .* must be an integer"),
        ({"difficulty": -1}, r"difficulty .* must be in \[0, 10\], got -1"),
        ({"difficulty": 11}, r"difficulty .*max_turns × max_actions_per_turn.* must be in \[0, 10\], got 11"),
        ({"max_attempts": 0}, r"max_attempts must be in \[1, 100000\]"),
        ({"max_turns": 0}, r"max_turns must be in \[1, inf\]"),
    ],
)
def test_bad_kwargs_raise_value_error_naming_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gym.make("ragen/Sokoban-v0", **kwargs)


def test_default_difficulty_fits_a_small_action_budget():
    env = gym.make("ragen/Sokoban-v0", max_turns=1, max_actions_per_turn=2)
    _, info = env.reset(seed=0)
    assert env.unwrapped.config.difficulty == 2 and info["optimal_moves"] == 2


def test_push_distances_mark_dead_corners():
    level = level_from_text("######\n#P___#\n#_XO_#\n######")
    pushes = push_distances(level.walls, level.cols, level.targets)
    assert pushes[level.cols + 1] > 10**6  # the top-left corner can never reach a target
    assert pushes[2 * level.cols + 2] == 1


# ---- golden transcripts --------------------------------------------------------------------------------------
GOLDEN_CASES = {  # name: (env id, seed, scripted responses played before the oracle takes over)
    "sokoban_6x6_seed0": ("ragen/Sokoban-v0", 0, []),
    "sokoban_6x6_seed1": (
        "ragen/Sokoban-v0",
        1,
        ["<think>left</think><answer>Left || up</answer>", "no tags", "<think>?</think><answer>Jump || Down</answer>"],
    ),
    "sokoban_8x8_seed2": (
        "ragen/Sokoban-8x8-v0",
        2,
        ["<think>a</think><answer>RIGHT || Right || right || Up</answer>", "<think>b</think><answer></answer>"],
    ),
}


@pytest.mark.parametrize("name", GOLDEN_CASES)
def test_golden_transcript(name):
    check_golden(name, *GOLDEN_CASES[name], oracle=True)
