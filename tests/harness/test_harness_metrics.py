"""The metrics against hand-computed values and closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.metrics import (
    Estimate,
    MetricUnavailable,
    invalid_action_rate,
    pass_at_k,
    pass_at_k_unbiased,
    reward_std_in_group,
    success_rate,
    token_entropy,
    zero_variance_groups,
)
from harness.mi.estimator import COLLAPSE_KEYS, COLLAPSE_SEQ_KEYS, ZScoreEMA, collapse_metrics, topk_hit_probability


def values(metrics):
    return {key: est.value for key, est in metrics.items()}


def test_two_by_two_by_hand():
    m = values(collapse_metrics([[0.0, -1.0], [-2.0, 0.0]], [0, 1]))
    marginal = np.array([math.log(1 + math.exp(-1)), math.log(1 + math.exp(-2))]) - math.log(2)
    assert m["mi_estimate"] == pytest.approx(-marginal.mean())  # matched = 0
    assert m["mi_estimate"] == pytest.approx(0.4730523, abs=1e-6)
    assert m["cond_entropy_estimate"] == 0.0
    assert m["reasoning_entropy_estimate"] == pytest.approx(0.4730523, abs=1e-6)
    sigma = abs(marginal[0] - marginal[1]) / 2
    assert m["mi_zscore"] == pytest.approx(np.mean(-marginal / (sigma + 1e-3)))
    assert m["retrieval_accuracy"] == 1.0 and m["retrieval_accuracy@2"] == 1.0
    assert m["retrieval_chance"] == 0.5
    assert set(m) == set(COLLAPSE_KEYS)


def test_ties_count_the_expected_hit_and_equivalent_prompts_count_as_correct():
    matrix = [[0.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]
    m = values(collapse_metrics(matrix, [0, 1]))
    assert m["retrieval_accuracy"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert m["retrieval_accuracy@2"] == pytest.approx((2 / 3 + 1) / 2)
    assert m["retrieval_accuracy@4"] == 1.0
    assert m["retrieval_chance"] == pytest.approx(1 / 3)
    equivalent = np.eye(3, dtype=bool)
    equivalent[1, 2] = True  # symmetric closure is implied
    m = values(collapse_metrics(matrix, [0, 1], equivalent=equivalent))
    assert m["retrieval_accuracy"] == pytest.approx((1 / 3 + 1) / 2)
    assert m["retrieval_chance"] == pytest.approx((1 / 3 + 2 / 3) / 2)


def test_topk_hit_probability_counts_ranks_above_the_best_correct_column():
    row = np.array([5.0, 3.0, 3.0, 3.0, 1.0])
    correct = np.array([False, True, False, False, False])
    assert topk_hit_probability(row, correct, 1) == 0.0  # column 0 is strictly better
    assert topk_hit_probability(row, correct, 2) == pytest.approx(1 / 3)
    assert topk_hit_probability(row, correct, 3) == pytest.approx(1 - math.comb(2, 2) / math.comb(3, 2))
    assert topk_hit_probability(row, correct, 4) == 1.0


def test_a_single_prompt_makes_the_family_unavailable_not_zero():
    # the collapse signal itself would read 0.000 ± 0.000 and retrieval 1.0 from one column: say why instead
    m = collapse_metrics([[-1.5], [-0.5]], [0, 0], logp_sum=[[-3.0], [-2.0]])
    assert set(m) == set(COLLAPSE_KEYS) | set(COLLAPSE_SEQ_KEYS)
    for key, estimate in m.items():
        assert math.isnan(estimate.value), key
        assert "1 distinct prompt" in estimate.to_json()["unavailable"] and estimate.to_json()["value"] is None
    # two columns holding the same prompt text are one prompt too
    same = collapse_metrics([[-1.0, -1.0], [-2.0, -2.0]], [0, 1], equivalent=np.ones((2, 2), dtype=bool))
    assert same["mi_estimate"].to_json()["unavailable"].startswith("every scored pair has the same prompt")


def test_two_prompts_are_counted_and_flagged_as_few():
    from harness.mi.estimator import FEW_PROMPTS

    m = collapse_metrics([[-1.0, -3.0], [-2.5, -0.5]], [0, 1])
    assert m["distinct_prompts"].value == 2 < FEW_PROMPTS and m["mi_estimate"].value > 0


def test_mi_zscore_is_unavailable_when_the_marginal_has_no_spread():
    # a deterministic agent: every reasoning has the same marginal; the old z-score was the gap x ~1000
    m = collapse_metrics([[0.0, -50.0], [-50.0, 0.0]], [0, 1])
    assert m["mi_estimate"].value == pytest.approx(math.log(2), abs=1e-6)
    assert math.isnan(m["mi_zscore"].value)
    assert "no spread" in m["mi_zscore"].to_json()["unavailable"]


def test_one_reasoning_under_two_prompts_still_has_an_mi_estimate():
    one = collapse_metrics([[-1.0, -2.0]], [0])
    assert one["mi_estimate"].n == 1 and math.isnan(one["mi_estimate"].stderr)


def test_bad_input_is_rejected_with_a_clear_error():
    with pytest.raises(ValueError, match=r"NaN or \+inf in row\(s\) \[1\]"):
        collapse_metrics([[0.0, -1.0], [np.nan, 0.0]], [0, 1])
    with pytest.raises(ValueError, match=r"NaN or \+inf"):
        collapse_metrics([[np.inf, -1.0], [0.0, 0.0]], [0, 1])
    with pytest.raises(ValueError, match="-inf under their own prompt"):
        collapse_metrics([[-np.inf, 0.0], [0.0, 0.0]], [0, 1])
    with pytest.raises(ValueError, match="non-empty"):
        collapse_metrics(np.zeros((0, 3)), [])
    with pytest.raises(ValueError, match="own_column values"):
        collapse_metrics([[0.0, 0.0]], [2])
    with pytest.raises(ValueError, match="own_column must be"):
        collapse_metrics([[0.0, 0.0]], [0, 1])
    with pytest.raises(ValueError, match="equivalent must be"):
        collapse_metrics([[0.0, 0.0]], [0], equivalent=np.eye(3, dtype=bool))
    with pytest.raises(ValueError, match="logp_sum must have the shape"):
        collapse_metrics([[0.0, 0.0]], [0], logp_sum=[[0.0]])
    # -inf off the own column is log 0 (a deterministic agent), which is allowed
    m = collapse_metrics([[0.0, -np.inf], [-np.inf, 0.0]], [0, 1])
    assert m["mi_estimate"].value == pytest.approx(math.log(2))


def _cross_scores(log_p, prompts, samples_per_prompt, rng):
    """Sample reasonings z ~ p(.|x_j) for each prompt and score each under every prompt."""
    own, rows = [], []
    for j in range(prompts):
        z = rng.choice(log_p.shape[1], size=samples_per_prompt, p=np.exp(log_p[j]))
        rows.extend(log_p[:, z].T)
        own.extend([j] * samples_per_prompt)
    return np.array(rows), np.array(own)


def test_template_collapsed_policy_has_high_entropy_zero_mi_and_chance_retrieval():
    prompts, vocab = 8, 4096
    log_p = np.full((prompts, vocab), -math.log(vocab))  # diverse but input-agnostic
    matrix, own = _cross_scores(log_p, prompts, 8, np.random.default_rng(0))
    m = values(collapse_metrics(matrix, own))
    assert m["reasoning_entropy_estimate"] == pytest.approx(math.log(vocab))
    assert m["mi_estimate"] == pytest.approx(0.0, abs=1e-12)
    assert m["retrieval_accuracy"] == pytest.approx(m["retrieval_chance"]) and m["retrieval_chance"] == 1 / prompts


def test_input_dependent_policy_has_mi_near_log_n_and_full_retrieval():
    prompts, vocab = 8, 4096
    rng = np.random.default_rng(1)
    p = np.full((prompts, vocab), 0.01 / vocab)
    for j in range(prompts):  # each prompt puts 99% of its mass on its own 64 reasonings
        p[j, j * 64 : (j + 1) * 64] += 0.99 / 64
    matrix, own = _cross_scores(np.log(p), prompts, 8, rng)
    m = values(collapse_metrics(matrix, own))
    assert m["mi_estimate"] > 0.95 * math.log(prompts)
    assert m["mi_estimate"] <= math.log(prompts) + 1e-9
    assert m["retrieval_accuracy"] > 0.95
    assert m["cond_entropy_estimate"] < m["reasoning_entropy_estimate"]


def test_zscore_ema_starts_at_the_batch_sigma_and_then_smooths():
    ema = ZScoreEMA()
    matrix = [[0.0, -1.0], [-2.0, 0.0]]
    first = ema.update(matrix, [0, 1])
    assert first.value == pytest.approx(collapse_metrics(matrix, [0, 1])["mi_zscore"].value)
    sigma1 = ema.sigma_ema
    ema.update([[0.0, -5.0], [-1.0, 0.0]], [0, 1])
    assert ema.sigma_ema != sigma1


@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.93])
@pytest.mark.parametrize("n", [1, 4, 7])
def test_pass_at_k_is_unbiased_against_the_closed_form(n, p):
    for k in range(1, n + 1):
        expected = sum(math.comb(n, c) * p**c * (1 - p) ** (n - c) * pass_at_k_unbiased(n, c, k) for c in range(n + 1))
        assert expected == pytest.approx(1 - (1 - p) ** k, abs=1e-12)


def test_pass_at_k_matches_the_binomial_ratio():
    for n, c, k in [(10, 3, 1), (10, 3, 4), (16, 0, 8), (16, 16, 8), (5, 2, 4)]:
        assert pass_at_k_unbiased(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k))
    with pytest.raises(ValueError, match="k must be"):
        pass_at_k_unbiased(4, 1, 5)


def episode(seed, sample, success, ret, valid=(True,), entropy=None):
    turns = [
        {"info": {"action_is_valid": v}, "tokens": 4, "entropy_sum": entropy if entropy is None else entropy * 4}
        for v in valid
    ]
    return {
        "env_id": "e",
        "agent": "a",
        "seed": seed,
        "sample": sample,
        "success": success,
        "return": ret,
        "turns": turns,
    }


def test_episode_metrics_and_empty_input():
    eps = [episode(0, 0, True, 1.0), episode(0, 1, False, 0.0, (False, True)), episode(1, 0, False, 0.0)]
    eps.append(episode(1, 1, False, 0.0))
    assert success_rate(eps) == Estimate.of([1, 0, 0, 0])
    assert invalid_action_rate(eps).value == pytest.approx(1 / 5)
    assert pass_at_k(eps, 2).value == pytest.approx(0.5)  # group 0 solved, group 1 not
    assert reward_std_in_group(eps).value == pytest.approx(np.std([1.0, 0.0], ddof=1) / 2)
    assert zero_variance_groups(eps).value == 0.5
    with pytest.raises(MetricUnavailable):
        token_entropy(eps)
    with pytest.raises(MetricUnavailable):
        pass_at_k(eps, 3)
    for metric in (success_rate, invalid_action_rate, reward_std_in_group):
        with pytest.raises(ValueError, match="no episodes"):
            metric([])
    assert token_entropy([episode(0, 0, True, 1.0, entropy=0.5)]).value == pytest.approx(0.5)


# ---- column subsampling (``scored``) ----------------------------------------------------------------------
def _subsample(own, cols, per_row, rng):
    """Each row's own column plus ``per_row - 1`` of its other columns, uniformly without replacement."""
    mask = np.zeros((len(own), cols), dtype=bool)
    for i, j in enumerate(own):
        others = [c for c in range(cols) if c != j]
        mask[i, rng.choice(others, size=per_row - 1, replace=False)] = True
        mask[i, j] = True
    return mask


