"""episodes.jsonl lines: any record an agent or env can produce is written, one line, and read back as its
JSON-safe value, whether orjson writes it or the stdlib fallback for what orjson refuses."""

import math
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import records
from harness.records import EpisodeWriter, dumps_line, jsonable, loads_line, read_episodes


def _record(**turn) -> dict:
    base = {"turn": 1, "response": "<think>ok</think><answer>Up</answer>", "reward": 0.1, "info": {}}
    return {
        "agent": "random", "env_id": "ragen/Bandit-v0", "seed": 3, "sample": 0, "turns": [{**base, **turn}],
        "return": 0.1, "success": False, "num_turns": 1,
    }  # fmt: skip


class Opaque:
    """An env's info value JSON cannot hold: written as its repr."""

    def __repr__(self) -> str:
        return "Opaque()"


HOSTILE = {
    "surrogate": _record(response="<think>\ud800 lone \udfff</think>"),
    "nan_reward": _record(reward=math.nan),
    "inf_info": _record(info={"score": -math.inf}),
    "numpy": _record(info={"arr": np.arange(3, dtype=np.int64), "x": np.float32(0.5), "n": np.int64(7)}),
    "set": _record(info={"moves": {"Up", "Down"}}),
    "int_keys": _record(info={1: "a", 2: "b"}),
    "huge_int": _record(info={"big": 1 << 70}),
    "object": _record(info={"obj": Opaque()}),
    "unicode": _record(response="<think>héllo ✓ 中文 \u2028 \x00</think>"),
}


def _refuse(*args, **kwargs):
    raise TypeError("refused")


@pytest.fixture(params=["orjson", "fallback"])
def encoder(request, monkeypatch):
    """Lines as written, or every line sent down the fallback as if orjson refused it."""
    if request.param == "fallback":
        monkeypatch.setattr(records, "orjson", types.SimpleNamespace(dumps=_refuse, loads=records.orjson.loads))
    return request.param


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_every_record_is_one_line_that_reads_back_as_its_json_safe_value(name, encoder):
    record = HOSTILE[name]
    line = dumps_line(record)
    assert isinstance(line, bytes) and line.endswith(b"\n") and line.count(b"\n") == 1
    line.decode("utf-8")  # valid UTF-8 whatever the text held
    assert loads_line(line) == jsonable(record)


def test_orjson_and_the_fallback_write_the_same_values(monkeypatch):
    fast = {name: loads_line(dumps_line(r)) for name, r in HOSTILE.items()}
    monkeypatch.setattr(records, "orjson", types.SimpleNamespace(dumps=_refuse, loads=records.orjson.loads))
    slow = {name: loads_line(dumps_line(r)) for name, r in HOSTILE.items()}
    assert fast == slow


@settings(max_examples=200, deadline=None)
@given(text=st.text(st.characters(exclude_categories=())), reward=st.floats(allow_nan=True, allow_infinity=True))
def test_model_text_never_breaks_a_line(text, reward):  # lone surrogates included
    line = dumps_line(_record(response=text, reward=reward))
    assert line.count(b"\n") == 1
    back = loads_line(line)["turns"][0]
    assert back["response"] == text
    assert back["reward"] == (reward if math.isfinite(reward) else None)


def test_writer_appends_whole_lines_and_a_resume_cuts_the_torn_tail(tmp_path):
    path = tmp_path / "episodes.jsonl"
    path.touch()
    first, second = _record(), {**_record(), "seed": 4}
    with EpisodeWriter(path, 0) as writer:
        writer.write_line(dumps_line(first))
        writer.write_line(dumps_line(second))
    with open(path, "ab") as handle:
        handle.write(dumps_line({**_record(), "seed": 5})[:-9])  # a kill mid-write: no newline
    got, valid = read_episodes(path)
    assert [r["seed"] for r in got] == [3, 4] and valid == len(dumps_line(first)) + len(dumps_line(second))
    with EpisodeWriter(path, valid) as writer:
        writer.write_line(dumps_line({**_record(), "seed": 5}))
    assert [r["seed"] for r in read_episodes(path)[0]] == [3, 4, 5]
    writer.close()  # closing twice is harmless
    with pytest.raises(ValueError, match="closed"):
        writer.write_line(b"{}\n")


@pytest.mark.parametrize("big", [(1 << 70) + 1, -(1 << 64) - 1, 10**19 + 1, -(10**18) - 1])
def test_integers_beyond_64_bits_read_back_exactly(big, encoder):
    # 1 << 70 alone would not tell: it is exactly a float, so an int read back as a float still compares equal
    back = loads_line(dumps_line(_record(info={"big": big})))["turns"][0]["info"]["big"]
    assert type(back) is int and back == big


def test_resume_keys_episodes_with_seeds_beyond_64_bits_exactly(tmp_path, encoder):
    path = tmp_path / "episodes.jsonl"
    seeds = [(1 << 64) + 1, (1 << 64) + 2]  # both round to the float 2**64: read as floats they would collide
    path.write_bytes(b"".join(dumps_line({**_record(), "seed": s}) for s in seeds))
    got, valid = read_episodes(path)
    assert [r["seed"] for r in got] == seeds and valid == path.stat().st_size


@pytest.fixture(scope="module")
def real_lines(tmp_path_factory):
    """The episodes.jsonl lines of a real run (two envs, one multi-turn), as written."""
    from harness.cli import main

    out = tmp_path_factory.mktemp("runs")
    args = ["run", "oracle", "--env", "ragen/Bandit-v0,ragen/Sokoban-v0", "--episodes", "2", "--mi-samples", "0"]
    assert main([*args, "--out", str(out), "--run-id", "r", "--quiet", "--no-plots"]) == 0
    return (out / "r" / records.EPISODES).read_bytes().splitlines(keepends=True)


def test_the_schema_is_what_the_writer_writes_and_a_real_record_round_trips(real_lines):
    schema_keys = list(records.EpisodeRecord.__annotations__)
    turn_keys = list(records.TurnRecord.__annotations__)
    assert any(len(loads_line(line)["turns"]) > 1 for line in real_lines)
    for line in real_lines:
        record = loads_line(line)
        assert list(record) == schema_keys  # every field, in the schema's order
        assert all(list(turn) == turn_keys for turn in record["turns"])
        assert records.record_problem(record, replayable=True) is None
        assert dumps_line(record) == line  # read and written again: the same bytes


@pytest.mark.parametrize("field", records.REPLAY_FIELDS)
def test_a_replay_field_is_optional_for_metrics_and_required_for_a_replay(real_lines, field):
    record = loads_line(real_lines[0])
    holder = record if field in records.EpisodeRecord.__annotations__ else record["turns"][0]
    del holder[field]
    assert records.record_problem(record) is None
    assert f"'{field}' is missing" in records.record_problem(record, replayable=True)


@pytest.mark.parametrize("field", sorted(records.EpisodeRecord.__required_keys__))
def test_resume_refuses_a_line_without_a_required_field(tmp_path, real_lines, field):
    bad = loads_line(real_lines[0])
    del bad[field]
    path = tmp_path / records.EPISODES
    path.write_bytes(dumps_line(bad) + real_lines[1])
    with pytest.raises(records.RecordsCorrupt, match=f"line 1: field '{field}' is missing"):
        read_episodes(path)
