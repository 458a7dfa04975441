"""FrozenLake: map generator properties, dynamics, slip statistics, oracle, rendering, bad arguments, goldens."""

from __future__ import annotations

import math
import pickle
from collections import deque

import gymnasium as gym
import numpy as np
import pytest

from ragen_envs.frozen_lake import (
    ACTIONS,
    MAX_TRIES,
    FrozenLakeConfig,
    FrozenLakeEnv,
    bfs_layers,
    distance_to_goal,
    generate_map,
    render_frame,
    success_policy,
)
from tests.helpers.transcripts import check_golden

DELTAS = {"Left": (0, -1), "Down": (1, 0), "Right": (0, 1), "Up": (-1, 0)}


def think(*actions: str) -> str:
    return f"<think>plan</think><answer>{' || '.join(actions)}</answer>"


def reference_distance(size: int, holes: set[int], start: int, goal: int) -> int:
    """Textbook BFS over (row, col) cells, independent of the env's bitboard search; -1 if unreachable."""
    seen, queue = {start: 0}, deque([start])
    while queue:
        cell = queue.popleft()
        if cell == goal:
            return seen[cell]
        row, col = divmod(cell, size)
        for d_row, d_col in DELTAS.values():
            r, c = row + d_row, col + d_col
            nxt = r * size + c
            if 0 <= r < size and 0 <= c < size and nxt not in holes and nxt not in seen:
                seen[nxt] = seen[cell] + 1
                queue.append(nxt)
    return -1


def parse_grid(obs: str) -> list[str]:
    return obs.split("Grid Map:\n", 1)[1].split("\n")


# ---- generator ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("size", "frozen_prob", "budget", "seeds"),
    [(4, 0.9, 10, 3000), (8, 0.8, 20, 600), (5, 0.6, 6, 600), (3, 0.3, 4, 400), (2, 0.9, 10, 100)],
)
def test_every_generated_map_has_a_path_within_the_budget(size, frozen_prob, budget, seeds):
    config = FrozenLakeConfig(size=size, frozen_prob=frozen_prob, max_path_length=budget)
    for seed in range(seeds):
        lake = generate_map(np.random.default_rng(seed), config)
        holes = set(lake.hole_cells)
        assert lake.size == size
        assert 0 <= lake.start < size * size and 0 <= lake.goal < size * size
        assert lake.start != lake.goal
        assert lake.start not in holes and lake.goal not in holes
        assert lake.holes == sum(1 << cell for cell in holes)
        distance = reference_distance(size, holes, lake.start, lake.goal)
        assert 1 <= distance <= budget, (seed, lake)
        assert lake.shortest_path_length == distance, (seed, lake)
        layers = bfs_layers(size, lake.holes, lake.goal)
        assert distance_to_goal(layers, lake.start) == distance


def test_start_goal_and_holes_are_spread_over_the_board():
    config = FrozenLakeConfig()
    lakes = [generate_map(np.random.default_rng(seed), config) for seed in range(2000)]
    assert {lake.start for lake in lakes} == set(range(16))
    assert {lake.goal for lake in lakes} == set(range(16))
    hole_rate = sum(len(lake.hole_cells) for lake in lakes) / (len(lakes) * 14)  # start and goal are never holes
    assert 0.07 < hole_rate < 0.11  # 1 - frozen_prob, slightly less because maps must be solvable


def test_hopeless_draws_fall_back_after_a_bounded_number_of_tries():
    class AdversarialRng:
        """Every draw: all cells holes, start in the top-left corner, goal in the bottom-right one."""

        calls = 0

        def random(self, n):
            self.calls += 1
            draws = np.zeros(n)
            draws[-1] = 0.999
            return draws

    rng = AdversarialRng()
    lake = generate_map(rng, FrozenLakeConfig(size=6, frozen_prob=0.0, max_path_length=7))
    assert rng.calls == MAX_TRIES
    assert lake.start == 0 and lake.goal != lake.start
    assert reference_distance(6, set(lake.hole_cells), lake.start, lake.goal) == lake.shortest_path_length == 7
    # Holes everywhere except the 8 cells of the repaired path and the drawn goal (35), which was never a hole.
    assert set(lake.hole_cells) == set(range(36)) - {0, 1, 2, 3, 4, 5, 11, 17, 35}


