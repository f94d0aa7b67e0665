"""Summaries of one sample against scipy/numpy and hand-worked values."""

import math

import numpy as np
import pytest
import scipy.stats

from perflab.model.records import Direction, MeanKind
from perflab.stats import amean, best_mean, centre, clean, cov, gmean, hmean, median, percentiles, stddev, summarize

VALUES = [12.0, 12.9, 11.25, 12.4, 12.6, 13.1, 12.2]


def codes(warnings):
    return {w.kind for w in warnings}


def test_means_against_hand_values_and_scipy():
    assert hmean([1, 2, 4]) == pytest.approx(12 / 7)
    assert gmean([1, 2, 4]) == pytest.approx(2.0)
    assert amean([1, 2, 4]) == pytest.approx(7 / 3)
    assert hmean(VALUES) == pytest.approx(scipy.stats.hmean(VALUES))
    assert gmean(VALUES) == pytest.approx(scipy.stats.gmean(VALUES))
    assert centre(VALUES, MeanKind.HARMONIC) == hmean(VALUES)


def test_spread_against_numpy():
    assert median(VALUES) == pytest.approx(np.median(VALUES))
    assert median([4, 1, 3, 2]) == 2.5
    assert stddev(VALUES) == pytest.approx(np.std(VALUES, ddof=1))
    assert stddev([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(math.sqrt(32 / 7))
    assert cov([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(100 * math.sqrt(32 / 7) / 5)


def test_undefined_statistics_are_nan():
    assert math.isnan(amean([]))
    assert math.isnan(hmean([1.0, 0.0, 2.0]))
    assert math.isnan(hmean([1.0, -2.0]))
    assert math.isnan(gmean([1.0, 0.0]))
    assert math.isnan(median([]))
    assert math.isnan(stddev([3.0]))
    assert math.isnan(cov([-1.0, -2.0]))
    assert np.isnan(percentiles([], [50, 90])).all()


def test_best_mean_depends_on_direction():
    x = [10, 1, 9, 2, 8, 3, 7, 4, 6, 5]
    # best 50% of 10 values = 5 values: the lowest for lower-is-better, the highest otherwise
    assert best_mean(x, 50, MeanKind.ARITHMETIC, Direction.LOWER) == pytest.approx(3.0)
    assert best_mean(x, 50, MeanKind.ARITHMETIC, Direction.HIGHER) == pytest.approx(8.0)
    expected = 5 / sum(1 / v for v in (6, 7, 8, 9, 10))
    assert best_mean(x, 50, MeanKind.HARMONIC, Direction.HIGHER) == pytest.approx(expected)
    # 95% of 10 is 9.5: floor keeps 9 values
    assert best_mean(x, 95, MeanKind.ARITHMETIC, Direction.LOWER) == pytest.approx(5.0)
    # at least one value is kept
    assert best_mean(x, 1, MeanKind.ARITHMETIC, Direction.HIGHER) == 10
    assert math.isnan(best_mean([], 90, MeanKind.ARITHMETIC, Direction.LOWER))
    with pytest.raises(ValueError):
        best_mean(x, 0, MeanKind.ARITHMETIC, Direction.LOWER)


def test_percentiles_match_numpy_linear():
    x = np.arange(1.0, 101.0)
    np.testing.assert_allclose(percentiles(x, [50, 90, 99]), [50.5, 90.1, 99.01])
    np.testing.assert_allclose(percentiles(VALUES), np.percentile(VALUES, [25, 50, 75, 90, 95, 99]))


def test_summarize_fields():
    s = summarize(VALUES, MeanKind.HARMONIC)
    assert s.n == 7 and s.mean_kind is MeanKind.HARMONIC
    assert s.centre == pytest.approx(scipy.stats.hmean(VALUES))
    assert (s.min, s.max) == (11.25, 13.1)
    assert s.median == 12.4
    assert s.stddev == pytest.approx(np.std(VALUES, ddof=1))
    assert s.cov == pytest.approx(100 * s.stddev / np.mean(VALUES))
    assert s.warnings == ()


def test_summarize_empty_and_single():
    empty = summarize([], MeanKind.HARMONIC)
    assert empty.n == 0 and codes(empty.warnings) == {"no-samples"}
    assert all(math.isnan(v) for v in (empty.centre, empty.median, empty.stddev, empty.cov, empty.min, empty.max))
    one = summarize([3.5])
    assert one.n == 1 and one.centre == 3.5 and one.median == 3.5
    assert math.isnan(one.stddev) and math.isnan(one.cov)
    assert codes(one.warnings) == {"single-sample"}


def test_summarize_nonpositive_under_hmean_and_gmean():
    s = summarize([5.0, 0.0, 6.0, 5.5, 5.2], MeanKind.HARMONIC)
    assert math.isnan(s.centre)
    assert "nonpositive-hmean" in codes(s.warnings)
    assert s.median == 5.2  # the rest stays right
    g = summarize([5.0, -1.0, 6.0, 5.5, 5.2], MeanKind.GEOMETRIC)
    assert math.isnan(g.centre) and "nonpositive-gmean" in codes(g.warnings)
    # an arithmetic mean is fine with zeros
    assert summarize([0.0, 1.0, 2.0, 1.0, 1.0]).centre == 1.0


def test_summarize_identical_values():
    s = summarize([7.0] * 6, MeanKind.HARMONIC)
    assert s.centre == pytest.approx(7.0) and s.stddev == 0.0 and s.cov == 0.0
    assert codes(s.warnings) == {"zero-spread"}


def test_non_finite_values_are_dropped_with_a_warning():
    x, warnings = clean([1.0, float("nan"), 2.0, float("inf")])
    np.testing.assert_array_equal(x, [1.0, 2.0])
    assert codes(warnings) == {"non-finite"}
    s = summarize([10.0, float("nan"), 11.0, 10.5, 10.2, 10.8])
    assert s.n == 5 and "non-finite" in codes(s.warnings)


def test_summarize_reports_sample_checks():
    assert "too-few-samples" in codes(summarize([1.0, 1.1, 1.2]).warnings)
    assert "high-cov" in codes(summarize([100, 80, 120, 95, 110]).warnings)
    assert "outliers" in codes(summarize([10.0, 10.1, 9.9, 10.05, 9.95, 10.02, 25.0]).warnings)
    assert "trend" in codes(summarize(np.linspace(100, 110, 20)).warnings)


def test_group_stats_are_numpys_per_group():
    from perflab.stats.summary import group_stats
    rng = np.random.default_rng(3)
    groups = [rng.lognormal(0, 1, size) for size in (5, 0, 1, 2, 5, 7, 2, 0, 5)]
    found = group_stats(groups)
    assert found.n.tolist() == [5, 0, 1, 2, 5, 7, 2, 0, 5]
    for i, x in enumerate(groups):
        if x.size == 0:
            assert math.isnan(found.median[i]) and math.isnan(found.mean[i]) and math.isnan(found.sd[i])
            continue
        assert found.median[i] == np.median(x) and found.mean[i] == np.mean(x)  # exactly, not approximately
        assert found.sd[i] == np.std(x, ddof=1) if x.size > 1 else math.isnan(found.sd[i])
    assert group_stats([np.array([1.0, 2.0, 10.0, 11.0])]).median.tolist() == [6.0]
    assert group_stats([]).n.size == 0
