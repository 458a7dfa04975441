"""The miniature experiment's statistics and pre-registered rules on hand-worked cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from baselines.ppo.experiments import miniature as M
from baselines.ppo.experiments.stats import bootstrap_ci, holm, sign_flip_p, spearman


def test_sign_flip_is_exact():
    assert sign_flip_p([1, 2, 3, 4, 5, 6]) == pytest.approx(1 / 64)  # all positive: only the observed signs
    assert sign_flip_p([-1, -2, -3, -4, -5, -6]) == 1.0
    # one negative of the smallest size: means >= observed are the all-plus and the observed assignment
    assert sign_flip_p([-1, 2, 3, 4, 5, 6]) == pytest.approx(2 / 64)
    assert sign_flip_p([0, 0, 0]) == 1.0  # no evidence at all
    with pytest.raises(ValueError, match="differences"):
        sign_flip_p([])


def test_holm_step_down():
    assert holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])


def test_six_seeds_cannot_pass_holm_over_four_but_eight_can():
    """Why the confirmatory test uses 8 seeds (the design's stated reason)."""
    assert min(holm([sign_flip_p([1] * 6)] * 4)) > 0.05
    assert max(holm([sign_flip_p([1] * 8)] * 4)) < 0.05


def test_bootstrap_ci_brackets_the_mean_and_is_reproducible():
    d = [0.1, 0.2, 0.15, 0.3, -0.05, 0.25]
    low, high = bootstrap_ci(d)
    assert low < np.mean(d) < high and (low, high) == bootstrap_ci(d)
    assert bootstrap_ci([0.2] * 6) == pytest.approx((0.2, 0.2))


def test_spearman_ranks_with_ties():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ties take average ranks: x ranks (1.5, 1.5, 3, 4), y ranks (1, 2, 3, 4)
    assert spearman([1, 1, 2, 3], [1, 2, 3, 4]) == pytest.approx(np.corrcoef([1.5, 1.5, 3, 4], [1, 2, 3, 4])[0, 1])
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))
    assert spearman([1, 2, float("nan"), 3], [1, 2, 5, 3]) == pytest.approx(1.0)


def rows(entropy_start, entropy_late, reasoning):
    out = []
    for i in range(16):
        row = {"iteration": i, "actor/token_entropy": entropy_start if i < 10 else entropy_late}
        if i % 3 == 0:
            row["collapse_first_turn/valid_rate"] = reasoning
            row[M.PRIMARY] = 0.5
        out.append(row)
    return out


def test_calibration_picks_the_smallest_c_that_holds_entropy_and_reasoning():
    stage0 = {0.04: rows(1.0, 0.8, 0.9), 0.05: rows(1.0, 0.95, 0.9), 0.07: rows(1.0, 1.2, 0.9)}
    assert M.calibrate(stage0) == (0.05, "smallest c with entropy held and reasoning kept")
    stage0[0.05] = rows(1.0, 0.95, 0.5)  # 0.05 holds entropy but loses reasoning
    assert M.calibrate(stage0)[0] == 0.07
    stage0 = {c: rows(1.0, 0.95, 0.1) for c in M.CALIBRATION}
    assert M.calibrate(stage0)[0] == 0.04 and M.calibrate(stage0)[1].startswith("FALLBACK")
    stage0 = {c: rows(1.0, 0.5, 0.9) for c in M.CALIBRATION}
    assert M.calibrate(stage0)[0] == 0.07 and M.calibrate(stage0)[1].startswith("FALLBACK")
    assert M.calibrate({0.05: rows(1, 1, 1)}) == (None, "calibration incomplete")  # 0.04 unknown yet
    assert M.calibrate({0.04: rows(1, 1, 1)})[0] == 0.04  # the smallest c qualifies: the others cannot change it
    assert M.calibrate({0.04: rows(1.0, 0.5, 0.9), 0.05: rows(1, 1, 1)})[0] == 0.05


def test_primary_outcome_counts_a_measurement_without_reasoning_as_zero():
    data = rows(1.0, 1.0, 0.9)
    data[12][M.PRIMARY] = 0.6
    data[15][M.PRIMARY] = 0.8
    assert M.outcome(data, "retrieval_itt") == pytest.approx(0.7)
    del data[15][M.PRIMARY]  # MI unavailable at 15: no first turn reasoned -> every first turn missed
    assert M.outcome(data, "retrieval_itt") == pytest.approx(0.3)
    assert math.isnan(M.outcome(data[:13], "retrieval_itt"))  # iteration 15 not run yet: incomplete
    assert M.outcome(data, "token_entropy") == pytest.approx(1.0)


