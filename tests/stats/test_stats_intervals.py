"""Confidence intervals: t of the mean, order statistics of the median, bootstrap and Hodges-Lehmann of a ratio."""

import math

import numpy as np
import pytest
import scipy.stats

from perflab.model.records import MeanKind
from perflab.stats import bootstrap_ratio_ci, mean_ci, median_ci
from perflab.stats.intervals import hodges_lehmann_ratio_ci

X = np.array([9.8, 10.4, 10.1, 9.7, 10.9, 10.2, 9.9, 10.6, 10.0, 10.3])


def test_mean_ci_matches_scipy_t_interval():
    for confidence in (0.9, 0.95, 0.99):
        ci = mean_ci(X, confidence)
        low, high = scipy.stats.t.interval(confidence, X.size - 1, loc=X.mean(), scale=scipy.stats.sem(X))
        assert (ci.low, ci.high, ci.confidence) == (pytest.approx(low), pytest.approx(high), confidence)
        assert ci.warnings == ()


def test_mean_ci_too_few():
    for values in ([], [3.0]):
        ci = mean_ci(values)
        assert math.isnan(ci.low) and math.isnan(ci.high)
        assert ci.warnings[0].kind == "too-few-samples"


def test_median_ci_order_statistics_hand_worked():
    # n = 10: k = 2 covers 1 − 2·P(B <= 1) = 1 − 2·11/1024; k = 3 covers only 1 − 2·56/1024
    ci = median_ci(X, 0.95)
    s = np.sort(X)
    assert (ci.low, ci.high) == (s[1], s[8])
    assert ci.confidence == pytest.approx(1 - 22 / 1024)
    ci90 = median_ci(X, 0.85)
    assert (ci90.low, ci90.high) == (s[2], s[7])
    assert ci90.confidence == pytest.approx(1 - 112 / 1024)
    assert scipy.stats.binom.cdf(1, 10, 0.5) == pytest.approx(11 / 1024)


def test_median_ci_small_n_says_so():
    six = median_ci([3, 1, 2, 6, 5, 4])  # [min, max] covers 1 − 2/64 = 96.9%: enough
    assert (six.low, six.high, six.warnings) == (1, 6, ())
    five = median_ci([3, 1, 2, 5, 4])    # 1 − 2/32 = 93.75% < 95%: widest interval + warning
    assert (five.low, five.high) == (1, 5)
    assert five.confidence == pytest.approx(0.9375)
    assert five.warnings[0].kind == "too-few-samples" and "needs 6" in five.warnings[0].message
    one = median_ci([7.0])
    assert (one.low, one.high, one.confidence) == (7.0, 7.0, 0.0)
    assert math.isnan(median_ci([]).low)


def test_bootstrap_ratio_ci_is_seeded_and_scale_equivariant():
    rng = np.random.default_rng(9)
    base, new = rng.normal(100, 3, 15), rng.normal(110, 3, 12)
    ci = bootstrap_ratio_ci(base, new, seed=4)
    assert ci == bootstrap_ratio_ci(base, new, seed=4)
    assert ci.low < new.mean() / base.mean() < ci.high
    doubled = bootstrap_ratio_ci(base, 2 * new, seed=4)
    assert (doubled.low, doubled.high) == (pytest.approx(2 * ci.low), pytest.approx(2 * ci.high))
    h = bootstrap_ratio_ci(base, new, mean_kind=MeanKind.HARMONIC, confidence=0.9)
    assert h.low < scipy.stats.hmean(new) / scipy.stats.hmean(base) < h.high


def test_bootstrap_ratio_ci_covers_the_true_ratio():
    rng = np.random.default_rng(10)
    covered = 0
    for _ in range(200):
        base, new = rng.lognormal(0, 0.05, 20), 1.03 * rng.lognormal(0, 0.05, 20)
        ci = bootstrap_ratio_ci(base, new, mean_kind=MeanKind.GEOMETRIC, seed=int(rng.integers(1 << 30)))
        covered += ci.low <= 1.03 <= ci.high
    assert covered >= 176  # nominal 95%; percentile intervals run a little short at n = 20


def test_bootstrap_ratio_ci_undefined_cases():
    one = bootstrap_ratio_ci([1.0], [1.0, 2.0])
    assert math.isnan(one.low) and one.warnings[0].kind == "too-few-samples"
    zero = bootstrap_ratio_ci([1.0, 0.0, 2.0], [1.0, 2.0], mean_kind=MeanKind.HARMONIC)
    assert math.isnan(zero.high) and zero.warnings[0].kind == "nonpositive-hmean"


def test_the_hodges_lehmann_interval_inverts_the_exact_mann_whitney_test():
    rng = np.random.default_rng(11)
    for _ in range(200):
        m, n = (int(v) for v in rng.integers(4, 12, size=2))
        base = np.exp(0.05 * rng.standard_normal(m))
        new = np.exp(0.05 * rng.standard_normal(n) + rng.uniform(-0.08, 0.08))
        ci = hodges_lehmann_ratio_ci(base, new)
        p = scipy.stats.mannwhitneyu(new, base, alternative="two-sided", method="exact").pvalue
        assert ci.confidence >= 0.95
        assert (ci.low > 1 or ci.high < 1) == (p <= 1 - ci.confidence + 1e-12), (m, n, p, ci)


def test_the_hodges_lehmann_interval_covers_a_common_factor_at_5_vs_5():
    rng = np.random.default_rng(12)
    covered = 0
    for _ in range(2000):
        base = np.exp(0.03 * rng.standard_t(3, 5))
        new = 1.05 * np.exp(0.03 * rng.standard_t(3, 5))
        ci = hodges_lehmann_ratio_ci(base, new)
        covered += ci.low <= 1.05 <= ci.high
    assert covered / 2000 >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / 2000)   # exact: 96.8% for 5 vs 5


def test_the_hodges_lehmann_interval_says_when_the_test_cannot_reject():
    ci = hodges_lehmann_ratio_ci([1.0, 1.1, 1.2], [2.0, 2.1, 2.2])
    assert math.isnan(ci.low) and "3 vs 3" in ci.warnings[0].message
    assert math.isnan(hodges_lehmann_ratio_ci([1.0, -1.0, 2.0, 3.0], [2.0, 2.1, 2.2, 2.3]).low)
    ties = hodges_lehmann_ratio_ci([1.0] * 30 + [2.0] * 30, [2.0] * 30 + [3.0] * 30)  # normal, tie-corrected
    assert 1 <= ties.low <= ties.high <= 3
