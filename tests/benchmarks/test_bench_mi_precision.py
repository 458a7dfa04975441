"""``benchmarks/bench_mi_precision.py``: what it compares is the same pairs scored in two dtypes, and a saturated
batch (stderr ≈ 0) is counted apart instead of turning a rounding difference into thousands of standard errors."""

from __future__ import annotations

import json

import pytest

from tests.helpers.paths import load_script


def test_deviations_are_in_fp32_standard_errors_and_saturated_batches_apart():
    bench = load_script("benchmarks/bench_mi_precision.py")
    values = {
        (0, "float32"): {"Bandit first_turn": {"mi_estimate": [0.30, 0.02], "mi_estimate_seq": [2.0794, 2e-7]}},
        (0, "bfloat16"): {"Bandit first_turn": {"mi_estimate": [0.31, 0.02], "mi_estimate_seq": [2.0795, 2e-7]}},
        (1, "float32"): {"Bandit first_turn": {"mi_estimate": [0.20, 0.05], "mi_zscore": [float("nan"), 0.1]}},
        (1, "bfloat16"): {"Bandit first_turn": {"mi_estimate": [0.20, 0.05], "mi_zscore": [0.4, 0.1]}},
    }
    out = bench.deviations(values, [0, 1])
    assert out["mi_estimate"]["ratios"] == pytest.approx([0.5, 0.0])
    assert out["mi_estimate"]["saturated"] == []
    assert out["mi_estimate_seq"] == {"ratios": [], "saturated": [pytest.approx(1e-4)]}
    assert "mi_zscore" not in out  # not finite in fp32: nothing to compare


@pytest.mark.slow
def test_both_dtypes_score_the_same_batches_of_a_run(tmp_path, capsys):
    from harness.cli import main as harness

    runs = tmp_path / "runs"
    argv = ["run", "tiny", "--env", "ragen/Bandit-v0", "--episodes", "4", "--samples", "2", "--mi-samples", "0",
            "--no-plots", "--quiet", "--out", str(runs), "--run-id", "seed-0"]  # fmt: skip
    assert harness(argv) == 0
    capsys.readouterr()
    bench = load_script("benchmarks/bench_mi_precision.py")
    raw = tmp_path / "raw.json"
    assert bench.main(["--seeds", "0", "--rounds", "1", "--runs", str(runs), "--json", str(raw)]) == 0
    printed = capsys.readouterr().out
    assert "| 0 |" in printed and "| mi_estimate |" in printed
    result = json.loads(raw.read_text())
    full, half = result["0 float32"]["values"], result["0 bfloat16"]["values"]
    assert sorted(full) == sorted(half) == ["ragen/Bandit-v0 first_turn", "ragen/Bandit-v0 trajectory"]
    for batch in full:  # the same pairs: the same count and ties; the values close, not equal
        assert full[batch]["distinct_prompts"] == half[batch]["distinct_prompts"]
        assert half[batch]["mi_estimate"][0] == pytest.approx(full[batch]["mi_estimate"][0], abs=0.05)
    assert any(full[b]["mi_estimate"][0] != half[b]["mi_estimate"][0] for b in full)
