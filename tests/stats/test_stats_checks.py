"""Warning detectors: they fire on what they look for, and rarely on clean samples."""

import math

import numpy as np
import pytest
import scipy.stats

from perflab.stats import (
    bimodality_ratio,
    check_bimodal,
    check_cov,
    check_outliers,
    check_sample_size,
    check_spread,
    check_trend,
    mann_kendall,
    modified_z_scores,
)


def test_sample_size_codes():
    assert check_sample_size(0).kind == "no-samples"
    assert check_sample_size(1).kind == "single-sample"
    assert check_sample_size(4).kind == "too-few-samples"
    assert check_sample_size(5) is None


def test_spread_and_cov():
    assert check_spread(3, 0.0).kind == "zero-spread"
    assert check_spread(1, 0.0) is None
    assert check_spread(3, 0.1) is None
    assert check_cov(10.5).kind == "high-cov"
    assert check_cov(10.0) is None
    assert check_cov(math.nan) is None


def test_modified_z_scores_hand_worked():
    # median 3, |deviations| 2 1 0 1 7 -> MAD 1
    np.testing.assert_allclose(modified_z_scores([1, 2, 3, 4, 10]), 0.6745 * np.array([-2, -1, 0, 1, 7]))
    # MAD = 0 (most values equal): falls back to the mean absolute deviation
    z = modified_z_scores([5, 5, 5, 5, 9])
    np.testing.assert_allclose(z, np.array([0, 0, 0, 0, 4]) / (1.253314 * 0.8))
    np.testing.assert_array_equal(modified_z_scores([2, 2, 2]), [0, 0, 0])
    assert modified_z_scores([]).size == 0


def test_outliers():
    w = check_outliers([1, 2, 3, 4, 10])
    assert w.kind == "outliers" and "#4=10" in w.message
    assert check_outliers([1, 2, 3, 4, 5]) is None
    assert check_outliers([1, 100]) is None  # too few to judge
    assert check_outliers([5, 5, 5, 5, 9]).kind == "outliers"


def test_mann_kendall_hand_worked_and_against_kendall_tau():
    # 1..5 rising: S = 10, Var S = 5·4·15/18, z = (10 − 1)/sqrt(Var S)
    z, p = mann_kendall([1, 2, 3, 4, 5])
    assert z == pytest.approx(9 / math.sqrt(50 / 3))
    assert p == pytest.approx(math.erfc(z / math.sqrt(2)))
    x = np.random.default_rng(5).normal(size=40) + np.linspace(0, 1, 40)
    z, p = mann_kendall(x)
    tau = scipy.stats.kendalltau(np.arange(40), x).statistic
    s = tau * 40 * 39 / 2  # no ties: S = tau·n(n−1)/2
    assert z == pytest.approx((s - np.sign(s)) / math.sqrt(40 * 39 * 85 / 18))
    # the continuity-corrected p is a little above scipy's uncorrected asymptotic one
    assert p >= scipy.stats.kendalltau(np.arange(40), x, method="asymptotic").pvalue
    assert mann_kendall([3.0, 3.0, 3.0]) == (0.0, 1.0)
    assert all(math.isnan(v) for v in mann_kendall([1.0, 2.0]))


def test_trend():
    w = check_trend(np.linspace(100, 105, 12) + np.random.default_rng(1).normal(0, 0.2, 12))
    assert w.kind == "trend" and "rising" in w.message
    assert "falling" in check_trend(np.arange(20.0)[::-1]).message
    assert check_trend([1, 2, 3, 4, 5]) is None  # 5 values can never reach p < 0.01
    assert check_trend([5.0, 1.0, 4.0, 2.0, 3.0, 5.5, 1.5, 4.5]) is None


def test_bimodal_fires_on_two_groups():
    rng = np.random.default_rng(2)
    two_levels = np.concatenate([rng.normal(100, 0.5, 8), rng.normal(110, 0.5, 8)])
    rng.shuffle(two_levels)
    assert check_bimodal(two_levels).kind == "bimodal"
    assert bimodality_ratio(two_levels) > 0.95
    assert check_bimodal(two_levels[:9]) is None  # fewer than 10: not judged
    assert math.isnan(bimodality_ratio([4.0] * 12))


def test_bimodal_is_rare_on_normal_and_lognormal_samples():
    rng = np.random.default_rng(3)
    for n in (10, 15, 20, 30):
        fired = sum(check_bimodal(rng.normal(100, 3, n)) is not None for _ in range(300))
        fired += sum(check_bimodal(rng.lognormal(0, 0.25, n)) is not None for _ in range(300))
        assert fired <= 6, (n, fired)  # the simulated rate is about 0.2%


def test_long_series_trend_uses_spearman_and_agrees_with_scipy():
    import scipy.stats

    from perflab.stats import spearman_trend
    rng = np.random.default_rng(5)
    x = np.round(rng.normal(0, 1, 300) + 0.004 * np.arange(300), 1)  # ties too
    z, p = spearman_trend(x)
    rho = scipy.stats.spearmanr(np.arange(300), x).statistic
    assert z == pytest.approx(rho * math.sqrt(299))
    w = check_trend(x)
    assert w is not None and "Spearman" in w.message and "rising" in w.message
    assert check_trend(rng.normal(0, 1, 300)) is None
    assert spearman_trend([2.0] * 200) == (0.0, 1.0)
