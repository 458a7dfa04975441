"""The fp32 against bf16-autocast design: its plan, the reuse of the runaway control, the equivalence rule and the
check of the reused data (written before any bf16 run)."""

from __future__ import annotations

import json

from baselines.ppo.experiments import dtype_curves as D
from baselines.ppo.experiments import runaway


def rows(success: float, mi: float, *, n: int = 24) -> list[dict]:
    out = []
    for i in range(n):
        row = {"iteration": i, "rollout/success": success, "timing/update_s": float(i)}
        if i % 2 == 0:
            row["probe_first_turn/mi_estimate"] = mi
            row[runaway.PRIMARY] = 0.8
        out.append(row)
    return out


def test_the_arms_differ_only_in_dtype_and_fp32_reuses_the_runaway_control(tmp_path):
    plan = D.planned()
    assert plan[0] == D.Run(0, "float32", 0.0, D.RERUN_SEED) and len(plan) == 1 + 2 * len(D.SEEDS)
    a = json.loads(D.Run(1, "float32", 0.0, 3).config(tmp_path / "a").to_json())
    b = json.loads(D.Run(1, "bfloat16-autocast", 0.0, 3).config(tmp_path / "b").to_json())
    differ = {k for k in a if a[k] != b[k]} - {"out_dir"}
    assert differ == {"dtype"} and a["dtype"] == "float32" and b["dtype"] == "bfloat16-autocast"
    source = D.reused_from(D.Run(1, "float32", 0.0, 3), None)
    assert source == runaway.Run(1, "no_filter", 0.0, 3)
    reused = json.loads(source.config(tmp_path / "a").to_json())
    assert a == reused
    assert D.reused_from(D.Run(1, "bfloat16-autocast", 0.0, 3), None) is None
    assert D.reused_from(plan[0], None) is None  # the check reruns at this design's code


def test_within_seed_noise_needs_the_interval_inside_the_fp32_seed_spread():
    fp32 = {s: rows(0.5 + 0.1 * (s % 2), 0.3 + 0.05 * (s % 2)) for s in range(8)}
    close = {s: rows(0.5 + 0.1 * (s % 2) + 0.001, 0.3 + 0.05 * (s % 2)) for s in range(8)}
    far = {s: rows(0.5 + 0.1 * (s % 2) - 0.2, 0.3 + 0.05 * (s % 2)) for s in range(8)}
    near = D.compare(fp32, close)
    assert near["success"]["within"] and near["success"]["mean_difference"] > 0
    assert not D.compare(fp32, far)["success"]["within"]
    assert D.compare(fp32, {0: rows(0.5, 0.3)})["success"]["within"] is False  # one seed decides nothing


def test_the_check_ignores_timing_and_names_what_differs():
    a, b = rows(0.5, 0.3), rows(0.5, 0.3)
    for row in b:
        row["timing/update_s"] += 1.0
    assert D.differing_values(a, b) == []
    b[3]["rollout/success"] = 0.6
    assert D.differing_values(a, b) == ["3:rollout/success"]


def test_status_and_page_from_the_data_files(tmp_path, monkeypatch):
    from baselines.ppo.experiments import dtype_curves_report as DR

    monkeypatch.setattr(D, "DATA", tmp_path / "data")
    monkeypatch.setattr(runaway, "DATA", tmp_path / "runaway")
    monkeypatch.setattr(DR, "PAGE", tmp_path / "page.md")
    monkeypatch.setattr(DR, "CURVES_PNG", tmp_path / "curves.png")
    _, _, done, todo = D.status()
    assert not done and todo == D.planned()
    for run in D.planned()[:5]:
        record = {"rows": rows(0.5 + 0.01 * run.seed, 0.3), "code_commit": "abc1234", "run": run.fields}
        run.data.parent.mkdir(parents=True, exist_ok=True)
        run.data.write_text(json.dumps(record))
    text = DR.page()
    assert "5 runs finished" in text and "the comparison is not complete yet" in text
    assert "every non-timing value of all 24 logged iterations is equal" in text
