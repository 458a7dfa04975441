"""The MI batch: duplicate contexts/texts are scored once without changing any number; sampling schemes."""

from __future__ import annotations

import numpy as np
import pytest

from harness.agents import Agent, Context
from harness.agents.scripted import RandomAgent
from harness.mi import Pairs, collapse_for, first_turn_pairs, score_pairs, subsample_columns, trajectory_pairs
from harness.mi.estimator import collapse_metrics
from harness.seeding import derive_seed
from tests.helpers.paths import TINY_MODEL


def fake_logprob(context: Context, text: str) -> float:
    return -1.0 - (derive_seed(context.key(), text) % 1000) / 100.0


class Recording(Agent):
    can_score = True
    spec = "recording"

    def __init__(self):
        self.calls = []

    def generate(self, requests):
        raise NotImplementedError

    def score_matrix(self, contexts, texts, wanted=None):
        self.calls.append((len(contexts), len(texts)))
        self.entries = getattr(self, "entries", 0) + (len(contexts) * len(texts) if wanted is None else wanted.sum())
        sums = np.array([[fake_logprob(c, t) for c in contexts] for t in texts])
        if wanted is not None:  # what was not wanted must not be read: make it poison
            sums = np.where(wanted, sums, np.nan)
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
    """A record whose turn ``i`` saw the chat (system ``s<seed>``, user ``s<seed> t<i>``): a window of 0 turns."""
    turn = {"prefill": "<think>", "response": "", "reward": 0.0, "info": {}}
    turns = [{**turn, "turn": i + 1, "user": f"s{seed} t{i}", "reasoning": r} for i, r in enumerate(reasonings)]
    return {"agent": "scripted", "env_id": "ragen/Bandit-v0", "seed": seed, "sample": sample, "context_turns": 0,
            "instructions": f"s{seed}", "turns": turns, "return": 0.0, "success": False, "num_turns": len(turns)}  # fmt: skip


def test_sampling_schemes_columns_and_skipped_turns():
    episodes = [record(s, k, [f"r{s}{k}", None, f"q{s}{k}"]) for s in range(5) for k in range(3)]
    episodes.append(record(9, 0, [None]))  # no reasoning at all: never drawn
    first = first_turn_pairs(episodes, np.random.default_rng(0), 64)
    assert len(first.texts) == 15 and len(first.contexts) == 5  # one column per seed
    assert all(
        first.contexts[c].messages[0]["content"].startswith(f"s{t[1]}")
        for t, c in zip(first.texts, first.own, strict=True)
    )
    traj = trajectory_pairs(episodes, np.random.default_rng(0), 64)
    assert len(traj.contexts) == len(traj.texts) == 64 and list(traj.own) == list(range(64))
    assert all(t is not None and not t.startswith("r9") for t in traj.texts)
    assert {c.messages[-1]["content"].split()[1] for c in traj.contexts} == {"t0", "t2"}  # turn 1 (None) skipped
    assert traj.equivalent.sum() > 64  # repeated draws of one turn are equivalent columns


def test_column_subsampling_scores_only_the_drawn_entries_of_unchanged_pairs():
    episodes = [record(s, k, [f"r{s}{k} x", f"q{s}{k} y"]) for s in range(12) for k in range(4)]
    dense = trajectory_pairs(episodes, np.random.default_rng(5), 32)
    rng = np.random.default_rng(5)
    sub = subsample_columns(trajectory_pairs(episodes, rng, 32), rng, 4)
    assert sub.texts == dense.texts and list(sub.own) == list(dense.own)  # the draws come after the pairs
    assert (sub.scored.sum(axis=1) == 4).all() and sub.scored[np.arange(32), sub.own].all()
    agent = Recording()
    got = score_pairs(agent, sub)
    assert agent.calls == [(len({c.key() for c in sub.contexts}), len(set(sub.texts)))]  # one sparse call
    assert agent.entries <= 32 * 4  # only drawn (context, text) entries, each distinct one once
    keys = [c.key() for c in sub.contexts]
    sums = np.array([[fake_logprob(c, t) for c in sub.contexts] for t in sub.texts])
    counts = np.array([[len(t.split())] * len(keys) for t in sub.texts], dtype=float)
    want = collapse_metrics(sums / counts, sub.own, logp_sum=sums, equivalent=sub.equivalent, scored=sub.scored)
    for key in want:
        assert got[key].value == pytest.approx(want[key].value, nan_ok=True), key
    assert got["retrieval_chance"].value >= 1 / 4  # ranked among 4 scored columns (more if equivalents drawn)