def test_the_plan_runs_whole_seed_blocks_and_reuses_the_identical_stage0_run():
    plan = M.planned(0.05)
    assert [r.stage for r in plan[:3]] == [0, 0, 0] and len(plan) == 3 + len(M.SEEDS) * 6
    assert {(r.arm, r.coef) for r in plan[3:9]} == {(a, c) for a in M.ARMS for c in (0.0, 0.05)}
    assert all(r.seed == 0 for r in plan[3:9])
    assert M.reused_from(M.Run(1, "no_filter", 0.05, 0), 0.05) == M.Run(0, "no_filter", 0.05, 0)
    assert M.reused_from(M.Run(1, "filter", 0.05, 0), 0.05) is None
    config = M.Run(1, "random_drop", 0.05, 3).config(M.SCRATCH / "x")
    assert config.filter.selection == "random" and config.entropy_coef == 0.05 and config.seed == 3
    assert config.aggregation == "seq-mean-token-mean" and config.mi.samples == 64
    nofilter = M.Run(1, "no_filter", 0.0, 0).config(M.SCRATCH / "y")
    assert nofilter.filter.value == 1.0 and nofilter.filter.include_zero


@pytest.mark.slow
def test_runner_writes_each_run_once_resumes_an_interrupted_one_and_the_report_says_what_is_missing(
    tiny_model_dir, tmp_path, monkeypatch
):
    """A shrunken design (2 iterations, 2 × 2 rollouts) through the real runner: every stage-0 run ends as one
    data file, a run cut after its first iteration resumes to the uninterrupted rows, a rerun runs nothing,
    and the report builds from the partial data, naming the missing cells."""
    import json
    from pathlib import Path

    from baselines.ppo.config import PPOConfig
    from baselines.ppo.experiments import miniature_report as R
    from baselines.ppo.trainer import Trainer

    small = dict(iterations=2, prompts_per_iteration=2, samples_per_prompt=2, max_new_tokens=6, mi_every=1,
                 grad_buckets_every=1, grad_buckets=2, env_kwargs={"risky_prob": 1.0, "max_turns": 2})  # fmt: skip
    monkeypatch.setattr(M, "SETTING", {**M.SETTING, **small})
    monkeypatch.setattr(M, "DATA", tmp_path / "data")
    monkeypatch.setattr(M, "SCRATCH", tmp_path / "scratch")
    monkeypatch.setattr(M, "MODEL", Path(tiny_model_dir))
    for name in ("RESULTS", "PAGE", "CURVES_PNG", "CALIBRATION_PNG", "GRADIENTS_PNG", "GRADIENT_DATA"):
        monkeypatch.setattr(R, name, tmp_path / "results" / getattr(R, name).name)
    run = M.Run(0, "no_filter", 0.04, 0)
    interrupted = run.config(M.SCRATCH / run.name)
    Trainer(PPOConfig.from_dict({**json.loads(interrupted.to_json()), "iterations": 1})).train()
    assert M.main(["--jobs", "1", "--stage", "0"]) == 0
    assert all(M.Run(0, "no_filter", c, 0).data.exists() for c in M.CALIBRATION)
    resumed = M.load(run)["rows"]
    fresh = M.load(M.Run(0, "no_filter", 0.05, 0))["rows"]  # same seed, different coefficient: same iteration 0
    assert [r["iteration"] for r in resumed] == [0, 1] and resumed[0]["rollout/return"] == fresh[0]["rollout/return"]
    uninterrupted = Trainer(M.Run(0, "no_filter", 0.04, 0).config(tmp_path / "again")).train(resume=False)
    keep = lambda row: {k: v for k, v in row.items() if not k.startswith(("timing/", "perf/"))}  # noqa: E731
    assert [keep(r) for r in resumed] == [keep(r) for r in uninterrupted]
    before = {c: M.Run(0, "no_filter", c, 0).data.stat().st_mtime_ns for c in M.CALIBRATION}
    assert M.main(["--jobs", "1", "--stage", "0"]) == 0  # nothing left in stage 0: nothing runs
    assert before == {c: M.Run(0, "no_filter", c, 0).data.stat().st_mtime_ns for c in M.CALIBRATION}
    page = R.build()
    assert "Incomplete" in page and "0 of 48 runs finished" in page and "c\\* = " in page
