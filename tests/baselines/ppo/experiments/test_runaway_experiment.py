"""The runaway experiment's pre-registered rules on hand-worked cases (written before any of its data)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from baselines.ppo.experiments import runaway as R


def rows(start: float, late: float, *, valid: float = 0.9, raw: float | None = None, success=(0.9, 0.9)):
    """24 iterations; the probe measured every 2 iterations, ``start`` at 0 and ``late`` from 14 on."""
    out = []
    for i in range(24):
        row = {"iteration": i, "rollout/success": success[0] if i < 14 else success[1]}
        if i % 2 == 0:
            value = start if i == 0 else (late if i >= 14 else (start + late) / 2)
            row[R.PRIMARY] = value
            row["probe_first_turn/valid_rate"] = valid
            row["probe_first_turn/retrieval_accuracy"] = value / valid if raw is None else raw
        out.append(row)
    return out


def test_primary_is_the_window_mean_minus_iteration_zero():
    data = rows(0.8, 0.5)
    data[16][R.PRIMARY] = 0.3  # one of the five window measurements (14, 16, 18, 20, 22)
    assert R.primary(data) == pytest.approx((0.5 * 4 + 0.3) / 5 - 0.8)
    assert math.isnan(R.primary(data[:10]))  # no window measurement yet


def test_harm_is_a_fall_to_half_of_iteration_zero():
    assert R.harmed(rows(0.8, 0.4)) and not R.harmed(rows(0.8, 0.41))


def test_calibration_takes_the_smallest_c_with_two_harmed_seeds_and_stops_when_none_harms():
    ok, bad = rows(0.8, 0.7), rows(0.8, 0.2)
    assert R.calibrate({0.06: {0: ok, 1: bad, 2: bad}}) == (0.06, "smallest c with ≥ 2 of 3 seeds harmed")
    assert R.calibrate({0.06: {0: bad, 1: bad}})[0] == 0.06  # decided before its third seed
    assert R.calibrate({0.06: {0: ok, 1: bad}}) == (None, "calibration incomplete")
    assert R.calibrate({0.06: {0: ok, 1: bad, 2: ok}, 0.07: {0: bad, 1: ok, 2: bad}})[0] == 0.07
    none = {c: {s: ok for s in R.CALIBRATION_SEEDS} for c in R.CALIBRATION}
    c_star, why = R.calibrate(none)
    assert c_star is None and why.startswith("STOP")
    assert R.planned(None, stopped=True) == [r for r in R.planned(None) if r.stage == 0]


def test_plan_decides_c_star_first_and_runs_the_other_calibration_coefficients_last():
    plan = R.planned(0.07)
    assert [r.coef for r in plan[:6]] == [0.06] * 3 + [0.07] * 3
    assert [r.coef for r in plan[-3:]] == [0.08] * 3
    stage1 = [r for r in plan if r.stage == 1]
    assert len(stage1) == 4 * len(R.SEEDS) and {r.coef for r in stage1} == {0.0, 0.07}
    assert R.reused_from(R.Run(1, "no_filter", 0.07, 2), 0.07) == R.Run(0, "no_filter", 0.07, 2)
    assert R.reused_from(R.Run(1, "no_filter", 0.07, 3), 0.07) is None  # not a calibration seed
    assert R.reused_from(R.Run(1, "filter", 0.07, 0), 0.07) is None


def test_strict_template_collapse_needs_input_dependence_lost_with_format_and_success_kept():
    assert R.strict_collapse(rows(0.8, 0.3, valid=0.9))  # raw retrieval 0.89 -> 0.33, reasoning and success kept
    assert not R.strict_collapse(rows(0.8, 0.3, valid=0.5))  # reasoning lost: a runaway, not template collapse
    assert not R.strict_collapse(rows(0.8, 0.3, success=(0.9, 0.5)))  # success lost
    assert not R.strict_collapse(rows(0.8, 0.7))  # input dependence kept


def test_the_setting_is_the_miniatures_with_a_longer_horizon_and_the_probe():
    from baselines.ppo.experiments import miniature as M

    same = {k: v for k, v in R.SETTING.items() if k in M.SETTING and M.SETTING[k] == v}
    differ = sorted(k for k in R.SETTING if k not in same)
    assert differ == ["grad_buckets_every", "iterations", "mi_every", "mi_probe_samples", "mi_probe_seeds"]
    assert R.SETTING["iterations"] == 24 and R.SETTING["mi_every"] == 2 and R.SETTING["mi_probe_seeds"] == 16


def test_the_page_decides_by_intersection_union_on_complete_seeds(tmp_path, monkeypatch):
    import json

    from baselines.ppo.experiments import runaway_report as RR

    monkeypatch.setattr(R, "DATA", tmp_path / "data")
    monkeypatch.setattr(RR, "PAGE", tmp_path / "runaway.md")
    monkeypatch.setattr(RR, "CURVES_PNG", tmp_path / "curves.png")

    def store(run, data):
        run.data.parent.mkdir(parents=True, exist_ok=True)
        run.data.write_text(json.dumps({"rows": data}))

    for seed in R.CALIBRATION_SEEDS:
        store(R.Run(0, "no_filter", 0.06, seed), rows(0.8, 0.2 + 0.01 * seed, valid=0.3))
    assert R.status()[0] == 0.06
    text = RR.page()
    assert "c* = 0.06" in text and "**Incomplete**" in text
    rng = np.random.default_rng(0)
    for seed in R.SEEDS:
        late = {"no_filter@0": 0.75, "no_filter@c*": 0.2, "filter@c*": 0.7, "random_drop@c*": 0.4}
        for arm, coef in R.CELLS:
            run = R.Run(1, arm, 0.0 if coef == "0" else 0.06, seed)
            if R.reused_from(run, 0.06) is None:
                store(run, rows(0.8, late[f"{arm}@{coef}"] + rng.normal(0, 0.02), valid=0.9))
            else:
                R.copy_reused(run, R.reused_from(run, 0.06))
    text = RR.page()
    assert "**Effect shown**" in text and "| (b2)" in text
    assert "arm[T.filter@c*]:iteration" in text  # the mixed model was fitted