def test_repair_keeps_the_whole_path_when_it_fits():
    class Rng:
        def random(self, n):
            draws = np.zeros(n)
            draws[-1] = 0.999
            return draws

    lake = generate_map(Rng(), FrozenLakeConfig(size=4, frozen_prob=0.0, max_path_length=10))
    assert (lake.start, lake.goal, lake.shortest_path_length) == (0, 15, 6)


def test_same_seed_same_map_and_different_seeds_differ():
    config = FrozenLakeConfig()
    assert generate_map(np.random.default_rng(5), config) == generate_map(np.random.default_rng(5), config)
    assert len({generate_map(np.random.default_rng(seed), config) for seed in range(50)}) > 45


def test_reset_info_carries_the_shortest_path_length():
    env = gym.make("ragen/FrozenLake-v0")
    for seed in range(50):
        _, info = env.reset(seed=seed)
        lake = env.unwrapped.lake
        assert info["shortest_path_length"] == reference_distance(4, set(lake.hole_cells), lake.start, lake.goal)


def test_8x8_variant_is_registered():
    env = gym.make("ragen/FrozenLake-8x8-v0")
    obs, _ = env.reset(seed=0)
    assert "Board size: 8 rows x 8 cols" in obs
    assert len(parse_grid(obs)) == 8 and all(len(row) == 8 for row in parse_grid(obs))
    assert env.unwrapped.max_turns * env.unwrapped.max_actions_per_turn >= 14


# ---- observation --------------------------------------------------------------------------------------------
def test_observation_matches_the_map():
    env = gym.make("ragen/FrozenLake-v0").unwrapped
    for seed in range(100):
        obs, _ = env.reset(seed=seed)
        lake = env.lake
        grid = parse_grid(obs)
        cells = "".join(grid)
        assert cells.count("P") == 1 and cells.index("P") == lake.start
        assert cells.index("G") == lake.goal
        assert [i for i, ch in enumerate(cells) if ch == "O"] == list(lake.hole_cells)
        srow, scol = divmod(lake.start, 4)
        assert f"Start: ({srow}, {scol})\n" in obs and f"Player: ({srow}, {scol})\n" in obs
        assert ("Holes: " in obs) == bool(lake.hole_cells)


def test_incremental_render_equals_a_fresh_render():
    env = gym.make("ragen/FrozenLake-v0", max_turns=40).unwrapped
    rng = np.random.default_rng(0)
    for seed in range(40):
        env.reset(seed=seed)
        done = False
        while not done:
            obs, _, terminated, truncated, _ = env.step(think(ACTIONS[int(rng.integers(4))]))
            done = terminated or truncated
            cached = env._observe()
            env._observations.clear()
            env._frame = None
            assert env._observe() == cached
            assert obs.endswith(cached)
        assert render_frame(env.lake)[2].replace("\n", "").count("G") == 1


def test_hole_and_goal_symbols():
    env = gym.make("ragen/FrozenLake-v0").unwrapped
    env.reset(seed=9)  # start (1, 1), holes (2, 0) and (3, 0), goal (2, 3)
    obs, reward, terminated, truncated, info = env.step(think("Down", "Left"))
    assert terminated and not truncated and reward == 0.0 and not info["success"]
    assert "Player in hole: (2, 0)" in obs and parse_grid(obs)[2][0] == "X"
    env.reset(seed=9)
    obs, reward, terminated, _, info = env.step(think("Right", "Right"))
    obs, reward, terminated, _, info = env.step(think("Down"))
    assert terminated and reward == 1.0 and info["success"]
    assert "Player on goal: (2, 3)" in obs and parse_grid(obs)[2][3] == "√"


# ---- dynamics -----------------------------------------------------------------------------------------------
def test_moves_follow_the_grid_and_the_edge_blocks():
    env = gym.make("ragen/FrozenLake-v0", frozen_prob=1.0, max_turns=50).unwrapped
    env.reset(seed=1)
    for name, (d_row, d_col) in DELTAS.items():
        for _ in range(5):
            if env._done:
                env.reset(seed=1)
            row, col = divmod(env.player, 4)
            _, _, terminated, _, info = env.step(think(name))
            r, c = min(max(row + d_row, 0), 3), min(max(col + d_col, 0), 3)
            if not terminated:
                assert divmod(env.player, 4) == (r, c)
                assert info["action_is_effective"] == ((r, c) != (row, col))
                assert info["moves"] == [name]


