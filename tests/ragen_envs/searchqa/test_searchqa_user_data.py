"""SearchQA over a user's files: HotpotQA-format questions, a JSONL/Parquet corpus or the questions' own context,
BM25 or a dense retriever over embeddings the user supplies. Everything here is written by the test."""

from __future__ import annotations

import json
import pickle
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest

from ragen_envs.datafiles import DatasetError
from ragen_envs.searchqa.retrieval import DenseRetriever

PASSAGES = [
    ("Lyra Okonkwo", "Lyra Okonkwo is a marine biologist. She was born in Port Elsby and studied at Hallam College."),
    ("Port Elsby", "Port Elsby is a harbour town on the Tarn estuary, founded in 1712."),
    ("Hallam College", "Hallam College is a college in Brenmoor, founded in 1850."),
    ("The Quiet Reef", "The Quiet Reef is a 2011 documentary directed by Lyra Okonkwo."),
    ("Brenmoor", "Brenmoor is a city in the northern hills, founded in 1640."),
    ("Tarn estuary", "The Tarn estuary is home to seals and wading birds."),
    ("Anders Vale", "Anders Vale is a painter born in Brenmoor in 1950."),
    ("Okonkwo Prize", "The Okonkwo Prize is given for writing about the sea."),
]
QUESTIONS = [
    {
        "_id": "q1",
        "question": "In what year was the birthplace of the director of The Quiet Reef founded?",
        "answer": "1712",
        "supporting_facts": [["The Quiet Reef", 0], ["Lyra Okonkwo", 1], ["Port Elsby", 0]],
        "type": "bridge",
    },
    {
        "_id": "q2",
        "question": "Which was founded earlier, Brenmoor or Port Elsby?",
        "answer": "Brenmoor",
        "supporting_facts": [["Brenmoor", 0], ["Port Elsby", 0]],
        "type": "comparison",
    },
    {
        "id": "q3",
        "question": "Where did the director of The Quiet Reef study?",
        "golden_answers": ["Hallam College", "Hallam"],
        "supporting_facts": ["The Quiet Reef", "Lyra Okonkwo", "A Page Not In The Corpus"],
    },
]


def _write(tmp_path, corpus_format="jsonl", questions=QUESTIONS):
    questions_path = tmp_path / "questions.jsonl"
    questions_path.write_text("".join(json.dumps(q) + "\n" for q in questions))
    if corpus_format == "jsonl":
        corpus_path = tmp_path / "corpus.jsonl"
        corpus_path.write_text(
            "".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, (t, x) in enumerate(PASSAGES))
        )
    elif corpus_format == "contents":
        corpus_path = tmp_path / "wiki.jsonl"
        corpus_path.write_text(
            "".join(json.dumps({"id": str(i), "contents": f'"{t}"\n{x}'}) + "\n" for i, (t, x) in enumerate(PASSAGES))
        )
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        corpus_path = tmp_path / "corpus.parquet"
        pq.write_table(pa.table({"title": [t for t, _ in PASSAGES], "text": [x for _, x in PASSAGES]}), corpus_path)
    return corpus_path, questions_path


def _play_oracle(env, seed):
    _, info = env.reset(seed=seed)
    done, total = False, 0.0
    while not done:
        _, reward, terminated, truncated, step = env.step(env.unwrapped.oracle_response())
        total, done = total + reward, terminated or truncated
    return info, step, total


