"""How the MI family is reported when the data cannot support it: never a number that reads like a finding."""

from __future__ import annotations

import json
from pathlib import Path

from harness.cli import main


def _run(tmp_path: Path, agent: str, episodes: int, run_id: str, env: str = "ragen/Bandit-v0") -> tuple[dict, str]:
    args = ["run", agent, "--env", env, "--episodes", str(episodes), "--samples", "2"]
    assert main([*args, "--out", str(tmp_path), "--run-id", run_id, "--quiet", "--no-plots"]) == 0
    summary = json.loads((tmp_path / run_id / "summary.json").read_text())
    return summary["rows"][0]["metrics"], (tmp_path / run_id / "report.md").read_text()


def test_one_prompt_makes_mi_and_retrieval_unavailable_with_the_reason(tmp_path, capsys):
    metrics, report = _run(tmp_path, "random", 1, "one")
    for key in ("first_turn/mi_estimate", "trajectory/mi_estimate", "trajectory/retrieval_accuracy"):
        assert metrics[key]["value"] is None and "1 distinct prompt" in metrics[key]["unavailable"], key
    table = next(line for line in report.splitlines() if line.startswith("| ragen/Bandit-v0 | random"))
    assert "0.000 ± 0.000" not in table and "n/a" in table


def test_few_prompts_are_flagged_in_the_report(tmp_path, capsys):
    metrics, report = _run(tmp_path, "random", 3, "few")
    assert metrics["trajectory/distinct_prompts"]["value"] == 3
    table = next(line for line in report.splitlines() if line.startswith("| ragen/Bandit-v0 | random"))
    assert "†" in table and "† compares fewer than 4 distinct prompts" in report
    family = report.split("trajectory pairs", 1)[1].split("##", 1)[0]
    assert "(3 prompts)" in next(line for line in family.splitlines() if line.startswith("| ragen/Bandit-v0"))
    metrics, report = _run(tmp_path, "random", 8, "enough")
    assert metrics["trajectory/distinct_prompts"]["value"] == 8
    assert "†" not in report and not any(" prompts)" in line for line in report.splitlines())


def test_a_deterministic_agent_gets_no_z_score_in_the_thousands(tmp_path, capsys):
    # the oracle's first-turn reasonings all have the same marginal (std 0): the z-score was log(8) / 1e-3 = 2079
    metrics, report = _run(tmp_path, "oracle", 8, "oracle", env="ragen/FrozenLake-v0")
    z = metrics["first_turn/mi_zscore"]
    assert z["value"] is None and "no spread" in z["unavailable"]
    assert metrics["first_turn/mi_estimate"]["value"] > 2.0  # the MI itself is reported
    first_turn = report.split("first-turn pairs", 1)[1].split("##", 1)[0]
    row = next(line for line in first_turn.splitlines() if line.startswith("| ragen/FrozenLake-v0 | oracle"))
    assert "2079" not in row and "n/a" in row
