"""The end-of-run table a person reads: 120 columns by default, headed by metric names, MI with its ±."""

from __future__ import annotations

import copy
import json

import pytest

from harness import metrics
from harness.cli import main
from harness.report import TABLE_COLUMNS, format_table

LONG_SPEC = "hf:/home/someone/checkpoints/qwen2.5-3b-grpo-sokoban-filter-top-p-0.9/global_step_400/actor"


@pytest.fixture(scope="module")
def summary(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("runs")
    args = ["run", "random,oracle", "--env", "ragen/Bandit-v0,ragen/FrozenLake-8x8-v0", "--episodes", "3"]
    assert main([*args, "--samples", "2", "--out", str(out), "--run-id", "r", "--quiet", "--no-plots"]) == 0
    doc = json.loads((out / "r" / "summary.json").read_text())
    # the same rows as a user's checkpoint would write them: agent specs are paths, as long as the user's
    long = copy.deepcopy(doc["rows"])
    for row in long:
        row["agent"] = LONG_SPEC if row["agent"] == "oracle" else row["agent"]
    return {**doc, "rows": long}


def test_the_default_table_fits_120_columns_and_names_metrics(summary):
    text = format_table(summary)
    assert max(len(line) for line in text.splitlines()) <= 120, text
    header = text.splitlines()[0].split()
    names = set(metrics.registry())
    assert header[:3] == ["env", "agent", "n"] and all(title in names for title in header[3:]), header
    assert "mi_estimate" in header and "success_rate" in header
    oracle = next(line for line in text.splitlines() if "…" in line and "FrozenLake-8x8" in line)
    mi = oracle.split()[header.index("mi_estimate")]
    assert "±" in mi and float(mi.split("±")[0].rstrip("†")) > 0.5, oracle  # the MI and its standard error
    assert "/actor" in oracle  # a shortened spec keeps its end, where checkpoints differ


def test_wide_shows_every_column_at_full_length(summary, tmp_path, capsys):
    text = format_table(summary, wide=True)
    header = text.splitlines()[0].split()
    assert header[3:] == [key.rpartition("/")[2] for key, _, _ in TABLE_COLUMNS]
    assert LONG_SPEC in text and "…" not in text
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    (run_dir / "summary.json").write_text(json.dumps(summary))
    assert main(["report", str(run_dir), "--wide"]) == 0
    assert "reward_std_in_group" in capsys.readouterr().out
    assert main(["report", str(run_dir)]) == 0
    printed = capsys.readouterr().out
    assert "reward_std_in_group" not in printed and max(map(len, printed.splitlines())) <= 120
    report = (run_dir / "report.md").read_text()
    assert "| reward_std_in_group |" in report  # report.md keeps every column in its second table
