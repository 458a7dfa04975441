"""MathQA: the shipped sample, field detection for MetaMathQA/GSM8K/MATH exports, every file format, and
loader errors that name the file, the line and the field."""

from __future__ import annotations

import json
import sys

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import ragen_envs  # noqa: F401
from ragen_envs.math.answers import parse_number
from ragen_envs.math.qa_data import SAMPLE_PATH, DatasetError, load_records


def think(answer: str) -> str:
    return f"<think>working</think><answer>{answer}</answer>"


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


METAMATH = [
    {"query": "What is 6 times 7?", "response": "6 * 7 = 42.\nThe answer is: 42", "type": "GSM_Rephrased"},
    {"query": "Half of 9?", "response": "9 / 2 = 4.5. The answer is: \\frac{9}{2}", "type": "MATH_AnsAug"},
]
GSM8K = [
    {"question": "Tom has 3 boxes of 12 pens. How many pens?", "answer": "3*12=<<3*12=36>>36\n#### 36"},
    {"question": "A 1,000 m road is paved 250 m a day. Days?", "answer": "1000/250=<<1000/250=4>>4\n#### 4"},
]
MATH = [
    {"problem": "Compute $\\sin 60^\\circ$.", "solution": "It is $\\boxed{\\frac{\\sqrt{3}}{2}}$.", "level": "Level 1"},
    {"problem": "Solve $2x = 1$.", "solution": "So $x = \\boxed{\\frac12}$... i.e. \\boxed{0.5}", "type": "Algebra"},
]


# ---- the shipped sample -----------------------------------------------------------------------------------
def test_sample_ships_with_the_package_and_every_answer_is_a_number():
    assert SAMPLE_PATH.is_file() and SAMPLE_PATH.parent.name == "data"
    records = load_records()
    assert len(records) >= 30
    assert all(parse_number(r.answer) is not None for r in records)
    assert records[0].where == "ragen_envs/data/math_qa_sample.jsonl:1"


def test_oracle_answers_every_sample_record():
    env = gym.make("ragen/MathQA-v0").unwrapped
    seen = set()
    for seed in range(400):
        _, info = env.reset(seed=seed)
        seen.add(info["index"])
        assert env.step(env.oracle_response())[1] == 1.0
    assert len(seen) == len(env.records)  # the seed reaches every record


def test_seed_picks_the_record():
    env = gym.make("ragen/MathQA-v0")
    a = env.reset(seed=17)
    b = env.reset(seed=17)
    assert a[0] == b[0] and a[1]["index"] == b[1]["index"]


# ---- field conventions --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("records", "answers"),
    [(METAMATH, ["42", "\\frac{9}{2}"]), (GSM8K, ["36", "4"]), (MATH, ["\\frac{\\sqrt{3}}{2}", "0.5"])],
    ids=["metamathqa", "gsm8k", "math"],
)
def test_field_detection_and_answer_conventions(tmp_path, records, answers):
    path = write_jsonl(tmp_path / "data.jsonl", records)
    loaded = load_records(path)
    assert [r.answer for r in loaded] == answers
    assert loaded[0].question == next(iter(records[0].values()))


def test_answers_are_judged_by_value_or_normalized_text(tmp_path):
    rows = [*METAMATH, {"query": MATH[0]["problem"], "response": MATH[0]["solution"]}]
    env = gym.make("ragen/MathQA-v0", path=write_jsonl(tmp_path / "m.jsonl", rows)).unwrapped
    cases = {
        "What is 6 times 7?": (["42", "42.0", "\\boxed{42}"], ["41", "42.5"]),
        "Half of 9?": (["4.5", "9/2", "4.50"], ["4", "5"]),
        "Compute $\\sin 60^\\circ$.": (["\\dfrac{\\sqrt{3}}{2}", "$\\frac{\\sqrt{3}}{2}$"], ["0.866", "\\sqrt{3}"]),
    }
    done = set()
    for seed in range(200):
        obs, _ = env.reset(seed=seed)
        if obs not in cases or obs in done:
            continue
        done.add(obs)
        right, wrong = cases[obs]
        for answer in right:
            env.reset(seed=seed)
            assert env.step(think(answer))[1] == 1.0, (obs, answer)
        for answer in wrong:
            env.reset(seed=seed)
            assert env.step(think(answer))[1] == 0.0, (obs, answer)
    assert done == set(cases)


