"""``harness report`` on learner runs: collapse curves and the collapse flag from metrics.jsonl."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.training_report import collapse_flag, pool, report_training


def write_run(folder, retrieval, entropy):
    folder.mkdir(parents=True)
    rows = []
    for i, (r, h) in enumerate(zip(retrieval, entropy, strict=True)):
        row = {"iteration": i, "rollout/success": 0.5 + 0.05 * i, "actor/token_entropy": h}
        if r is not None:
            row["collapse_first_turn/retrieval_accuracy"] = r
            row["collapse_first_turn/mi_estimate"] = r / 2
        rows.append(row)
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def test_collapse_flag_needs_mi_down_with_entropy_held():
    collapsed = [{"iteration": 0, "actor/token_entropy": 1.0, "collapse_first_turn/retrieval_accuracy": 0.9},
                 {"iteration": 3, "actor/token_entropy": 1.0, "collapse_first_turn/retrieval_accuracy": 0.7},
                 {"iteration": 6, "actor/token_entropy": 0.95, "collapse_first_turn/retrieval_accuracy": 0.5}]  # fmt: skip
    assert "template-collapse pattern" in collapse_flag(collapsed)
    narrowed = [*collapsed[:2], {**collapsed[2], "actor/token_entropy": 0.3}]  # entropy fell too
    assert collapse_flag(narrowed) is None
    assert collapse_flag(collapsed[::2]) is None  # two MI points: no verdict


def test_harness_report_draws_learner_curves_and_pools_seeds(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    write_run(tmp_path / "filter_seed0", [0.9, None, 0.88, 0.85], [1.0, 1.0, 1.0, 1.0])
    write_run(tmp_path / "filter_seed1", [0.8, None, 0.8, 0.8], [1.0, 0.9, 1.0, 1.0])
    write_run(tmp_path / "nofilter_seed0", [0.9, None, 0.6, 0.4], [1.0, 1.0, 1.0, 0.98])
    runs = [tmp_path / n for n in ("filter_seed0", "filter_seed1", "nofilter_seed0")]
    assert sorted(pool(runs)) == ["filter", "nofilter"] and len(pool(runs)["filter"]) == 2
    out = tmp_path / "report"
    assert main(["report", *map(str, runs), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "nofilter_seed0: template-collapse pattern" in text and "- filter_seed0:" not in text
    assert (out / "training_curves.png").stat().st_size > 5000 and (out / "training_report.md").exists()
    assert main(["report", str(runs[0])]) == 0  # one run: the report goes into its folder
    assert (runs[0] / "training_report.md").exists()


def test_several_learner_runs_without_out_is_a_one_line_error(tmp_path, capsys):
    write_run(tmp_path / "a", [0.5], [1.0])
    write_run(tmp_path / "b", [0.5], [1.0])
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    assert "--out" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--out"):
        report_training([tmp_path / "a", tmp_path / "b"])
    (tmp_path / "a" / "metrics.jsonl").write_text("{not json\n")
    with pytest.raises(ValueError, match="metrics.jsonl:1"):
        report_training([tmp_path / "a"])


def test_a_run_with_too_few_mi_points_gets_no_verdict(tmp_path, capsys):
    # a 2-iteration run logs one or two MI points: "no collapse" from them would be a conclusion from noise
    write_run(tmp_path / "short", [0.9, 0.3], [1.0, 1.0])
    assert main(["report", str(tmp_path / "short")]) == 0
    text = capsys.readouterr().out
    assert "short: not enough MI points (2 logged" in text
    assert "no run" not in text and "pattern" not in text.split("## Collapse check", 1)[1]


def test_the_probe_decides_the_flag_and_batches_that_share_prompts_are_flagged(tmp_path):
    from harness.training_report import shared_batches

    rows = []
    for i, (batch, probe) in enumerate([(0.9, 0.95), (0.6, 0.94), (0.5, 0.96)]):
        rows.append({
            "iteration": 3 * i, "actor/token_entropy": 1.0, "collapse_first_turn/retrieval_accuracy": batch,
            "probe_first_turn/retrieval_accuracy": probe, "collapse_first_turn/shared_features": float(i > 0),
            "collapse_first_turn/ceiling/risky": 1.0 if i == 0 else 0.55, "collapse_first_turn/ceiling/safe": 0.9,
        })  # fmt: skip
    # the batch's retrieval fell with its ceiling; the fixed probe held: no collapse
    assert collapse_flag(rows) is None
    assert "template-collapse pattern" in collapse_flag(
        [{k: v for k, v in r.items() if "probe" not in k} for r in rows]
    )
    note = shared_batches(rows)
    assert note.startswith("2 of 3 on-batch first-turn readings") and "0.55" in note and "probe's curve is not" in note
    assert "--mi-probe-seeds" in shared_batches([{k: v for k, v in r.items() if "probe" not in k} for r in rows])
    assert shared_batches([{**r, "collapse_first_turn/shared_features": 0.0} for r in rows]) is None
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = report_training([folder])
    assert "share a key feature" in text and "probe retrieval accuracy" in text
