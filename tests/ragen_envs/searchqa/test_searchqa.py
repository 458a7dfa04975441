"""SearchQA: the generated world, its questions (checked by a text-only reader), search, actions, reward, oracle."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragen_envs.searchqa.answers import score_answer
from ragen_envs.searchqa.env import SearchQAEnv, parse_action
from ragen_envs.searchqa.kb import KBConfig, knowledge_base
from ragen_envs.searchqa.retrieval import MAX_RESULT_CHARS, bm25_retriever
from ragen_envs.searchqa.solver import solve
from tests.helpers.transcripts import check_golden


def _episode_question(seed: int, **kwargs):
    env = SearchQAEnv(**kwargs)
    _, info = env.reset(seed=seed)
    return env, info


# ---- the world ----------------------------------------------------------------------------------------------
def test_world_is_the_same_in_every_process():
    code = (
        "from ragen_envs.searchqa.kb import KBConfig, generate; kb = generate(KBConfig(size=1000));"
        "print(kb.index_meta['content_sha256'])"
    )
    here = knowledge_base(KBConfig(size=1000)).index_meta["content_sha256"]
    for hash_seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": hash_seed}
        )
        assert out.stdout.strip() == here


def test_titles_are_unique_and_names_are_shared_as_configured():
    for distractors, low, high in ((0.0, 1.0, 1.6), (3.0, 3.0, 6.0)):
        kb = knowledge_base(KBConfig(size=3000, distractors=distractors))
        assert len(set(kb.titles)) == len(kb)
        people = [kb.titles[i] for i in kb.by_kind["person"]]
        surnames = {name.split()[-1] for name in people}
        assert low <= len(people) / len(surnames) <= high, (distractors, len(people) / len(surnames))


# ---- questions ----------------------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(seed=st.integers(0, 2**31 - 1), hops=st.sampled_from([None, 1, 2, 3, 4]))
def test_every_answer_is_what_a_text_only_reader_finds(seed, hops):
    env, info = _episode_question(seed, hops=hops)
    kb = env.passages
    assert solve(kb, info["question"]) == (info["answer"], tuple(info["gold_passages"]))
    assert info["hops"] == len(info["gold_passages"]) and (hops is None or info["hops"] == hops)
    assert info["gold_titles"] == [kb.titles[i] for i in info["gold_passages"]]


def test_the_reader_reads_the_text_not_the_facts():
    kb = knowledge_base(KBConfig())
    env, info = _episode_question(0, hops=1)
    (gold,) = info["gold_passages"]
    corrupted = type("Passages", (), {})()
    corrupted.titles, corrupted.by_title = kb.titles, kb.by_title
    corrupted.texts = list(kb.texts)
    corrupted.texts[gold] = corrupted.texts[gold].replace(info["answer"], "Nobody Atall")
    assert solve(corrupted, info["question"]) != (info["answer"], (gold,))


def test_questions_cover_both_kinds_and_every_hop_count():
    seen = set()
    env = SearchQAEnv()
    for seed in range(80):
        _, info = env.reset(seed=seed)
        seen.add((info["question_type"], info["hops"]))
    assert {("bridge", h) for h in (1, 2, 3, 4)} | {("comparison", 2), ("comparison", 4)} <= seen


def test_comparison_candidates_cannot_share_partial_credit():
    env = SearchQAEnv(hops=2)
    for seed in range(60):
        _, info = env.reset(seed=seed)
        if info["question_type"] == "comparison":
            a, b = (env.passages.titles[i] for i in info["gold_passages"])
            loser = b if info["answer"] == a else a
            assert not score_answer(loser, (info["answer"],)).success


# ---- search -------------------------------------------------------------------------------------------------
def test_index_is_cached_and_search_is_deterministic(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEN_ENVS_CACHE", str(tmp_path))
    kb = knowledge_base(KBConfig(size=500, seed=3))
    from ragen_envs.searchqa.retrieval import BM25Retriever

    first = BM25Retriever(kb)
    (cached,) = list(tmp_path.iterdir())
    stamp = (cached / "meta.json").stat().st_mtime_ns
    again = BM25Retriever(kb)
    assert (cached / "meta.json").stat().st_mtime_ns == stamp  # loaded, not rebuilt
    for title in kb.titles[:50]:
        assert first.search(title) == again.search(title)
        assert kb.by_title[title] in first.search(title, 20)


@pytest.mark.parametrize("query", ["", "   ", "!!!", "the of and which", "x" * 100_000, "é" * 3000, "[]\x00"])
def test_hostile_queries_return_a_bounded_list(query):
    hits = bm25_retriever(knowledge_base(KBConfig())).search(query)
    assert isinstance(hits, list) and len(hits) <= 5


# ---- actions, reward, info ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("search[Maren Holt]", ("search", "Maren Holt")),
        ("  SEARCH [ Maren   Holt ] ", ("search", "Maren Holt")),
        ("`finish`[a [b] c]", ("finish", "a [b] c")),
        ("finish[1,044,000]", ("finish", "1,044,000")),
        ("search[]", None),
        ("finish[   ]", None),
        ("search Maren Holt", None),
        ("lookup[x]", None),
        ("search[x", None),
        ("]search[", None),
        ("[x]", None),
    ],
)
def test_action_grammar(text, parsed):
    assert parse_action(text) == parsed


@given(st.text(max_size=300))
@settings(max_examples=300, deadline=None, database=None)
def test_parse_action_never_raises_and_bounds_its_argument(text):
    parsed = parse_action(text)
    assert parsed is None or (parsed[0] in ("search", "finish") and 0 < len(parsed[1]) <= 500)


def test_search_info_reports_gold_retrieval_and_the_observation_is_bounded():
    env, info = _episode_question(1, hops=2)
    obs, reward, terminated, truncated, step = env.step(
        f"<think>x</think><answer>search[{info['gold_titles'][0]}]</answer>"
    )
    assert reward == 0.0 and not terminated and step["action"] == "search"
    assert step["gold_retrieved"] == [info["gold_passages"][0]] and step["gold_recall"] == 0.5
    assert obs.startswith(f"Question: {info['question']}\nSearch results for '{info['gold_titles'][0]}':\n[1] ")
    assert len(obs) < MAX_RESULT_CHARS + 500
    _, _, _, _, step = env.step("<think>x</think><answer>search[zzzz qqqq]</answer>")
    assert step["retrieved"] == [] and step["gold_recall"] == 0.5 and not step["action_is_effective"]


@pytest.mark.parametrize(
    ("answer", "reward", "success"),
    [("gold", 1.0, True), ("the gold", 1.0, True), ("nothing like it", 0.0, False), ("", None, False)],
)
def test_finish_scores_like_ragen(answer, reward, success):
    env, info = _episode_question(2, hops=1)
    text = info["answer"] if answer in ("gold", "the gold") else answer
    text = f"the {text}" if answer == "the gold" else text
    obs, r, terminated, _, step = env.step(f"<think>x</think><answer>finish[{text}]</answer>")
    if reward is None:  # finish[] is no action: the format penalty, and the episode goes on
        assert r == env.format_penalty and not terminated
        return
    assert terminated and r == reward and step["success"] is success and step["exact_match"] is success


def test_partial_credit_follows_ragen():
    assert score_answer("Maren", ("Maren Holt",)) == (False, pytest.approx(2 / 3), pytest.approx(2 / 3), True)
    assert score_answer("Holt Maren Voss Tobin Kastrup", ("Maren Holt",)).success  # gameable, as in RAGEN
    assert not score_answer("Holt Maren Voss Tobin Kastrup", ("Maren Holt",), threshold=1.0).success
    assert score_answer("no", ("no",)).exact_match and score_answer("yes", ("no",)).f1 == 0.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hops": 5}, r"hops must be in \[1, 4\]"),
        ({"kb_size": 10}, "kb_size must be in"),
        ({"distractors": -1}, "distractors must be in"),
        ({"retriever": "dens"}, "retriever must be one of"),
        ({"corpus": "x.jsonl"}, "corpus= needs questions="),
        ({"retriever": "dense"}, "needs embeddings="),
        ({"hop": 2}, "Did you mean 'hops'"),
    ],
)
def test_bad_arguments_get_one_clear_line(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gym.make("ragen/SearchQA-v0", **kwargs)


# ---- oracle and transcript ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [{"hops": h} for h in (1, 2, 3, 4)] + [{"distractors": 4.0}, {"kb_size": 1000}])
def test_oracle_scores_one_through_the_gold_path(kwargs):
    env = gym.make("ragen/SearchQA-v0", **kwargs)
    for seed in range(12):
        _, info = env.reset(seed=seed)
        total, done, searches = 0.0, False, 0
        while not done:
            response = env.unwrapped.oracle_response()
            _, reward, terminated, truncated, step = env.step(response)
            total, done = total + reward, terminated or truncated
            searches += step["action"] == "search"
        assert step["success"] and total == 1.0 and step["gold_recall"] == 1.0
        assert searches <= info["hops"]  # at most one search per gold passage


def test_golden_transcript():
    env, info = _episode_question(4)
    responses = [
        f"<think>I will look the question up.</think><answer>search[{info['question']}]</answer>",
        "no tags at all",
        "<think>hmm</think><answer>lookup[x]</answer>",
    ]
    done = False
    for response in responses:
        env.step(response)
    while not done:  # then the oracle, from the state those turns left
        responses.append(env.oracle_response())
        _, _, terminated, truncated, _ = env.step(responses[-1])
        done = terminated or truncated
    record = check_golden("searchqa_seed4", "ragen/SearchQA-v0", 4, responses)
    assert [turn["reward"] for turn in record["turns"][1:3]] == [-0.1, -0.1]
    assert record["turns"][-1]["terminated"] and record["turns"][-1]["info"]["success"]


def test_searchqa_is_in_the_baseline_preset_and_the_official_suite():
    from harness.config import preset_config
    from leaderboard.suite import OFFICIAL

    plans = {plan.env_id: plan for plan in preset_config("baseline").envs}
    assert (plans["ragen/SearchQA-v0"].episodes, plans["ragen/SearchQA-v0"].samples) == (4, 4)
    assert OFFICIAL.entry("ragen/SearchQA-v0").seeds == tuple(range(10_000, 10_064))