def test_explicit_fields(tmp_path):
    rows = [{"q": "1+1?", "gold": "2", "answer": "not this one"}]
    records = load_records(write_jsonl(tmp_path / "x.jsonl", rows), question_field="q", answer_field="gold")
    assert (records[0].question, records[0].answer) == ("1+1?", "2")


def test_csv_json_and_parquet(tmp_path):
    csv_path = tmp_path / "d.csv"
    csv_path.write_text('question,answer\n"How many, in total?","#### 1,250"\nTwo?,2\n', encoding="utf-8")
    assert [r.answer for r in load_records(csv_path)] == ["1,250", "2"]
    assert load_records(csv_path)[1].where.endswith("d.csv:3")
    json_path = tmp_path / "d.json"
    json_path.write_text(json.dumps(GSM8K), encoding="utf-8")
    assert [r.answer for r in load_records(json_path)] == ["36", "4"]
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist(METAMATH), tmp_path / "d.parquet")
    loaded = load_records(tmp_path / "d.parquet")
    assert [r.answer for r in loaded] == ["42", "\\frac{9}{2}"] and loaded[1].where.endswith("d.parquet, row 2")
    env = gym.make("ragen/MathQA-v0", path=str(tmp_path / "d.parquet"))
    obs, info = env.reset(seed=0)
    assert env.step(think(info["answer"]))[1] == 1.0


def test_unicode_dataset_passes_check_env(tmp_path):
    rows = [{"question": "Wie viel ist π·2 ≈ ? 圆周率", "answer": "#### 6.28"}, {"question": "ζ?", "answer": "Ω"}]
    env = gym.make("ragen/MathQA-v0", path=write_jsonl(tmp_path / "u.jsonl", rows)).unwrapped
    check_env(env, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert obs in env.observation_space


# ---- errors name the file, the line and the field --------------------------------------------------------------
def test_missing_file_names_it_and_suggests(tmp_path):
    write_jsonl(tmp_path / "train.jsonl", GSM8K)
    with pytest.raises(FileNotFoundError, match=r"trian\.jsonl.*Did you mean 'train\.jsonl'"):
        load_records(tmp_path / "trian.jsonl")


def test_empty_file(tmp_path):
    (tmp_path / "e.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"e\.jsonl: no records"):
        load_records(tmp_path / "e.jsonl")
    (tmp_path / "blank.jsonl").write_text("\n\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"blank\.jsonl: no records"):
        load_records(tmp_path / "blank.jsonl")


def test_bad_json_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(GSM8K[0]) + "\n\n{oops\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.jsonl:3: not valid JSON"):
        load_records(path)


@pytest.mark.parametrize(
    ("second", "message"),
    [
        ({"question": "Q?"}, r"x\.jsonl:2: field 'answer' is missing"),
        ({"question": "Q?", "answer": ""}, r"x\.jsonl:2: field 'answer' must be non-empty"),
        ({"question": None, "answer": "1"}, r"x\.jsonl:2: field 'question' must be non-empty"),
        ({"question": "Q?", "answer": "work\n####  "}, r"x\.jsonl:2: field 'answer' states no final answer"),
        ([1, 2], r"x\.jsonl:2: a record must be an object"),
    ],
)
def test_bad_record_names_line_and_field(tmp_path, second, message):
    path = write_jsonl(tmp_path / "x.jsonl", [GSM8K[0], second])
    with pytest.raises(DatasetError, match=message):
        load_records(path)


def test_unknown_column_suggests(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", METAMATH)
    with pytest.raises(
        DatasetError, match=r"c\.jsonl:1: question_field 'querry' is not a column\. Did you mean 'query'"
    ):
        load_records(path, question_field="querry")
    with pytest.raises(DatasetError, match=r"d\.jsonl:1: no answer column found.*answer_field="):
        load_records(write_jsonl(tmp_path / "d.jsonl", [{"query": "q", "gold": "1"}]))


def test_unknown_extension(tmp_path):
    (tmp_path / "d.txt").write_text("x", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"unknown file type '\.txt'"):
        load_records(tmp_path / "d.txt")


def test_parquet_without_pyarrow_says_what_to_install(tmp_path, monkeypatch):
    (tmp_path / "d.parquet").write_bytes(b"PAR1 not really")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(DatasetError, match=r"d\.parquet: reading Parquet needs pyarrow: pip install"):
        load_records(tmp_path / "d.parquet")


def test_hub_name_without_datasets_library_gives_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(DatasetError, match=r"'meta-math/MetaMathQA' is not a local file.*pip install datasets"):
        gym.make("ragen/MathQA-v0", path="meta-math/MetaMathQA")
