"""The shipped tiny model: loads offline, speaks the format, reasons about its input, beats ``random``.

Greedy rollouts through the ``tiny`` agent (the same code path as ``harness run``) on fixed seeds of the
three planning envs, against ``random`` on the same seeds. Greedy decoding over fixed seeds is
deterministic, so these thresholds are not flaky. Measured with the shipped model on seeds 0-63 (greedy):
Bandit 1.00 vs random 0.41, FrozenLake 0.56 vs 0.30, Sokoban 0.47 vs 0.00; the player's cell copied into the
first turn's reasoning 60/64 (FrozenLake) and 64/64 (Sokoban).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("transformers")

from baselines.tiny import MODEL_DIR  # noqa: E402
from baselines.tiny.data import DataConfig, record_episodes  # noqa: E402
from baselines.tiny.evaluate import rollout_lm, rollout_random  # noqa: E402
from baselines.tiny.train import encode_episode  # noqa: E402
from harness.agents import AgentOptions, Context, Request, make_agent  # noqa: E402
from ragen_envs.parsing import parse_response  # noqa: E402

SEEDS = range(64)
PLANNING = ("ragen/Bandit-v0", "ragen/FrozenLake-v0", "ragen/Sokoban-v0")


@pytest.fixture(scope="module")
def greedy():
    return make_agent("tiny", AgentOptions(temperature=0.0, max_new_tokens=128, device="cpu"))


@pytest.fixture(scope="module")
def rollouts(greedy):
    return {env_id: rollout_lm(greedy, env_id, SEEDS) for env_id in PLANNING}


def test_ships_small_safetensors_that_load_offline(monkeypatch):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    weights = list(MODEL_DIR.glob("*.safetensors"))
    assert weights and sum(p.stat().st_size for p in weights) <= 20 * 2**20
    model = AutoModelForCausalLM.from_pretrained(MODEL_DIR, local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR, local_files_only=True)
    assert model.config.model_type == "llama" and tokenizer.chat_template
    for tag in ("<think>", "</think>", "<answer>", "</answer>"):
        ids = tokenizer.encode(tag, add_special_tokens=False)
        assert len(ids) == 1 and tokenizer.decode(ids, skip_special_tokens=True) == tag
    log = json.loads((MODEL_DIR / "training_log.json").read_text())
    assert log["config"]["seed"] == 0 and log["train_seconds"] > 0


def test_training_tokens_are_the_chat_template_tokens():
    """The loss mask is built piecewise; its ids must equal those of the rendered chat the model is run on."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR, local_files_only=True)
    episodes = record_episodes("ragen/FrozenLake-v0", DataConfig(episodes_per_env=6, oracle_fraction=0.5), 1)
    for episode in episodes:
        ids, labels, _ = encode_episode(tokenizer, episode)
        rendered = tokenizer.apply_chat_template(list(episode.messages), tokenize=False)
        assert ids == tokenizer.encode(rendered, add_special_tokens=False)
        learned = tokenizer.decode([t for t, lab in zip(ids, labels, strict=True) if lab != -100])
        assert learned.count("</answer>") == sum(episode.targets)


@pytest.mark.slow
def test_speaks_the_format(rollouts):
    turns = sum(r["turns"] for results in rollouts.values() for r in results)
    parsed = sum(r["parsed"] for results in rollouts.values() for r in results)
    assert parsed / turns >= 0.95, f"{parsed}/{turns} responses parsed"


@pytest.mark.slow
@pytest.mark.parametrize("env_id", PLANNING)
def test_beats_random(rollouts, env_id):
    tiny = np.mean([r["success"] for r in rollouts[env_id]])
    rnd = np.mean([r["success"] for r in rollout_random(env_id, SEEDS)])
    assert tiny >= rnd + 0.15, f"{env_id}: tiny {tiny:.2f} vs random {rnd:.2f}"


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["ragen/FrozenLake-v0", "ragen/Sokoban-v0"])
def test_reasoning_copies_the_players_cell(greedy, env_id):
    """The first line of the reasoning is the player's cell as the observation gives it: read, not guessed
    (a model that ignored its input would be right about 1 time in 16 on a 4x4 lake)."""
    import re

    import gymnasium as gym

    env = gym.make(env_id)
    requests, cells = [], []
    for seed in SEEDS:
        obs, info = env.reset(seed=seed)
        messages = (
            {"role": "system", "content": info["instructions"]},
            {"role": "user", "content": f"Turn 1:\nState:\n{obs}"},
        )
        requests.append(Request(Context(messages, "<think>"), seed))
        cells.append(re.search(r"^Player: (.*)$", obs, re.MULTILINE).group(1))
    copied = 0
    for generation, cell in zip(greedy.generate(requests), cells, strict=True):
        thinking = parse_response("<think>" + generation.text).thinking or ""
        copied += thinking.startswith(f"Player: {cell}\n")
    assert copied >= 0.85 * len(cells), f"{copied}/{len(cells)}"


@pytest.mark.slow
def test_bandit_reasoning_names_the_bold_arm_on_screen(greedy):
    """In Bandit the reasoning names the bold arm actually on screen and pulls it: it depends on the input.
    (The cautious arm it names correctly only now and then, 2 of these 12 times: it often writes a frequent
    training name instead, a partly templated sentence; see docs/agents.md.)"""
    import gymnasium as gym

    env = gym.make("ragen/Bandit-v0")
    named = 0
    requests, bold = [], []
    for seed in range(12):
        obs, info = env.reset(seed=seed)
        messages = (
            {"role": "system", "content": info["instructions"]},
            {"role": "user", "content": f"Turn 1:\nState:\n{obs}"},
        )
        requests.append(Request(Context(messages, "<think>"), seed))
        bold.append(env.unwrapped.risky_name)
    for generation, arm in zip(greedy.generate(requests), bold, strict=True):
        response = parse_response("<think>" + generation.text)
        named += f"{arm} sounds bold" in response.thinking and response.answer.strip() == arm
    assert named >= 11


def test_score_equals_generation_logprobs():
    agent = make_agent("tiny", AgentOptions(temperature=1.0, max_new_tokens=64, device="cpu"))
    import gymnasium as gym

    env = gym.make("ragen/FrozenLake-v0")
    obs, info = env.reset(seed=5)
    context = Context(
        ({"role": "system", "content": info["instructions"]}, {"role": "user", "content": f"Turn 1:\nState:\n{obs}"}),
        "<think>",
    )
    generations = agent.generate([Request(context, seed) for seed in range(6)])
    scores = agent.score([context] * 6, [g.text for g in generations])
    for generation, score in zip(generations, scores, strict=True):
        assert score.num_tokens == generation.num_tokens
        assert score.logprob_sum == pytest.approx(sum(generation.token_logprobs), abs=1e-3)
    sums, counts = agent.score_matrix([context], [g.text for g in generations])
    assert sums[:, 0] == pytest.approx([s.logprob_sum for s in scores], abs=1e-3)
    again = agent.generate([Request(context, 3), Request(context, 0)])
    assert [g.text for g in again] == [generations[3].text, generations[0].text]
