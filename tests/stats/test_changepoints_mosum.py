"""mosum: robust to spikes, heavy tails and slow trends; finds clear steps where they are."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perflab.stats.changepoints import detect
from perflab.stats.mosum import MIN_SEGMENT, TRANSIENT, Detection, _confirmed, search
from perflab.stats.mosum_noise import hac_variance, long_run_variance, mosum_sd, variogram
from perflab.stats.mosum_tail import tail, threshold


def test_a_single_spike_is_no_change_point():
    """A spike anywhere adds nothing to what the same noise alone gives (usually nothing)."""
    rng = np.random.default_rng(1)
    for n in (30, 100, 1000):
        for where in (n // 2, 3, n - 3):
            x = 100 + rng.normal(0, 1, n)
            alone = [c.index for c in detect(x, method="mosum")]
            x[where] = 1e4
            assert [c.index for c in detect(x, method="mosum")] == alone, (n, where)
    x = 100 + np.random.default_rng(8).normal(0, 1, 200)
    assert detect(x, method="mosum") == []
    x[100] = -1e4  # downwards, in the middle of noise that alone gives nothing
    assert detect(x, method="mosum") == []


def test_a_short_burst_shorter_than_a_segment_is_no_change_point():
    x = 100 + np.random.default_rng(2).normal(0, 1, 300)
    x[150:150 + MIN_SEGMENT - 1] += 40
    assert detect(x, method="mosum") == []


def test_a_burst_that_returns_to_its_level_is_a_transient_not_two_changes():
    """A +30% stretch of TRANSIENT - 1 values (a load burst) is found by the windows, then
    dropped as a whole: the level after it is the level before it."""
    x = 100 + np.random.default_rng(7).normal(0, 1, 300)
    x[150:150 + TRANSIENT - 1] += 30
    assert detect(x, method="mosum") == []


def test_a_step_with_a_short_overshoot_keeps_both_points():
    """Up 30 for a few values, then settles 15 above the old level: not a transient (the
    levels around the excursion differ by more than half its height)."""
    x = 100 + np.random.default_rng(8).normal(0, 1, 300)
    x[150:] += 15
    x[150:150 + TRANSIENT - 4] += 15
    found = [c.index for c in detect(x, method="mosum")]
    assert len(found) == 2 and abs(found[0] - 150) <= 2 and abs(found[1] - (150 + TRANSIENT - 4)) <= 2


def test_a_burst_longer_than_a_transient_is_two_changes():
    x = 100 + np.random.default_rng(7).normal(0, 1, 300)
    x[150:150 + 3 * TRANSIENT] += 30
    assert [c.index for c in detect(x, method="mosum")] == [150, 150 + 3 * TRANSIENT]


def test_heavy_tailed_flat_noise_gives_few_false_points():
    rng = np.random.default_rng(3)
    found = sum(len(detect(100 + rng.standard_t(2, 1000), method="mosum")) for _ in range(20))
    assert found <= 20 * 1000 * 2 / 1000  # at most 2 per 1,000 points (measured 0.6)


def test_a_slow_linear_trend_is_not_cut_into_steps():
    rng = np.random.default_rng(4)
    for _ in range(5):
        x = np.linspace(100, 130, 1000) + rng.normal(0, 1, 1000)  # 30 noise sds of drift
        assert len(detect(x, method="mosum")) <= 1


def test_a_clear_10_percent_step_is_found_where_it_is():
    rng = np.random.default_rng(5)
    x = 100 + rng.normal(0, 2, 400)  # the step is 5 noise sds
    x[250:] += 10
    (cp,) = detect(x, method="mosum")
    assert abs(cp.index - 250) <= 2
    assert cp.kind == "mean" and cp.ci_low < 10 < cp.ci_high and cp.p_value < 1e-6
    assert cp.change_pct == pytest.approx(10, abs=1)


def test_a_step_on_a_trend_is_found_once():
    rng = np.random.default_rng(6)
    x = np.linspace(100, 120, 600) + rng.normal(0, 1, 600)
    x[300:] += 8
    assert [abs(c.index - 300) <= 3 for c in detect(x, method="mosum")] == [True]


def test_the_variogram_gives_the_white_noise_sd_of_the_mosum():
    z = np.random.default_rng(8).normal(0, 1, 20_000)
    for h in (8, 32):
        assert mosum_sd(variogram(z, 2 * h), h) == pytest.approx(math.sqrt(2 / h), rel=0.05)


def ar1(rng: np.random.Generator, n: int, rho: float) -> np.ndarray:
    e = rng.normal(size=n)
    x = np.empty(n)
    x[0] = e[0] / math.sqrt(1 - rho * rho)
    for i in range(1, n):
        x[i] = rho * x[i - 1] + e[i]
    return x


@pytest.mark.parametrize("rho", [0.0, 0.6, 0.9])
def test_the_lag_window_gives_the_long_run_variance_of_ar1_noise(rho):
    """σ²/(1−ρ)² for unit innovations; the variogram's MEMORY lags see a third of it at ρ = 0.9
    (what the confirmation's lag window is for)."""
    x = ar1(np.random.default_rng(3), 20_000, rho)
    assert hac_variance(x) == pytest.approx(1 / (1 - rho) ** 2, rel=0.15)
    if rho == 0.9:
        assert long_run_variance(variogram(x, 64)) < 0.5 / (1 - rho) ** 2


def test_a_point_is_kept_only_where_its_two_segments_differ():
    """The confirmation: of three candidate points on noise with one real step (at 300),
    those whose neighbouring segments have the same level go, weakest first."""
    rng = np.random.default_rng(11)
    z = rng.normal(0, 1, 600)
    z[300:] += 1.0
    found = [Detection(i, "mean", 16, 5.0, 0.0, 1.0, 0.01) for i in (120, 300, 450)]
    assert [f.index for f in _confirmed(z, found, 0.05)] == [300]
    assert _confirmed(z - np.where(np.arange(600) >= 300, 1.0, 0.0), found, 0.05) == []


def test_a_slope_fitted_to_noise_confirms_no_second_step():
    """40 commits of 3 samples, one 10-sd step at 25 and no trend: the confirmation's slope,
    fitted to the noise within a few short segments, once shifted their means apart enough
    to confirm a second, false point (6 series of 300, p down to 1e-44); the slope is used
    only where the series shows it, with its own error counted."""
    extra = 0
    for seed in range(300):
        rng = np.random.default_rng(seed)
        groups = [rng.normal(1000 if i < 25 else 970, 5, 3) for i in range(40)]
        points = detect(groups, method="mosum")
        assert any(p.index == 25 for p in points)
        extra += len(points) - 1
    assert extra <= 1  # the segment test's own α is ~0.4% a series


def test_a_step_on_a_steep_trend_is_confirmed_with_the_slopes_error_counted():
    """Where the slope is used, its error widens the test, but a clear step on a clear
    trend still stands."""
    rng = np.random.default_rng(4)
    z = rng.normal(0, 1, 200) + 0.05 * np.arange(200)
    z[120:] += 4.0
    found = [Detection(120, "mean", 16, 5.0, 4.0, 1.0, 0.01)]
    assert [f.index for f in _confirmed(z, found, 0.05)] == [120]


def test_threshold_inverts_the_tail():
    u = threshold(0.05, 1000, 16)
    assert tail(u, 1000, 16) == pytest.approx(0.05, rel=1e-3)
    assert threshold(0.01, 1000, 16) > u


def test_short_and_constant_series_give_nothing():
    assert search(np.ones(50)) == []
    assert search(np.arange(5.0)) == []


def test_a_step_is_placed_on_its_commit_when_a_later_commit_dips():
    # per-commit medians (ms) of a real lab (tests/test_alerts.py): a 4x step at 10, and a
    # loaded commit at 13 halfway back; the Hampel window centred on 10 straddles the step,
    # its median is that dip, and replacing the step's first value by it put the step at 11
    x = np.array([25.68, 29.07, 27.45, 27.38, 27.38, 29.84, 24.83, 30.36, 24.51, 28.94,
                  110.5, 112.4, 106.4, 66.56, 102.2, 105.0])
    assert [d.index for d in search(x)] == [10]