def test_actions_are_case_insensitive_and_extra_ones_are_dropped():
    env = gym.make("ragen/FrozenLake-v0", frozen_prob=1.0).unwrapped
    env.reset(seed=10)  # start (0, 2), goal (3, 0), no holes
    _, reward, _, _, info = env.step("<think>x</think><answer>dOwN ||  LEFT. || down</answer>")
    assert info["parsed_actions"] == ["dOwN", "LEFT."] and info["moves"] == ["Down", "Left"]
    assert info["action_is_valid"] and reward == 0.0
    assert divmod(env.player, 4) == (1, 1)


def test_unknown_action_costs_the_penalty_but_known_ones_are_played():
    env = gym.make("ragen/FrozenLake-v0").unwrapped
    env.reset(seed=10)
    obs, reward, _, _, info = env.step(think("Jump", "Down"))
    assert reward == pytest.approx(-0.1) and not info["action_is_valid"]
    assert info["moves"] == ["Down"] and divmod(env.player, 4) == (1, 2)
    assert obs.startswith("Unknown action(s) 'Jump' were ignored.")


def test_actions_after_the_episode_ends_are_ignored():
    env = gym.make("ragen/FrozenLake-v0").unwrapped
    env.reset(seed=7)  # start (3, 3), goal (2, 3) one step up
    _, reward, terminated, _, info = env.step(think("Up", "Left"))
    assert terminated and reward == 1.0 and info["moves"] == ["Up"]


def test_slip_rate_matches_the_argument():
    for slip in (0.0, 0.2, 0.5, 1.0):
        env = gym.make("ragen/FrozenLake-v0", frozen_prob=1.0, slip=slip, max_turns=10**6).unwrapped
        env.reset(seed=123)
        intended = ["Left", "Right", "Up", "Down"] * 1500
        slipped = sideways = 0
        perpendicular = {
            "Left": {"Down", "Up"},
            "Right": {"Down", "Up"},
            "Up": {"Left", "Right"},
            "Down": {"Left", "Right"},
        }
        left_turns = 0
        for name in intended:
            if env._done:
                env.reset()
            _, _, _, _, info = env.step(think(name))
            (taken,) = info["moves"]
            if taken != name:
                slipped += 1
                sideways += taken in perpendicular[name]
                left_turns += ACTIONS.index(taken) == (ACTIONS.index(name) - 1) % 4
        n = len(intended)
        assert sideways == slipped  # a slip is always perpendicular, never backwards
        assert abs(slipped / n - slip) <= 4 * math.sqrt(slip * (1 - slip) / n) + 1e-12
        if slipped:
            assert abs(left_turns / slipped - 0.5) <= 4 * math.sqrt(0.25 / slipped)


def test_same_seed_same_slips():
    def moves(seed):
        env = gym.make("ragen/FrozenLake-v0", frozen_prob=1.0, slip=0.4, max_turns=100).unwrapped
        env.reset(seed=seed)
        played = []
        for _ in range(30):
            if env._done:
                env.reset()
            played.append(env.step(think("Left", "Right"))[4]["moves"])
        return played

    assert moves(3) == moves(3)
    assert moves(3) != moves(4)


# ---- oracle -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", ["ragen/FrozenLake-v0", "ragen/FrozenLake-8x8-v0"])
def test_deterministic_oracle_walks_a_shortest_path(env_id):
    env = gym.make(env_id).unwrapped
    for seed in range(200):
        _, info = env.reset(seed=seed)
        moves, done = 0, False
        while not done:
            _, _, terminated, truncated, step_info = env.step(env.oracle_response())
            moves += len(step_info["moves"])
            done = terminated or truncated
        assert terminated and step_info["success"], seed
        assert moves == info["shortest_path_length"]


def test_slippery_oracle_achieves_the_success_probability_value_iteration_predicts():
    env = gym.make("ragen/FrozenLake-v0", slip=0.3).unwrapped
    predicted, wins, n = 0.0, 0, 400
    for seed in range(n):
        env.reset(seed=seed)
        _, value = success_policy(env.lake, 0.3, env.max_turns, env.max_actions_per_turn)
        predicted += value[env.max_turns - 1, env.lake.start]
        done = False
        while not done:
            _, _, terminated, truncated, info = env.step(env.oracle_response())
            done = terminated or truncated
        wins += info["success"]
    rate, predicted = wins / n, predicted / n
    assert abs(rate - predicted) <= 4 * math.sqrt(predicted * (1 - predicted) / n)
    assert rate > 0.7


