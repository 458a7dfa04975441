"""The tiny model's recipe, without training: behaviour-cloning data, tokenizer, batching, config checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baselines.tiny.data import DataConfig, play_episode, record_episodes
from baselines.tiny.teacher import teacher_response
from harness.transcript import user_message

pytest.importorskip("tokenizers")


def test_episodes_are_deterministic_and_mix_oracle_perturbed_and_failed():
    config = DataConfig(episodes_per_env=40, oracle_fraction=0.25, random_prob=0.5, junk_prob=0.2)
    first = record_episodes("ragen/FrozenLake-v0", config, 1)
    assert first == record_episodes("ragen/FrozenLake-v0", config, 1)
    kinds = {episode.kind for episode in first}
    assert kinds == {"oracle", "perturbed", "failed"}
    for episode in first:
        assistants = [m for m in episode.messages if m["role"] == "assistant"]
        assert len(assistants) == len(episode.targets) and any(episode.targets)
        if episode.kind == "oracle":
            assert all(episode.targets) and episode.success
        if episode.kind == "failed":
            assert not episode.success
    assert any(not all(e.targets) for e in first)  # perturbed turns are context, not targets


def test_chat_is_the_harness_prompt():
    import gymnasium as gym

    env = gym.make("ragen/Sokoban-v0")
    episode = play_episode(env, 3, np.random.default_rng(0), 0.0, 0.0)
    obs, info = env.reset(seed=3)
    assert episode.messages[0] == {"role": "system", "content": info["instructions"]}
    assert episode.messages[1] == user_message(1, obs, None)
    assert episode.messages[2]["content"] == teacher_response(env)
    if len(episode.messages) > 3:
        assert episode.messages[3]["content"].startswith("Reward: ")


@pytest.mark.parametrize(
    ("env_id", "optimal_key"), [("ragen/FrozenLake-v0", "shortest_path_length"), ("ragen/Sokoban-v0", "optimal_moves")]
)
def test_teacher_wins_in_the_optimal_number_of_moves_and_reads_the_state(env_id, optimal_key):
    """Solver-checked: the teacher wins every episode in the proven optimal number of moves, and its reasoning
    starts by copying the player's cell from the observation it answers."""
    import re

    import gymnasium as gym

    env = gym.make(env_id)
    for seed in range(40):
        obs, info = env.reset(seed=seed)
        moves, done = 0, False
        while not done:
            response = teacher_response(env)
            player = re.search(r"Player: (\(\d+, \d+\))", obs).group(1)
            assert response.startswith(f"<think>Player: {player}\n"), (seed, response)
            moves += response.count(" || ") + 1
            obs, _, terminated, truncated, step_info = env.step(response)
            done = terminated or truncated
        assert step_info["success"], (env_id, seed)
        assert moves == info[optimal_key], (env_id, seed, moves, info[optimal_key])


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("episodes_per_env", 0, "episodes_per_env must be in"),
        ("oracle_fraction", 1.5, "oracle_fraction must be in"),
        ("random_prob", 0.95, "random_prob \\+ junk_prob must be <= 1"),
        ("envs", ("ragen/Sokoban",), "envs: 'ragen/Sokoban' has no teacher; .*did you mean 'ragen/Sokoban-v0'"),
        ("envs", ("ragen/WebShop-v0",), "envs: 'ragen/WebShop-v0' has no teacher; choose from ragen/Bandit-v0"),
        ("envs", (), "envs: name at least one of"),
        ("envs", ("ragen/Bandit-v0", "ragen/Bandit-v0"), "envs: each env at most once"),
    ],
)
def test_data_config_names_the_bad_field(field, value, match):
    with pytest.raises(ValueError, match=match):
        DataConfig(**{field: value})


def test_train_config_names_the_bad_field():
    from baselines.tiny.train import TrainConfig

    with pytest.raises(ValueError, match="hidden_size \\(100\\) must be divisible by num_heads \\(3\\)"):
        TrainConfig(hidden_size=100, num_heads=3)
    with pytest.raises(ValueError, match="batch_tokens must be in"):
        TrainConfig(batch_tokens=10)


def test_batches_group_similar_lengths_within_the_token_budget():
    from baselines.tiny.train import make_batches

    lengths = [int(x) for x in np.random.default_rng(0).integers(10, 500, size=300)]
    batches = make_batches(lengths, 2048, np.random.default_rng(1))
    assert sorted(i for batch in batches for i in batch) == list(range(300))
    for batch in batches:
        assert max(lengths[i] for i in batch) * len(batch) <= 2048


