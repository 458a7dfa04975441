"""The metric registry is the one table of metrics: every metric a summary reports, ``harness ls`` lists or the
leaderboard recomputes or shows is registered there, with the description and direction it declares."""

from __future__ import annotations

import json

import pytest

from harness import metrics as m
from harness.cli import main


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    args = ["run", "oracle", "--env", "ragen/Bandit-v0", "--episodes", "4", "--samples", "2", "--mi-samples", "8"]
    assert main([*args, "--out", str(out), "--run-id", "r", "--quiet", "--no-plots"]) == 0
    return json.loads((out / "r" / "summary.json").read_text())


def test_every_metric_of_a_summary_is_registered_and_defined_by_its_docstring(summary):
    registry = m.registry()
    [row] = summary["rows"]
    assert {m.lookup(key).name for key in row["metrics"]} == set(registry)  # each registered one is reported
    assert summary["definitions"] == {name: metric.description for name, metric in registry.items()}
    assert row["metrics"]["trajectory/mi_estimate"]["value"] is not None  # the collapse family was computed
    for name, metric in registry.items():
        first = metric.fn.__doc__.split("\n\n")[0]
        assert metric.description.lower() in " ".join(first.split()).lower(), name


def test_the_leaderboard_reads_the_registry():
    from leaderboard.build import COLLAPSE_KEYS, RANK_BY
    from leaderboard.schema import SELF_REPORTED_BOUNDS
    from leaderboard.summary import SITE_COLLAPSE

    registry = m.registry()
    assert registry[RANK_BY].higher_is_better is True  # the site ranks by it, best first
    assert set(COLLAPSE_KEYS) <= set(SELF_REPORTED_BOUNDS) == set(SITE_COLLAPSE)
    for site_name, key in SITE_COLLAPSE.items():
        metric = m.lookup(key)
        assert metric.name == site_name and not metric.replayable  # self-reported: a replay cannot recompute it
    replayed = [metric.name for metric in m.episode_metrics(replayable_only=True)]
    assert replayed == [n for n in ("success_rate", "mean_return", "invalid_action_rate", "mean_turns",
                                    "reward_std_in_group", "zero_variance_groups", "pass@k")]  # fmt: skip


def test_harness_ls_lists_the_registry_with_its_directions(capsys):
    assert main(["ls"]) == 0
    listing = capsys.readouterr().out.split("\nmetrics")[1]
    for name, metric in m.registry().items():
        arrow = {True: "↑", False: "↓", None: " "}[metric.higher_is_better]
        assert f"  {name:28} {arrow} {metric.description}\n" in listing


def test_a_metric_is_registered_once_and_needs_a_docstring():
    with pytest.raises(ValueError, match="registered twice"):
        m.metric("success_rate", higher_is_better=True)(lambda episodes: None)
    with pytest.raises(ValueError, match="no docstring"):
        m.metric("undocumented", higher_is_better=None)(lambda episodes: None)
    with pytest.raises(KeyError, match="Did you mean 'success_rate'"):
        m.lookup("first_turn/succes_rate")
    assert m.lookup("trajectory/retrieval_accuracy@4").name == "retrieval_accuracy"
    assert m.lookup("first_turn/mi_zscore_seq").name == "mi_zscore"