def test_scoring_every_entry_is_the_dense_estimator():
    rng = np.random.default_rng(3)
    matrix, total = rng.normal(-2, 1, (12, 5)), rng.normal(-20, 5, (12, 5))
    own = rng.integers(0, 5, 12)
    equivalent = np.eye(5, dtype=bool)
    equivalent[1, 3] = True
    dense = values(collapse_metrics(matrix, own, total, equivalent))
    full = values(collapse_metrics(matrix, own, total, equivalent, scored=np.ones((12, 5), dtype=bool)))
    assert full == pytest.approx(dense)


def test_subsampled_mixture_is_unbiased_over_the_column_draws():
    # every 2-of-4 draw of the other columns, averaged: exactly the dense mixture (inside the log)
    from itertools import combinations

    row = np.array([[-0.5, -1.0, -3.0, -2.0, -7.0]])
    dense = math.exp(-values(collapse_metrics(row, [0]))["reasoning_entropy_estimate"])
    draws = []
    for pair in combinations(range(1, 5), 2):
        mask = np.zeros((1, 5), dtype=bool)
        mask[0, [0, *pair]] = True
        draws.append(math.exp(-values(collapse_metrics(row, [0], scored=mask))["reasoning_entropy_estimate"]))
    assert np.mean(draws) == pytest.approx(dense, rel=1e-12)