def test_value_iteration_without_slip_is_certain_exactly_where_a_short_path_exists():
    env = gym.make("ragen/FrozenLake-v0").unwrapped
    for seed in range(30):
        env.reset(seed=seed)
        _, value = success_policy(env.lake, 0.0, 5, 2)
        layers = bfs_layers(4, env.lake.holes, env.lake.goal)
        for cell in range(16):
            if env.lake.holes >> cell & 1:
                continue
            distance = distance_to_goal(layers, cell)
            for turns in range(1, 6):
                assert value[turns - 1, cell] == (1.0 if 0 <= distance <= 2 * turns else 0.0)


def test_pickled_env_keeps_map_and_slip_stream():
    env = gym.make("ragen/FrozenLake-v0", slip=0.5, max_turns=20).unwrapped
    env.reset(seed=2)
    env.step(think("Right"))
    clone = pickle.loads(pickle.dumps(env))
    for _ in range(5):
        if env._done:
            break
        assert repr(env.step(think("Left", "Down"))) == repr(clone.step(think("Left", "Down")))


# ---- arguments ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"slip": -0.1}, r"slip must be in \[0.0, 1.0\]"),
        ({"slip": 1.5}, r"slip must be in \[0.0, 1.0\]"),
        ({"slip": float("nan")}, r"slip must be in \[0.0, 1.0\]"),
        ({"slip": "0.2"}, r"slip must be a number"),
        ({"frozen_prob": 1.2}, r"frozen_prob must be in \[0.0, 1.0\]"),
        ({"size": 1}, r"size must be in \[2, 16\]"),
        ({"size": 4.0}, r"size must be an integer"),
        ({"max_turns": 0}, r"max_turns must be in \[1, inf\]"),
        ({"is_slippery": True}, r"unknown argument 'is_slippery'\. Did you mean 'slip'\?"),
        ({"slipp": 0.1}, r"unknown argument 'slipp'\. Did you mean 'slip'\?"),
        ({"sizes": 4}, r"Did you mean 'size'\?"),
    ],
)
def test_bad_arguments_raise_value_error_naming_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        FrozenLakeEnv(**kwargs)
    with pytest.raises(ValueError, match=message):
        gym.make("ragen/FrozenLake-v0", **kwargs)


def test_slip_appears_in_the_instructions_only_when_slippery():
    _, info = gym.make("ragen/FrozenLake-v0").reset(seed=0)
    assert "slippery" not in info["instructions"]
    _, info = gym.make("ragen/FrozenLake-v0", slip=0.2).reset(seed=0)
    assert "with probability 0.8" in info["instructions"]


# ---- golden transcripts -------------------------------------------------------------------------------------
def test_golden_frozen_lake_detours_and_mistakes():
    # seed 10: start (0, 2), goal (3, 0), no holes. A bump, a format error, an unknown action, a case mix.
    check_golden(
        "frozen_lake_seed10",
        "ragen/FrozenLake-v0",
        10,
        [think("Up", "Left"), "I go down", think("down", "Jump"), think("DOWN", "left"), think("Down", "Left")],
    )


def test_golden_frozen_lake_falls_into_a_hole():
    check_golden("frozen_lake_seed9_hole", "ragen/FrozenLake-v0", 9, [think("Down", "Left"), think("Up")])


def test_golden_frozen_lake_slippery_answer_format():
    responses = ["<answer>Right || Right</answer>", "<answer>Down</answer>", "<answer>Down || Left</answer>"] * 2
    check_golden("frozen_lake_seed3_slip", "ragen/FrozenLake-v0", 3, responses, slip=0.5, response_format="answer")


def test_golden_frozen_lake_8x8_truncates():
    responses = [think("Left", "Right")] * 10  # start (2, 3): back and forth on safe ice
    check_golden("frozen_lake_8x8_seed0_truncated", "ragen/FrozenLake-8x8-v0", 0, responses)


def test_golden_frozen_lake_tool_format():
    # seed 10: start (0, 2), goal (3, 0), no holes. Two calls per turn; a wrong argument type; a third call dropped.
    def calls(*directions: object) -> str:
        return "".join(
            f'<tool_call>{{"name": "move", "arguments": {{"direction": {d}}}}}</tool_call>' for d in directions
        )

    responses = [
        calls('"Down"', "2"),
        "<think>down</think>" + calls('"down"', '"Left"', '"Left"'),
        calls('"Down"', '"Left"'),
    ]
    check_golden("frozen_lake_seed10_tool", "ragen/FrozenLake-v0", 10, responses, response_format="tool")
