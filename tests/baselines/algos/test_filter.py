"""select_groups on hand-worked cases for every mode (the rule in docs/design.md), RAGEN's edge cases one test each."""

import numpy as np
import pytest

from baselines.algos.filter import filter_stats, group_spread, random_groups, select_groups


def returns_with_std(stds):
    """Two samples per group, mean 0, sample std (ddof 1) exactly ``std``: values ±std/√2."""
    return np.array([[s / np.sqrt(2), -s / np.sqrt(2)] for s in stds])


def test_spread_is_unbiased_std_or_variance():
    r = np.array([[0.0, 1.0, 2.0], [5.0, 5.0, 5.0]])
    np.testing.assert_allclose(group_spread(r, "std"), [1.0, 0.0])
    np.testing.assert_allclose(group_spread(r, "var"), [1.0, 0.0])
    np.testing.assert_allclose(group_spread(np.array([[0.0, 2.0]]), "var"), [2.0])


def test_top_p_linear_keeps_shortest_prefix_reaching_mass():
    r = returns_with_std([1.0, 4.0, 3.0, 2.0])  # total 10, threshold 0.9*10-0.01 = 8.99
    # descending 4 (g1), 3 (g2), 2 (g3) -> cumulative 4, 7, 9 >= 8.99 -> keep g1, g2, g3
    assert select_groups(r, value=0.9).tolist() == [1, 2, 3]
    # p = 0.7 -> threshold 6.99: 4, 7 -> keep g1, g2
    assert select_groups(r, value=0.7).tolist() == [1, 2]
    # a tiny p keeps at least the top group
    assert select_groups(r, value=0.01).tolist() == [1]


def test_top_p_one_keeps_everything_only_with_include_zero():
    """RAGEN: ``value >= 1`` returns every *candidate*; with include_zero=False zero-spread groups are still
    dropped (no filter = top-p 1 with include_zero=True)."""
    r = returns_with_std([0.0, 1.0, 0.0])
    assert select_groups(r, value=1.0, include_zero=True).tolist() == [0, 1, 2]
    assert select_groups(r, value=1.0).tolist() == [1]
    assert select_groups(r, value=1.5).tolist() == [1]


def test_top_p_threshold_at_or_below_zero_keeps_nothing():
    """RAGEN's loop checks ``cumulative >= threshold`` before taking a group: p·Σspread − eps ≤ 0 is reached with
    nothing taken, so nothing is kept and the step is skipped."""
    r = returns_with_std([1.0, 4.0])  # total 5: p = 0.002 -> threshold 0.01 - 0.01 = 0
    assert select_groups(r, value=0.002).tolist() == []
    assert select_groups(r, value=0.001).tolist() == []  # threshold -0.005
    assert select_groups(r, value=0.0021).tolist() == [1]  # threshold just above 0: the top group
    small = returns_with_std([0.004, 0.002])  # total 0.006 < eps: even p = 0.9 is reached by nothing
    assert select_groups(small, value=0.9).tolist() == []


def test_top_k_abs_zero_keeps_one_and_caps_at_candidates():
    r = returns_with_std([1.0, 4.0, 0.0])
    assert select_groups(r, mode="top_k_abs", value=0).tolist() == [1]
    assert select_groups(r, mode="top_k_abs", value=0.5).tolist() == [1]
    assert select_groups(r, mode="top_k_abs", value=10).tolist() == [0, 1]  # the zero-spread group stays out


def test_min_p_ties_at_the_bar_are_kept_within_1e10():
    r = returns_with_std([4.0, 1.0, 2.0])
    spreads = group_spread(r)
    just_above = (spreads[1] + 5e-11) / spreads[0]  # the bar sits 5e-11 above group 1's spread
    assert select_groups(r, mode="min_p", value=just_above).tolist() == [0, 1, 2]
    clearly_above = (spreads[1] + 1e-9) / spreads[0]
    assert select_groups(r, mode="min_p", value=clearly_above).tolist() == [0, 2]


def test_random_groups_draws_the_count_without_replacement():
    a = random_groups(16, 5, np.random.default_rng(0))
    assert len(a) == 5 and len(set(a.tolist())) == 5 and a.tolist() == sorted(a.tolist()) and a.max() < 16
    assert random_groups(16, 5, np.random.default_rng(0)).tolist() == a.tolist()
    assert random_groups(4, 0, np.random.default_rng(0)).tolist() == []
    with pytest.raises(ValueError, match="count"):
        random_groups(4, 5, np.random.default_rng(0))


def test_zero_spread_groups_are_excluded_by_default():
    r = returns_with_std([0.0, 2.0, 0.0, 1.0])
    assert select_groups(r, mode="top_k", value=1.0).tolist() == [1, 3]  # int(1.0·4) = 4, capped at 2 candidates
    assert select_groups(r, mode="top_k", value=1.0, include_zero=True).tolist() == [0, 1, 2, 3]