def test_subsampling_with_as_many_columns_as_the_batch_is_the_dense_family():
    episodes = [record(s, k, [f"r{s}{k}"]) for s in range(3) for k in range(2)]
    rng = np.random.default_rng(0)
    pairs = first_turn_pairs(episodes, rng, 6)
    assert subsample_columns(pairs, rng, 3) is pairs and subsample_columns(pairs, rng, 9) is pairs
    with pytest.raises(ValueError, match="mi_columns must be >= 2"):
        subsample_columns(pairs, rng, 1)


def test_collapse_for_with_mi_columns_keeps_a_collapsed_agent_at_zero_mi_and_chance():
    words = ["maybe this looks right", "I think the next step", "try move check again"]
    episodes = [record(s, k, [words[(s + k) % 3], words[k % 3]]) for s in range(16) for k in range(4)]
    out = collapse_for(RandomAgent(), episodes, 0, 64, mi_columns=8)
    for scheme in ("first_turn", "trajectory"):
        m = out[scheme]
        assert m["mi_estimate"].value == pytest.approx(0.0, abs=1e-12)
        assert m["retrieval_accuracy"].value == pytest.approx(m["retrieval_chance"].value)
    assert out["first_turn"]["retrieval_chance"].value == pytest.approx(1 / 8)


def test_an_agent_without_wanted_still_gets_the_subsampled_family():
    class OldProtocol(Recording):
        def score_matrix(self, contexts, texts):  # written before score_matrix took ``wanted``
            return super().score_matrix(contexts, texts)

    episodes = [record(s, k, [f"r{s}{k} x"]) for s in range(8) for k in range(2)]
    rng = np.random.default_rng(1)
    sub = subsample_columns(first_turn_pairs(episodes, rng, 16), rng, 3)
    old, new = score_pairs(OldProtocol(), sub), score_pairs(Recording(), sub)
    assert {k: v.value for k, v in old.items()} == pytest.approx({k: v.value for k, v in new.items()})


def test_pair_draws_do_not_depend_on_where_the_model_lives():
    """The same model named by a relative or an absolute path (two checkouts) draws the same pairs."""
    episodes = [record(s, k, [f"r{s}{k} x", f"q{s}{k} y"]) for s in range(12) for k in range(4)]
    families = []
    for spec in ("hf:baselines/tiny/model", "hf:/home/a/ragen-envs/baselines/tiny/model", "hf:/tmp/clone/model"):
        agent = Recording()
        agent.spec = spec
        families.append(collapse_for(agent, episodes, run_seed=3, mi_samples=16))
    for scheme in ("first_turn", "trajectory"):
        values = [{k: (e.value, e.stderr) for k, e in family[scheme].items()} for family in families]
        assert values[0] == values[1] == values[2], scheme


@pytest.mark.slow
def test_the_tiny_models_mi_is_the_same_from_two_checkout_paths(tmp_path, monkeypatch):
    """hf: agents on two copies of the shipped model, one named relative to the working folder, one absolute."""
    import shutil

    from harness.agents.registry import make_agent

    shipped = TINY_MODEL
    if not (shipped / "model.safetensors").exists():
        pytest.skip("the tiny model is not shipped here")
    for name in ("one", "two"):
        shutil.copytree(shipped, tmp_path / name / "baselines" / "tiny" / "model")
    episodes = [record(s, k, [f"Arm {s} sounds bold", f"so I pull {k}"]) for s in range(6) for k in range(2)]
    monkeypatch.chdir(tmp_path / "one")
    relative = collapse_for(make_agent("hf:baselines/tiny/model"), episodes, run_seed=1, mi_samples=8)
    absolute = collapse_for(
        make_agent(f"hf:{tmp_path / 'two' / 'baselines' / 'tiny' / 'model'}"), episodes, run_seed=1, mi_samples=8
    )
    for scheme in ("first_turn", "trajectory"):
        for key, estimate in relative[scheme].items():
            assert estimate.value == pytest.approx(absolute[scheme][key].value, abs=1e-9, nan_ok=True), (scheme, key)


def test_a_memo_shared_across_calls_scores_each_pair_once_and_changes_no_number():
    episodes = [record(s, k, [f"r{s}{k} x", f"q{s}{k} y"]) for s in range(6) for k in range(2)]
    fresh = [collapse_for(Recording(), episodes, run_seed=seed, mi_samples=16) for seed in range(3)]
    agent, memo = Recording(), {}
    shared = [collapse_for(agent, episodes, run_seed=seed, mi_samples=16, memo=memo) for seed in range(3)]
    for a, b in zip(fresh, shared, strict=True):
        for scheme in ("first_turn", "trajectory"):
            assert {k: (e.value, e.stderr) for k, e in a[scheme].items()} == {
                k: (e.value, e.stderr) for k, e in b[scheme].items()
            }
    assert agent.entries == len(memo)  # every (context, text) pair sent to the agent once over the three calls
