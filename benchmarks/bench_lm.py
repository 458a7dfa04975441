"""LM agent speed with the tiny shipped model on CPU: generation and scoring tokens/s, MI family cost.

``python -m pytest benchmarks/bench_lm.py --benchmark-only -q`` (pytest-benchmark). Each benchmark stores
its figure in ``extra_info``: ``tokens_per_s`` for generation (new tokens) and scoring (teacher-forced
tokens), and for the MI family ``mi_fraction_of_rollout`` = (time to score a 64-pair first-turn batch
every-text-under-every-prompt) / (time to roll those 64 episodes out). Both the prefix-cached
``score_matrix`` and the naive all-pairs ``score`` path are measured, side by side in the same run.
"""

from __future__ import annotations

import time

import gymnasium as gym
import pytest

pytest.importorskip("transformers")

import ragen_envs  # noqa: E402,F401
from baselines.tiny.evaluate import rollout_lm  # noqa: E402
from harness.agents import Agent, AgentOptions, Context, Request, make_agent  # noqa: E402
from ragen_envs.parsing import parse_response  # noqa: E402

N = 64


@pytest.fixture(scope="module")
def agent():
    return make_agent("tiny", AgentOptions(temperature=1.0, max_new_tokens=128, device="cpu", batch_size=32))


def first_turn_contexts(env_id: str, n: int) -> list[Context]:
    env = gym.make(env_id)
    contexts = []
    for seed in range(n):
        obs, info = env.reset(seed=seed)
        messages = (
            {"role": "system", "content": info["instructions"]},
            {"role": "user", "content": f"Turn 1:\nState:\n{obs}"},
        )
        contexts.append(Context(messages, "<think>"))
    return contexts


@pytest.mark.parametrize("env_id", ["ragen/Bandit-v0", "ragen/Sokoban-v0"])
def test_generation_tokens_per_s(benchmark, agent, env_id):
    requests = [Request(c, i) for i, c in enumerate(first_turn_contexts(env_id, 32))]
    generations = benchmark.pedantic(agent.generate, args=(requests,), rounds=3, iterations=1)
    tokens = sum(g.num_tokens for g in generations)
    benchmark.extra_info["new_tokens"] = tokens
    benchmark.extra_info["tokens_per_s"] = tokens / benchmark.stats.stats.mean


def test_scoring_tokens_per_s(benchmark, agent):
    contexts = first_turn_contexts("ragen/Sokoban-v0", 32)
    texts = [g.text for g in agent.generate([Request(c, i) for i, c in enumerate(contexts)])]
    scores = benchmark.pedantic(agent.score, args=(contexts, texts), rounds=3, iterations=1)
    tokens = sum(s.num_tokens for s in scores)
    benchmark.extra_info["scored_tokens"] = tokens
    benchmark.extra_info["tokens_per_s"] = tokens / benchmark.stats.stats.mean


@pytest.mark.parametrize("path", ["prefix_cached_score_matrix", "all_pairs_score"])
def test_mi_family_cost_vs_rollout(benchmark, agent, path):
    env_id = "ragen/FrozenLake-v0"
    started = time.perf_counter()
    rollout_lm(agent, env_id, range(N), sample_seed=1)
    rollout_seconds = time.perf_counter() - started
    contexts = first_turn_contexts(env_id, N)
    texts = [
        parse_response("<think>" + g.text).thinking or g.text
        for g in agent.generate([Request(c, i) for i, c in enumerate(contexts)])
    ]
    score = agent.score_matrix if path == "prefix_cached_score_matrix" else lambda c, t: Agent.score_matrix(agent, c, t)
    benchmark.pedantic(score, args=(contexts, texts), rounds=1, iterations=1)
    benchmark.extra_info["rollout_seconds"] = rollout_seconds
    benchmark.extra_info["mi_fraction_of_rollout"] = benchmark.stats.stats.mean / rollout_seconds
