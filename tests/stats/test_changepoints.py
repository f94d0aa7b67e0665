"""Change-point detection: each method's contract on small known series.

Accuracy over a grid of synthetic series lives in test_changepoints_accuracy.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from perflab.model.methods import CHANGE_POINT_NAMES as METHODS
from perflab.model.methods import EDivisiveParams, change_point_method
from perflab.model.records import Direction
from perflab.model.verdicts import oriented
from perflab.stats import ChangePoint
from perflab.stats.changepoints import CENTRES, detect
from perflab.stats.energy import energy_statistic
from perflab.stats.penalised import robust_noise_sd


def _by(name):
    """The detector ``name`` with its parameters as keywords."""
    def find(values, **params):
        return detect(values, method=name, params=change_point_method(name).params(**params))
    find.__name__ = name
    return find


e_divisive, pelt, binseg = _by("e-divisive"), _by("pelt"), _by("binseg")
STEP = np.concatenate([np.full(40, 100.0), np.full(40, 110.0)]) + np.random.default_rng(3).normal(0, 1, 80)


@pytest.mark.parametrize("method", [e_divisive, pelt, binseg])
def test_a_clear_step_is_described(method):
    (cp,) = method(STEP)
    assert isinstance(cp, ChangePoint)
    assert cp.index == 40
    assert cp.mean_before == pytest.approx(STEP[:40].mean())
    assert cp.mean_after == pytest.approx(STEP[40:].mean())
    assert cp.stddev_before == pytest.approx(STEP[:40].std(ddof=1))
    assert cp.stddev_after == pytest.approx(STEP[40:].std(ddof=1))
    assert cp.change_pct == pytest.approx(100 * (cp.mean_after - cp.mean_before) / cp.mean_before)
    assert 9 < cp.change_pct < 11
    assert cp.p_value < 1e-20
    assert cp.method == method.__name__.replace("_", "-")


def test_oriented_makes_positive_better():
    assert oriented(10.0, Direction.HIGHER) == 10.0
    assert oriented(10.0, Direction.LOWER) == -10.0


@pytest.mark.parametrize("method", [e_divisive, pelt, binseg])
def test_nan_gaps_are_dropped_and_indices_stay_original(method):
    x = STEP.copy()
    gaps = [3, 17, 38, 39, 40, 41, 60, 79]
    x[gaps] = np.nan
    x[5] = np.inf
    (cp,) = method(x)
    assert cp.index == 42  # first finite value of the new regime in the caller's numbering
    finite = np.isfinite(x)
    assert cp.mean_after == pytest.approx(x[42:][finite[42:]].mean())


@pytest.mark.parametrize("method", [e_divisive, pelt, binseg])
def test_index_mapping_with_many_gaps(method):
    rng = np.random.default_rng(5)
    clean = np.concatenate([np.full(100, 50.0), np.full(100, 45.0), np.full(100, 52.0)])
    clean += rng.normal(0, 0.5, 300)
    x = np.full(600, np.nan)
    x[::2] = clean  # every other point missing: clean index i is original 2i
    assert [c.index for c in method(x)] == [200, 400]


@pytest.mark.parametrize("method", [e_divisive, pelt, binseg])
@pytest.mark.parametrize("values", [[], [1.0], [1.0, 2.0, 3.0], [np.nan] * 10, [7.0] * 200,
                                    [np.nan, 7.0, 7.0, np.nan] * 50])
def test_short_empty_and_constant_series_give_nothing(method, values):
    assert method(values) == []


def test_pelt_too_short_for_min_size():
    assert pelt([1.0, 1.0, 1.0, 9.0, 9.0], min_size=3) == []
    assert [c.index for c in pelt([1.0, 1.0, 1.0, 9.0, 9.0, 9.0], min_size=3)] == [3]


@pytest.mark.parametrize("method", [e_divisive, pelt, binseg])
def test_ten_thousand_points_complete(method):
    rng = np.random.default_rng(11)
    levels = np.repeat(100 + rng.normal(0, 5, 20), 500)
    found = method(levels + rng.normal(0, 1, 10_000))
    assert 15 <= len(found) <= 25  # 19 true steps, a few may be tiny


@pytest.mark.parametrize("method", [e_divisive, pelt, binseg])
def test_min_magnitude_merges_small_changes_away(method):
    rng = np.random.default_rng(2)
    x = np.concatenate([np.full(200, 100.0), np.full(200, 102.0)]) + rng.normal(0, 0.3, 400)
    assert [c.index for c in method(x)] == [200]
    assert method(x, min_magnitude=0.05) == []


@pytest.mark.parametrize("method", [e_divisive, pelt, binseg])
def test_min_magnitude_drops_only_the_small_change(method):
    # a significant 1% step (p tiny) and a 10% step: only the 1% one goes
    rng = np.random.default_rng(6)
    x = np.repeat([100.0, 101.0, 111.1], 300) + rng.normal(0, 0.1, 900)
    assert [c.index for c in method(x)] == [300, 600]
    (kept,) = method(x, min_magnitude=0.05)
    assert kept.index == 600
    assert kept.mean_before == pytest.approx(x[:600].mean())  # neighbours re-described


def test_binseg_repairs_what_the_first_split_misses():
    # a short excursion inside a long flat stretch: its two edges cancel in one split
    rng = np.random.default_rng(12)
    x = np.full(2000, 100.0)
    x[1000:1030] = 103.0
    x += rng.normal(0, 1, 2000)
    assert [c.index for c in binseg(x)] == [c.index for c in pelt(x)] == [1000, 1030]


def test_e_divisive_windows_find_what_one_window_finds():
    # the batched sliding windows agree with one window over a short series
    x = STEP[:60]
    assert [c.index for c in e_divisive(x, window=60)] == [c.index for c in e_divisive(x, window=20)] == [40]


def test_pelt_penalties():
    rng = np.random.default_rng(4)
    x = rng.normal(100, 1, 3000)
    assert len(pelt(x, penalty="aic")) >= len(pelt(x, penalty="bic")) >= len(pelt(x, penalty="mbic"))
    assert len(pelt(x, penalty=0.0)) == 0  # no penalty: no usable fit, nothing reported
    with pytest.raises(ValueError):
        pelt(x, penalty="nope")


def test_energy_statistic_matches_the_definition():
    x = np.random.default_rng(8).normal(0, 1, 12)
    q = energy_statistic(x)
    for tau in range(2, 11):
        a, b = x[:tau], x[tau:]
        m, n = a.size, b.size
        between = np.abs(a[:, None] - b[None, :]).sum() * 2 / (m * n)
        within_a = np.abs(a[:, None] - a[None, :]).sum() / (m * (m - 1))
        within_b = np.abs(b[:, None] - b[None, :]).sum() / (n * (n - 1))
        assert q[tau] == pytest.approx(m * n / (m + n) * (between - within_a - within_b))
    assert np.isnan(q[[0, 1, 11, 12]]).all()


def test_robust_noise_sd_ignores_steps():
    rng = np.random.default_rng(9)
    x = np.repeat([0.0, 50.0, -20.0], 1000) + rng.normal(0, 2, 3000)
    assert robust_noise_sd(x) == pytest.approx(2, rel=0.1)
    assert robust_noise_sd([3.0] * 5) == 0.0
    assert math.isnan(robust_noise_sd([1.0]))


def test_detect_runs_each_method():
    assert METHODS[0] == "mosum"  # the default, chosen by bench/changepoints_accuracy.py
    for method in METHODS:
        (cp,) = detect(STEP, method=method)
        assert (cp.index, cp.method) == (40, method)
    with pytest.raises(ValueError, match="unknown method"):
        detect(STEP, method="otava")
    with pytest.raises(ValueError, match="window"):
        detect(STEP, method="e-divisive", params=EDivisiveParams(window=2))  # window is e-divisive's
    with pytest.raises(ValueError, match="takes PenaltyParams"):
        detect(STEP, method="pelt", params=EDivisiveParams())


@pytest.mark.parametrize("method", METHODS)
def test_detect_several_samples_per_commit(method):
    """One group of samples per commit; empty groups and NaN samples are missing data."""
    rng = np.random.default_rng(13)
    groups = [list(rng.normal(100 if i < 30 else 95, 1, 5)) for i in range(60)]
    groups[10] = []
    groups[31] = [np.nan, np.nan]
    groups[32] = [float(v) for v in groups[32][:2]] + [np.nan]
    (cp,) = detect(groups, method=method)
    assert cp.index == 30
    before = np.concatenate([g for g in groups[:30] if len(g)])
    after = np.array([v for g in groups[30:] for v in g if np.isfinite(v)])
    assert cp.mean_before == pytest.approx(before.mean())
    assert cp.stddev_after == pytest.approx(after.std(ddof=1))
    assert cp.change_pct == pytest.approx(100 * (after.mean() / before.mean() - 1))
    # a missing commit right at the change: the first commit with data is reported
    groups[30] = []
    assert [c.index for c in detect(groups, method=method)] == [32]


def test_median_centre_survives_one_wild_sample_per_commit():
    """A short history, 3 samples per commit, one sample 4x off: the mean of that commit
    hides the step from e-divisive's t-test; its median does not (what history uses).
    mosum clips the wild commit itself, so it finds the step with either centre."""
    rng = np.random.default_rng(3)
    groups = [list(rng.normal(12 if i < 6 else 20, 0.3, 3)) for i in range(11)]
    groups[7][0] = 80.0   # a timer wake-up very late
    assert detect(groups, method="e-divisive") == []
    (cp,) = detect(groups, method="e-divisive", centre="median")
    assert cp.index == 6
    for centre in CENTRES:
        assert [c.index for c in detect(groups, method="mosum", centre=centre)] == [6]
    with pytest.raises(ValueError, match="centre"):
        detect(groups, centre="mode")


def test_detect_groups_of_one_equal_the_flat_series():
    flat = detect(STEP)
    grouped = detect([[v] for v in STEP])
    assert flat == grouped
    assert detect(STEP.reshape(-1, 1)) == flat  # a 2-D array: one row per position
    assert detect(np.column_stack([STEP, STEP]))[0].index == 40


def test_each_points_description_is_welch_ts_on_its_two_segments():
    """The segments are described from prefix sums in one pass: the same means, sds and p
    as welch_t side by side, NaN where it is undefined (a side of one value, two constant
    sides at one level)."""
    from perflab.stats.detectors.points import describe as _describe
    from perflab.stats.significance import welch_t
    rng = np.random.default_rng(3)
    cases = [(rng.normal(100, 1, rng.integers(1, 8)), rng.normal(100 + rng.normal(), 1, rng.integers(1, 8)))
             for _ in range(100)]
    cases += [(np.ones(4), np.ones(5)), (np.ones(4), np.full(5, 2.0)), (np.array([1.0]), np.array([1.0, 2.0]))]
    for a, b in cases:
        (point,) = _describe(np.concatenate([a, b]), [a.size], [a.size], "test")
        want = welch_t(a, b).p_value
        assert point.p_value == pytest.approx(want, rel=1e-9, abs=1e-12, nan_ok=True)
        assert point.mean_before == pytest.approx(a.mean()) and point.mean_after == pytest.approx(b.mean())
        if a.size > 1:
            assert point.stddev_before == pytest.approx(a.std(ddof=1), rel=1e-6, abs=1e-9)
