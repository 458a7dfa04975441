"""The MI batch: duplicate contexts/texts are scored once without changing any number; sampling schemes."""

from __future__ import annotations

import numpy as np
import pytest

from harness.agents import Agent, Context
from harness.metrics import collapse_metrics
from harness.mi import Pairs, first_turn_pairs, score_pairs, trajectory_pairs
from harness.seeding import derive_seed


def fake_logprob(context: Context, text: str) -> float:
    return -1.0 - (derive_seed(context.key(), text) % 1000) / 100.0


class Recording(Agent):
    can_score = True
    spec = "recording"

    def __init__(self):
        self.calls = []

    def generate(self, requests):
        raise NotImplementedError

    def score_matrix(self, contexts, texts):
        self.calls.append((len(contexts), len(texts)))
        sums = np.array([[fake_logprob(c, t) for c in contexts] for t in texts])
        counts = np.array([[len(t.split())] * len(contexts) for t in texts])
        return sums, counts


def ctx(text):
    return Context(({"role": "user", "content": text},), "<think>")


def test_duplicates_are_scored_once_with_identical_results():
    contexts = [ctx("a"), ctx("b"), ctx("a"), ctx("c")]
    texts = ["one two", "three", "one two", "four five six"]
    equivalent = np.array([[x.key() == y.key() for y in contexts] for x in contexts])
    pairs = Pairs(contexts, texts, np.arange(4), equivalent)
    agent, memo = Recording(), {}
    got = score_pairs(agent, pairs, memo)
    assert agent.calls == [(3, 3)]
    again = score_pairs(agent, Pairs(contexts[:2], texts[:2], np.arange(2), equivalent[:2, :2]), memo)
    assert agent.calls == [(3, 3)] and again["mi_estimate"].n == 2  # every pair came from the memo
    score_pairs(agent, Pairs([ctx("a"), ctx("d")], ["three", "new"], np.arange(2), np.eye(2, dtype=bool)), memo)
    assert agent.calls[1:] == [(1, 1), (1, 2)]  # only missing pairs: "a" lacks "new"; "d" lacks both texts
    sums = np.array([[fake_logprob(c, t) for c in contexts] for t in texts])
    counts = np.array([[len(t.split())] * 4 for t in texts], dtype=float)
    want = collapse_metrics(sums / counts, np.arange(4), logp_sum=sums, equivalent=equivalent)
    assert got.keys() == want.keys()
    for key in want:
        assert got[key].value == pytest.approx(want[key].value, nan_ok=True), key


def record(seed, sample, reasonings):
    turns = [
        {"prompt": [{"role": "user", "content": f"s{seed} t{i}"}], "prefill": "<think>", "reasoning": r, "response": ""}
        for i, r in enumerate(reasonings)
    ]
    return {"env_id": "ragen/Bandit-v0", "seed": seed, "sample": sample, "turns": turns}


def test_sampling_schemes_columns_and_skipped_turns():
    episodes = [record(s, k, [f"r{s}{k}", None, f"q{s}{k}"]) for s in range(5) for k in range(3)]
    episodes.append(record(9, 0, [None]))  # no reasoning at all: never drawn
    first = first_turn_pairs(episodes, np.random.default_rng(0), 64)
    assert len(first.texts) == 15 and len(first.contexts) == 5  # one column per seed
    assert all(first.contexts[c].messages[0]["content"].startswith(f"s{t[1]}") for t, c in zip(first.texts, first.own))
    traj = trajectory_pairs(episodes, np.random.default_rng(0), 64)
    assert len(traj.contexts) == len(traj.texts) == 64 and list(traj.own) == list(range(64))
    assert all(t is not None and not t.startswith("r9") for t in traj.texts)
    assert {c.messages[0]["content"].split()[1] for c in traj.contexts} == {"t0", "t2"}  # turn 1 (None) skipped
    assert traj.equivalent.sum() > 64  # repeated draws of one turn are equivalent columns