@pytest.mark.parametrize("corpus_format", ["jsonl", "contents", "parquet"])
def test_a_user_corpus_runs_end_to_end(tmp_path, monkeypatch, corpus_format):
    monkeypatch.setenv("RAGEN_ENVS_CACHE", str(tmp_path / "cache"))
    corpus, questions = _write(tmp_path, corpus_format)
    env = gym.make("ragen/SearchQA-v0", corpus=str(corpus), questions=str(questions))
    asked = set()
    for seed in range(12):
        info, step, total = _play_oracle(env, seed)
        asked.add(info["question"])
        assert step["success"] and total == 1.0
        found = [t for t in info["gold_titles"] if t != "A Page Not In The Corpus"]
        assert [env.unwrapped.passages.titles[i] for i in info["gold_passages"]] == found
        assert step["gold_recall"] == 1.0  # BM25 finds every gold passage by its title
    assert asked == {q["question"] for q in QUESTIONS}
    # a wrong answer scores 0, and a second answer in golden_answers counts
    env.reset(seed=0)
    while env.unwrapped.question.text != QUESTIONS[2]["question"]:
        env.reset(seed=int(env.unwrapped.np_random.integers(1000)))
    assert env.step("<think>x</think><answer>finish[Hallam]</answer>")[1] == 1.0
    clone = pickle.loads(pickle.dumps(env.unwrapped))
    assert clone.passages.titles == env.unwrapped.passages.titles


def test_without_a_corpus_the_questions_context_is_the_collection(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEN_ENVS_CACHE", str(tmp_path / "cache"))
    by_title = dict(PASSAGES)
    records = [
        {**q, "context": [[t, [s + " " for s in by_title[t].split(". ")]] for t in by_title if t[0] in "LPHTB"]}
        for q in QUESTIONS[:2]
    ]
    questions = tmp_path / "hotpot_dev_distractor.json"
    questions.write_text(json.dumps(records))  # HotpotQA ships one JSON list
    env = gym.make("ragen/SearchQA-v0", questions=str(questions))
    assert len(env.unwrapped.passages.titles) == 6
    for seed in range(4):
        info, step, total = _play_oracle(env, seed)
        assert total == 1.0 and step["gold_recall"] == 1.0


class HashingEncoder:
    """A bag of words hashed into 64 dimensions, unit length: deterministic and dependency-free."""

    def __call__(self, texts):
        import zlib

        from ragen_envs.searchqa.retrieval import tokenize

        out = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            for term in tokenize(text):
                out[row, zlib.crc32(term.encode()) % 64] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-6)