@pytest.fixture(scope="module")
def small_tokenizer():
    from baselines.tiny.tokenizer import train_tokenizer

    episodes = record_episodes("ragen/Bandit-v0", DataConfig(episodes_per_env=30, episodes_override=()), 0)
    texts = [m["content"] for e in episodes for m in e.messages]
    return train_tokenizer(texts, vocab_size=600, labels=("Player:", "Goal:"))


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_tokenizer_round_trips_any_text(small_tokenizer, text):
    ids = small_tokenizer.encode(text, add_special_tokens=False)
    assert small_tokenizer.decode(ids) == text


def test_tokenizer_keeps_digits_and_tags_apart(small_tokenizer):
    pieces = small_tokenizer.tokenize("<think>at (12, 3)</think><answer>Up</answer>")
    assert "<think>" in pieces and "</answer>" in pieces
    assert "1" in pieces and "2" in pieces and "3" in pieces


def test_cells_and_field_labels_are_single_tokens(small_tokenizer):
    pieces = small_tokenizer.tokenize("Player: (3, 1)\nGoal: (0, 2)\nUp (2, 1) ok")
    assert pieces[:5] == ["Player:", " (3, 1)", "Ċ", "Goal:", " (0, 2)"]
    assert " (2, 1)" in pieces


def test_field_labels_are_frequent_line_starting_labels():
    from baselines.tiny.tokenizer import field_labels

    texts = ["Player: (1, 2)\nGoal: (0, 0)\nGrid Map:\n__", "Player: (0, 1)\nnote Goal: (1, 1)", "Goal: (3, 3)"]
    assert field_labels(texts, min_count=2) == ("Goal:", "Player:")  # "Grid Map:" ends its line; mid-line ignored
    assert field_labels(texts, min_count=3) == ()


@pytest.mark.slow
def test_training_is_deterministic(tmp_path):
    """Two runs of a micro configuration of the recipe write byte-identical weights and tokenizer."""
    pytest.importorskip("torch")
    from baselines.tiny.train import TrainConfig, train

    config = TrainConfig(
        data=DataConfig(episodes_per_env=12, episodes_override=()),
        vocab_size=512,
        hidden_size=32,
        num_layers=1,
        num_heads=2,
        intermediate_size=64,
        batch_tokens=2048,
        epochs=1,
        eval_seeds=0,
    )
    runs = []
    for name in ("a", "b"):
        train(config, tmp_path / name, log=lambda _: None)
        runs.append({p.name: p.read_bytes() for p in (tmp_path / name).iterdir() if p.name != "training_log.json"})
    assert runs[0].keys() >= {"model.safetensors", "tokenizer.json", "config.json"}
    assert runs[0] == runs[1]


def test_the_default_recipe_is_the_shipped_models_and_searchqa_is_opt_in(tmp_path):
    import json

    from baselines.tiny import MODEL_DIR
    from baselines.tiny.data import SHIPPED_ENVS, TRAINABLE_ENVS
    from baselines.tiny.evaluate import trained_envs

    assert DataConfig().envs == SHIPPED_ENVS == trained_envs(str(MODEL_DIR))
    assert "ragen/SearchQA-v0" in TRAINABLE_ENVS and "ragen/SearchQA-v0" not in SHIPPED_ENVS
    (tmp_path / "training_log.json").write_text(json.dumps({"config": {"data": {"envs": list(TRAINABLE_ENVS)}}}))
    assert trained_envs(str(tmp_path)) == TRAINABLE_ENVS


def test_the_training_data_covers_searchqa_with_reasoning_copied_from_the_results():
    import ragen_envs
    from ragen_envs.parsing import reasoning_of

    assert "ragen/SearchQA-v0" in ragen_envs.registered_ids()
    config = DataConfig(episodes_per_env=10, oracle_fraction=0.5)
    episodes = record_episodes("ragen/SearchQA-v0", config, 3)
    assert episodes == record_episodes("ragen/SearchQA-v0", config, 3)
    oracle = [episode for episode in episodes if episode.kind == "oracle"]
    assert oracle and all(episode.success and all(episode.targets) for episode in oracle)
    for episode in oracle:
        last_response = episode.messages[-1]["content"]
        answer = last_response.split("finish[", 1)[1].rsplit("]", 1)[0]
        # the final reasoning states the answer, which the search results shown earlier in the chat hold
        assert answer in reasoning_of(last_response, "think")
        observations = [m["content"] for m in episode.messages if m["role"] == "user"]
        assert any(answer in text.split("Search results for", 1)[-1] for text in observations[1:])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--envs", "ragen/Sokoban"], "envs: 'ragen/Sokoban' has no teacher; .*did you mean 'ragen/Sokoban-v0'"),
        (["--epochs", "0"], "epochs must be in"),
    ],
)
def test_the_training_cli_answers_a_bad_argument_in_one_line(tmp_path, capsys, argv, message):
    import re

    from baselines.tiny.train import main

    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--out", str(tmp_path / "model")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert re.search(message, err.strip().splitlines()[-1]) and "Traceback" not in err
    assert not (tmp_path / "model").exists()
