"""``harness mi`` and ``harness.mi.mi_family``: the MI family of other trainers' rollouts and of your own pairs,
with the harness's estimator (the same numbers as ``harness run`` on the same pairs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.dumps import read_dump
from harness.mi import mi_family
from tests.helpers.paths import TINY_MODEL

DUMPS = Path(__file__).resolve().parent / "dumps"
MODEL = str(TINY_MODEL)


def _mi(tmp_path: Path, name: str, *dump: str) -> list[dict]:
    out = tmp_path / name
    assert main(["mi", *dump, "--model", MODEL, "--out", str(out), "--quiet"]) == 0
    for file in ("mi_steps.jsonl", "mi_steps.csv", "mi_report.md", "mi_entropy.png", "mi_config.json"):
        assert (out / file).exists(), file
    return [json.loads(line) for line in (out / "mi_steps.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def trl_parquet(tmp_path_factory) -> Path:
    """TRL's own completion log file (``completions/completions_00001.parquet``), from the JSONL rows."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    folder = tmp_path_factory.mktemp("completions")
    rows = [json.loads(line) for line in (DUMPS / "trl_completions.jsonl").read_text().splitlines()]
    for step in (1, 2):
        pd.DataFrame([r for r in rows if r["step"] == step]).to_parquet(folder / f"completions_{step:05d}.parquet")
    return folder


def test_every_format_reads_the_same_first_turns(trl_parquet):
    read = {name: read_dump([path]) for name, path in [
        ("ragen", DUMPS / "ragen_chats.jsonl"), ("trl", DUMPS / "trl_completions.jsonl"), ("trl-parquet", trl_parquet),
        ("verl", DUMPS / "verl"),
    ]}  # fmt: skip
    assert {name: form for name, (_, form, _) in read.items()} == {
        "ragen": "ragen", "trl": "trl", "trl-parquet": "trl", "verl": "verl"}  # fmt: skip
    reasonings = {name: [(s.step, s.reasoning) for s in samples] for name, (samples, _, _) in read.items()}
    assert len(reasonings["ragen"]) == 16 and all(z for _, z in reasonings["ragen"])
    assert reasonings["ragen"] == reasonings["trl"] == reasonings["trl-parquet"] == reasonings["verl"]
    # a chat is scored under the chat template; verl's decoded prompt is scored as the text it logged
    assert read["verl"][0][0].context.messages[0]["role"] == "rendered"
    assert read["trl"][0][0].context == read["ragen"][0][0].context


def test_harness_mi_writes_the_family_and_entropy_per_step(tmp_path, trl_parquet, capsys):
    chats = _mi(tmp_path, "ragen", str(DUMPS / "ragen_chats.jsonl"))
    assert [line["step"] for line in chats] == [1, 2]
    for line in chats:
        metrics = line["metrics"]
        assert line["pairs"] == 8 and metrics["distinct_prompts"]["value"] == 4
        assert metrics["mi_estimate"]["stderr"] > 0 and metrics["token_entropy"]["value"] > 0
    printed = capsys.readouterr().out
    assert "mi_estimate" in printed and "token_entropy" in printed and "±" in printed
    # the same conversations logged by TRL (JSONL or its Parquet files) give the same numbers
    assert _mi(tmp_path, "trl", str(DUMPS / "trl_completions.jsonl")) == chats
    assert _mi(tmp_path, "trl-parquet", str(trl_parquet)) == chats
    verl = _mi(tmp_path, "verl", str(DUMPS / "verl"))
    assert [line["pairs"] for line in verl] == [8, 8] and verl[0]["metrics"]["mi_estimate"]["value"] is not None


def test_our_records_give_the_numbers_harness_run_reported(tmp_path, capsys):
    args = ["run", "tiny", "--env", "ragen/Bandit-v0", "--episodes", "4", "--samples", "2", "--max-new-tokens", "48"]
    assert main([*args, "--out", str(tmp_path), "--run-id", "r", "--quiet", "--no-plots"]) == 0
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())["rows"][0]["metrics"]
    [line] = _mi(tmp_path, "mi", str(tmp_path / "r" / "episodes.jsonl"))
    assert line["pairs"] == summary["first_turn/mi_estimate"]["n"]
    for key in ("mi_estimate", "retrieval_accuracy", "reasoning_entropy_estimate"):
        assert line["metrics"][key]["value"] == pytest.approx(summary[f"first_turn/{key}"]["value"], abs=1e-9), key
    # and the documented call on the same (prompt, reasoning) pairs
    samples, _, _ = read_dump([tmp_path / "r" / "episodes.jsonl"])
    pairs = [(list(s.context.messages), s.reasoning) for s in samples if s.reasoning]
    family = mi_family("tiny", pairs)
    assert family["mi_estimate"].value == pytest.approx(summary["first_turn/mi_estimate"]["value"], abs=1e-9)
    assert family["mi_estimate"].stderr == pytest.approx(summary["first_turn/mi_estimate"]["stderr"], abs=1e-9)


def test_a_line_of_no_known_format_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "answer": "a"}\n')
    assert main(["mi", str(bad), "--model", MODEL]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "none of the formats" in err and "docs/metrics.md" in err