def test_a_dense_retriever_over_user_embeddings(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEN_ENVS_CACHE", str(tmp_path / "cache"))
    corpus, questions = _write(tmp_path)
    encoder = HashingEncoder()
    embeddings = tmp_path / "passages.npy"
    np.save(embeddings, encoder([f"{t} {x}" for t, x in PASSAGES]))
    # the encoder as "module:function", the JSON-able form a harness run records
    (tmp_path / "my_encoder.py").write_text(
        textwrap.dedent("""
        from test_searchqa_user_data import HashingEncoder
        encode = HashingEncoder()
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    env = gym.make(
        "ragen/SearchQA-v0", corpus=str(corpus), questions=str(questions), retriever="dense",
        embeddings=str(embeddings), query_encoder="my_encoder:encode",
    )  # fmt: skip
    retriever = env.unwrapped.retriever
    assert isinstance(retriever, DenseRetriever) and retriever.backend == (
        "faiss" if "faiss" in sys.modules else "numpy"
    )
    for i, (title, _) in enumerate(PASSAGES):
        assert retriever.search(title)[0] == i
    assert retriever.search("") == [] and retriever.search("   ") == []
    info, step, total = _play_oracle(env, 1)
    assert total == 1.0
    # the same env with a callable encoder gives the same results
    same = gym.make("ragen/SearchQA-v0", corpus=str(corpus), questions=str(questions), retriever="dense",
                    embeddings=str(embeddings), query_encoder=encoder).unwrapped  # fmt: skip
    assert [same.retriever.search(t) for t, _ in PASSAGES] == [retriever.search(t) for t, _ in PASSAGES]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda q: {k: v for k, v in q.items() if k != "answer"}, r"questions.jsonl:1: no answer field"),
        (lambda q: {**q, "question": ""}, r"questions.jsonl:1: field 'question' must be non-empty text"),
        (lambda q: {**q, "supporting_facts": 3}, r"questions.jsonl:1: supporting_facts must be"),
        (
            lambda q: {k: v for k, v in q.items() if k != "question"} | {"qestion": "x"},
            r"questions.jsonl:1: field 'question' is missing\. Did you mean 'qestion'\?",
        ),
    ],
)
def test_bad_question_files_get_one_line_naming_the_place(tmp_path, mutate, message):
    corpus, questions = _write(tmp_path, questions=[mutate(QUESTIONS[0]), *QUESTIONS[1:]])
    with pytest.raises(DatasetError, match=message):
        gym.make("ragen/SearchQA-v0", corpus=str(corpus), questions=str(questions))


def test_bad_corpus_and_embeddings_get_one_line(tmp_path):
    corpus, questions = _write(tmp_path)
    corpus.write_text('{"title": "x"}\n')
    with pytest.raises(DatasetError, match=r"corpus.jsonl:1: field 'text' is missing"):
        gym.make("ragen/SearchQA-v0", corpus=str(corpus), questions=str(questions))
    corpus, questions = _write(tmp_path)
    with pytest.raises(FileNotFoundError, match="Did you mean 'questions.jsonl'"):
        gym.make("ragen/SearchQA-v0", corpus=str(corpus), questions=str(tmp_path / "question.jsonl"))
    np.save(tmp_path / "short.npy", np.zeros((3, 8), dtype=np.float32))
    with pytest.raises(ValueError, match=r"embeddings must have shape \(8, d\)"):
        gym.make("ragen/SearchQA-v0", corpus=str(corpus), questions=str(questions), retriever="dense",
                 embeddings=str(tmp_path / "short.npy"), query_encoder=HashingEncoder())  # fmt: skip
    np.save(tmp_path / "good.npy", np.zeros((8, 8), dtype=np.float32))
    with pytest.raises(ValueError, match="query_encoder 'nope:missing' cannot be imported"):
        gym.make("ragen/SearchQA-v0", corpus=str(corpus), questions=str(questions), retriever="dense",
                 embeddings=str(tmp_path / "good.npy"), query_encoder="nope:missing")  # fmt: skip


def test_faiss_and_numpy_return_the_same_passages_in_the_same_order(tmp_path, monkeypatch):
    pytest.importorskip("faiss")
    corpus, questions = _write(tmp_path)
    passages = gym.make("ragen/SearchQA-v0", corpus=str(corpus), questions=str(questions)).unwrapped.passages
    encoder = HashingEncoder()
    rng = np.random.default_rng(0)
    # duplicated rows make exact ties, which both must break by passage index
    embeddings = encoder([f"{t} {x}" for t, x in PASSAGES])
    embeddings[5] = embeddings[1]
    with_faiss = DenseRetriever(passages, embeddings, encoder)
    monkeypatch.setitem(sys.modules, "faiss", None)  # import faiss now raises ImportError
    with_numpy = DenseRetriever(passages, embeddings, encoder)
    assert (with_faiss.backend, with_numpy.backend) == ("faiss", "numpy")
    queries = [t for t, _ in PASSAGES] + [
        " ".join(rng.choice(["port", "elsby", "reef", "college", "sea"], 3)) for _ in range(20)
    ]
    for query in queries:
        for k in (1, 3, 5, 8):
            assert with_faiss.search(query, k) == with_numpy.search(query, k), (query, k)
    assert with_numpy.search(PASSAGES[1][0], 8).index(1) < with_numpy.search(PASSAGES[1][0], 8).index(5)


def test_ties_beyond_what_faiss_returns_are_still_broken_by_index(tmp_path):
    pytest.importorskip("faiss")
    corpus, questions = _write(tmp_path)
    passages = gym.make("ragen/SearchQA-v0", corpus=str(corpus), questions=str(questions)).unwrapped.passages
    flat = np.ones((len(PASSAGES), 4), dtype=np.float32)  # every passage ties with every other
    retriever = DenseRetriever(passages, flat, lambda texts: np.ones((len(texts), 4), dtype=np.float32))
    assert retriever.backend == "faiss"
    assert retriever.search("anything", 1) == [0]  # FAISS fetches 4 of 8 tied passages; the answer is still 0
    assert retriever.search("anything", 2) == [0, 1]