def test_all_zero_spread_means_skip_the_update():
    r = np.ones((4, 8))
    assert select_groups(r).size == 0
    assert select_groups(r, include_zero=True).size == 0  # zero spread carries no signal even when included
    stats = filter_stats(r, select_groups(r))
    assert stats.empty and stats.kept_count == 0 and stats.zero_spread_count == 4 and stats.kept_ratio == 0


def test_ties_keep_group_order():
    r = returns_with_std([1.0, 1.0, 1.0, 1.0])  # threshold 3.59 -> four needed? 1,2,3 < 3.59, 4 >= -> all
    assert select_groups(r, value=0.9).tolist() == [0, 1, 2, 3]
    assert select_groups(r, value=0.5).tolist() == [0, 1]  # threshold 1.99 -> two groups, the first two
    assert select_groups(r, mode="top_k_abs", value=3).tolist() == [0, 1, 2]


def test_one_group():
    assert select_groups(returns_with_std([0.5])).tolist() == [0]
    assert select_groups(returns_with_std([0.0])).tolist() == []


def test_top_p_softmax():
    r = returns_with_std([0.0, 5.0, 1.0])  # zero excluded -> softmax over (5, 1): probs 0.982, 0.018
    assert select_groups(r, prob_mode="softmax", value=0.9).tolist() == [1]
    assert select_groups(r, prob_mode="softmax", value=0.99).tolist() == [1, 2]
    r2 = returns_with_std([1.0, 1.0, 1.0])  # uniform 1/3 each: 0.5 needs two groups
    assert select_groups(r2, prob_mode="softmax", value=0.5).tolist() == [0, 1]


def test_top_k_fraction_and_absolute():
    r = returns_with_std([1.0, 4.0, 3.0, 2.0])
    assert select_groups(r, mode="top_k", value=0.25).tolist() == [1]
    assert select_groups(r, mode="top_k", value=0.5).tolist() == [1, 2]
    assert select_groups(r, mode="top_k", value=0.01).tolist() == [1]  # at least one
    assert select_groups(r, mode="top_k_abs", value=2).tolist() == [1, 2]


def test_min_p():
    r = returns_with_std([1.0, 4.0, 3.0, 2.0])
    assert select_groups(r, mode="min_p", value=0.5).tolist() == [1, 2, 3]  # spread >= 2
    assert select_groups(r, mode="min_p", value=1.0).tolist() == [1]


def test_variance_ranking_differs_from_std_mass():
    r = returns_with_std([1.0, 2.0, 2.0])  # std mass 5 -> p=0.6 thr 2.99: 2, 4 -> g1, g2
    assert select_groups(r, value=0.6).tolist() == [1, 2]
    # var mass 1 + 4 + 4 = 9 -> thr 5.39: 4, 8 -> g1, g2
    assert select_groups(r, value=0.6, spread="var").tolist() == [1, 2]
    # std: p=0.4 -> thr 1.99: 2 -> g1 only ; var: thr 3.59: 4 -> g1 only
    assert select_groups(r, value=0.4).tolist() == [1]


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.array([[0.0, np.nan]]), "finite.*group 0, sample 1"),
        (np.array([[0.0, np.inf], [1.0, 2.0]]), "finite"),
        (np.zeros(4), "groups, samples"),
        (np.zeros((3, 1)), "≥ 2 samples"),
    ],
)
def test_bad_returns_are_rejected_clearly(bad, match):
    with pytest.raises(ValueError, match=match):
        select_groups(bad)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"mode": "top"}, "mode"),
        ({"prob_mode": "lin"}, "prob_mode"),
        ({"spread": "mad"}, "spread"),
        ({"value": -1.0}, "value"),
    ],
)
def test_bad_options_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        select_groups(returns_with_std([1.0, 2.0]), **kwargs)


def test_stats():
    r = returns_with_std([0.0, 4.0, 2.0])
    kept = select_groups(r, value=0.5)
    stats = filter_stats(r, kept)
    assert kept.tolist() == [1]
    assert stats.kept_count == 1 and stats.kept_ratio == pytest.approx(1 / 3) and stats.zero_spread_count == 1
    assert stats.mean_in_group_std == pytest.approx(2.0) and stats.mean_kept_in_group_std == pytest.approx(4.0)


def test_ddof_scales_every_spread_and_meets_only_the_slack():
    r = np.array([[0.0, 1.0], [0.0, 0.38], [2.0, 2.0]])
    assert group_spread(r, "var", ddof=0) == pytest.approx(group_spread(r, "var") / 2)
    assert select_groups(r, spread="var").tolist() == [0, 1]
    assert select_groups(r, spread="var", ddof=0).tolist() == [0]  # the same eps weighs twice as much
    assert select_groups(r, spread="var", ddof=0, eps=0.0).tolist() == select_groups(r, spread="var", eps=0.0).tolist()
    with pytest.raises(ValueError, match=r"filter_ddof must be one of \(0, 1\)"):
        select_groups(r, ddof=2)