def test_subsampled_collapsed_policy_is_exactly_zero_mi_at_the_subsample_chance():
    prompts, vocab = 16, 4096
    log_p = np.full((prompts, vocab), -math.log(vocab))
    matrix, own = _cross_scores(log_p, prompts, 4, np.random.default_rng(0))
    mask = _subsample(own, prompts, 4, np.random.default_rng(1))
    matrix[~mask] = np.nan  # unscored entries are never read
    m = values(collapse_metrics(matrix, own, scored=mask))
    assert m["mi_estimate"] == pytest.approx(0.0, abs=1e-12)
    assert m["reasoning_entropy_estimate"] == pytest.approx(math.log(vocab))
    assert m["retrieval_chance"] == pytest.approx(1 / 4) and m["retrieval_accuracy"] == pytest.approx(1 / 4)
    assert m["retrieval_accuracy@4"] == 1.0


def test_subsampled_input_dependent_policy_keeps_mi_near_log_n():
    prompts, vocab = 16, 4096
    p = np.full((prompts, vocab), 0.01 / vocab)
    for j in range(prompts):
        p[j, j * 64 : (j + 1) * 64] += 0.99 / 64
    matrix, own = _cross_scores(np.log(p), prompts, 4, np.random.default_rng(2))
    dense = values(collapse_metrics(matrix, own))
    sub = values(collapse_metrics(matrix, own, scored=_subsample(own, prompts, 4, np.random.default_rng(3))))
    assert sub["mi_estimate"] == pytest.approx(dense["mi_estimate"], abs=0.02)
    assert sub["mi_estimate"] > 0.95 * math.log(prompts)
    assert sub["retrieval_accuracy"] > 0.95


def test_scored_mask_errors_name_the_problem():
    matrix = np.zeros((2, 3))
    with pytest.raises(ValueError, match="boolean matrix"):
        collapse_metrics(matrix, [0, 1], scored=np.ones((2, 2), dtype=bool))
    with pytest.raises(ValueError, match=r"row\(s\) \[1\] leave out their own column"):
        collapse_metrics(matrix, [0, 1], scored=np.array([[1, 1, 0], [1, 0, 1]], dtype=bool))
    with pytest.raises(ValueError, match=r"row\(s\) \[0\] have their own column only"):
        collapse_metrics(matrix, [0, 1], scored=np.array([[1, 0, 0], [1, 1, 0]], dtype=bool))
    with pytest.raises(ValueError, match="NaN"):  # NaN where it was scored is still refused
        collapse_metrics([[0.0, np.nan, 0.0], [0.0, 0.0, 0.0]], [0, 1], scored=np.ones((2, 3), dtype=bool))
