"""Welch's t, Mann-Whitney U and Benjamini-Hochberg against scipy and published values."""

import math

import numpy as np
import pytest
import scipy.stats

from perflab.stats import benjamini_hochberg, mann_whitney, welch_t

rng = np.random.default_rng(42)
A = rng.normal(10.0, 1.0, 12)
B = rng.normal(10.8, 1.5, 12)
C = rng.lognormal(2.3, 0.1, 7)


def test_welch_matches_scipy_for_equal_n():
    ours = welch_t(A, B, confidence=0.9)
    ref = scipy.stats.ttest_ind(B, A, equal_var=False)
    assert ours.statistic == pytest.approx(ref.statistic)
    assert ours.p_value == pytest.approx(ref.pvalue)
    assert ours.df == pytest.approx(ref.df)
    low, high = ref.confidence_interval(0.9)
    assert (ours.ci_low, ours.ci_high) == (pytest.approx(low), pytest.approx(high))
    assert ours.difference == pytest.approx(B.mean() - A.mean())


def test_textbook_welch_matches_scipy_for_unequal_n():
    ours = welch_t(A, C, bounded_df=False)
    ref = scipy.stats.ttest_ind(C, A, equal_var=False)
    assert (ours.statistic, ours.p_value, ours.df) == (pytest.approx(ref.statistic), pytest.approx(ref.pvalue),
                                                       pytest.approx(ref.df))


def test_bounded_df_for_unequal_n():
    ours = welch_t(A, C)
    textbook = welch_t(A, C, bounded_df=False)
    na, nb = A.size, C.size
    cap = (1 / na + 1 / nb) ** 2 / (1 / (na * na * (na - 1)) + 1 / (nb * nb * (nb - 1)))
    assert ours.df == pytest.approx(min(textbook.df, cap))
    assert ours.statistic == textbook.statistic
    assert ours.p_value >= textbook.p_value


def test_welch_on_logs():
    ours = welch_t(A, B, log=True)
    ref = scipy.stats.ttest_ind(np.log(B), np.log(A), equal_var=False)
    assert ours.p_value == pytest.approx(ref.pvalue)
    assert ours.difference == pytest.approx(np.log(B).mean() - np.log(A).mean())


def test_welch_edge_cases():
    assert all(math.isnan(v) for v in welch_t([1.0], [1.0, 2.0]))
    assert all(math.isnan(v) for v in welch_t([1.0, 0.0], [1.0, 2.0], log=True))
    same = welch_t([5.0, 5.0, 5.0], [5.0, 5.0, 5.0])
    assert math.isnan(same.p_value) and (same.ci_low, same.ci_high) == (0.0, 0.0)
    exact = welch_t([5.0, 5.0, 5.0], [6.0, 6.0])
    assert exact.p_value == 0.0 and exact.statistic == math.inf and exact.ci_low == exact.ci_high == 1.0


def test_mann_whitney_matches_scipy():
    assert mann_whitney(A, B) == pytest.approx(scipy.stats.mannwhitneyu(B, A, method="exact").pvalue)
    assert mann_whitney(A[:5], C) == pytest.approx(scipy.stats.mannwhitneyu(C, A[:5]).pvalue)
    big_a, big_b = rng.normal(0, 1, 60), rng.normal(0.3, 1, 60)
    reference = scipy.stats.mannwhitneyu(big_b, big_a, method="asymptotic").pvalue
    assert mann_whitney(big_a, big_b) == pytest.approx(reference)
    tied_a, tied_b = [1, 2, 2, 3, 4], [2, 3, 4, 4, 5]
    reference = scipy.stats.mannwhitneyu(tied_b, tied_a, method="asymptotic").pvalue
    assert mann_whitney(tied_a, tied_b) == pytest.approx(reference)


def test_mann_whitney_needs_four_per_side():
    # complete separation is the most extreme outcome: 2/C(6,3) = 0.1, 2/C(8,4) = 0.0286
    assert mann_whitney([1, 2, 3], [4, 5, 6]) == pytest.approx(0.1)
    assert mann_whitney([1, 2, 3, 4], [5, 6, 7, 8]) == pytest.approx(2 / 70)
    assert math.isnan(mann_whitney([], [1.0, 2.0]))


BH_1995 = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459,
           0.3240, 0.4262, 0.5719, 0.6528, 0.7590, 1.000]


def test_benjamini_hochberg_1995_example():
    result = benjamini_hochberg(BH_1995, q=0.05)
    assert result.rejected.tolist() == [True] * 4 + [False] * 11
    np.testing.assert_allclose(result.adjusted, scipy.stats.false_discovery_control(BH_1995))


def test_benjamini_hochberg_order_nan_and_empty():
    shuffled = np.array(BH_1995)[::-1]
    assert benjamini_hochberg(shuffled).rejected.tolist() == [False] * 11 + [True] * 4
    with_nan = benjamini_hochberg([0.001, math.nan, 0.04])
    assert with_nan.rejected.tolist() == [True, False, False]
    assert math.isnan(with_nan.adjusted[1])
    np.testing.assert_allclose(with_nan.adjusted[[0, 2]], [0.003, 0.06])  # NaN still counts in m = 3
    assert benjamini_hochberg([]).rejected.size == 0
    # a step-up: p_(2) = 0.05 <= 2·0.05/2 rejects both, although p_(1) = 0.04 > 0.025
    assert benjamini_hochberg([0.04, 0.05]).rejected.tolist() == [True, True]
