"""Attacks on ``--resume``: a tampered middle line of episodes.jsonl is refused with the file, the line and the
field, in one line and exit 2, and nothing is written; an honest torn tail is still cut and resumed."""

from __future__ import annotations

import json
import math

import pytest

from harness.cli import main

ARGS = ["random", "--env", "ragen/FrozenLake-v0", "--episodes", "6", "--mi-samples", "4"]

# (what is changed on line 3, the field the refusal must name)
TAMPERINGS = {
    "seed as a string": (lambda r: r.update(seed="3"), "'seed'"),
    "seed as a float": (lambda r: r.update(seed=3.9), "'seed'"),
    "seed as a bool": (lambda r: r.update(seed=True), "'seed'"),
    "seed missing": (lambda r: r.pop("seed"), "'seed'"),
    "sample negative": (lambda r: r.update(sample=-1), "'sample'"),
    "sample as null": (lambda r: r.update(sample=None), "'sample'"),
    "return NaN": (lambda r: r.update({"return": math.nan}), "'return'"),
    "return infinite": (lambda r: r.update({"return": -math.inf}), "'return'"),
    "return as a string": (lambda r: r.update({"return": "1.0"}), "'return'"),
    "turns as an object": (lambda r: r.update(turns={"0": r["turns"][0]}), "'turns'"),
    "turns as a string": (lambda r: r.update(turns="[]"), "'turns'"),
    "a turn as a list": (lambda r: r["turns"].__setitem__(0, [1, 2]), "turns[0]"),
    "a turn reward NaN": (lambda r: r["turns"][0].update(reward=math.nan), "turns[0].'reward'"),
    "a turn reward as a string": (lambda r: r["turns"][0].update(reward="0"), "turns[0].'reward'"),
    "a turn response as a number": (lambda r: r["turns"][0].update(response=7), "turns[0].'response'"),
    "a turn info as a list": (lambda r: r["turns"][0].update(info=[]), "turns[0].'info'"),
    "success as a string": (lambda r: r.update(success="false"), "'success'"),
    "num_turns disagrees": (lambda r: r.update(num_turns=r["num_turns"] + 5), "'num_turns'"),
    "agent as a number": (lambda r: r.update(agent=1), "'agent'"),
    "env_kwargs as a list": (lambda r: r.update(env_kwargs=[]), "'env_kwargs'"),
}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    assert main(["run", *ARGS, "--out", str(out), "--run-id", "r", "--quiet", "--no-plots"]) == 0
    return (out / "r" / "episodes.jsonl").read_bytes()


def _resume_with(tmp_path, data: bytes, capsys):
    run = tmp_path / "r"
    assert main(["run", *ARGS, "--out", str(tmp_path), "--run-id", "r", "--quiet", "--no-plots"]) == 0
    (run / "episodes.jsonl").write_bytes(data)
    capsys.readouterr()
    code = main(["run", "random", "--resume", str(run), "--quiet", "--no-plots"])
    return code, capsys.readouterr().err, (run / "episodes.jsonl").read_bytes()


@pytest.mark.parametrize("attack", sorted(TAMPERINGS))
def test_a_tampered_middle_line_is_refused_naming_file_line_and_field(tmp_path, capsys, finished_run, attack):
    change, field = TAMPERINGS[attack]
    lines = finished_run.splitlines(keepends=True)
    record = json.loads(lines[2])
    change(record)
    lines[2] = (json.dumps(record, allow_nan=True) + "\n").encode()
    data = b"".join(lines[:-1])  # the run looks unfinished, so the resume would have work to do
    code, err, after = _resume_with(tmp_path, data, capsys)
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "episodes.jsonl: line 3:" in err and field in err, err
    assert after == data, "a refused resume must leave the file as it was"


def test_a_torn_last_line_is_still_cut_and_resumed(tmp_path, capsys, finished_run):
    lines = finished_run.splitlines(keepends=True)
    code, err, after = _resume_with(tmp_path, b"".join(lines[:-1]) + lines[-1][:-20], capsys)
    assert code == 0, err
    assert sorted(after.splitlines()) == sorted(finished_run.splitlines())
