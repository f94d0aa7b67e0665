"""mosum's search for changes in the noise's spread (`detect(..., spread=True)`): a change
of the spread alone is found with kind "spread" and no % step; a spike is never one; flat
noise rarely gives one."""

from __future__ import annotations

import math

import numpy as np

from perflab.model.methods import MosumParams
from perflab.stats.changepoints import detect
from perflab.stats.mosum import log_spread

SPREAD = MosumParams(spread=True)


def spread_points(x: np.ndarray) -> list:
    return [c for c in detect(x, method="mosum", params=SPREAD) if c.kind == "spread"]


def test_a_fourfold_change_of_spread_is_found_as_a_spread_change():
    """sd x4 at 300 of 600 Gaussian values, no step: found within ±10 in most seeds, as
    kind "spread" with its ratio after/before and no % change of the level."""
    found = 0
    for seed in range(10):
        x = np.random.default_rng(seed).normal(0, 1, 600)
        x[300:] *= 4
        points = detect(100 + x, method="mosum", params=SPREAD)
        near = [c for c in points if abs(c.index - 300) <= 10]
        if near:
            (c,) = near
            assert c.kind == "spread" and math.isnan(c.change_pct)
            assert c.ci_low < c.magnitude < c.ci_high and 2 < c.magnitude < 8
            found += 1
    assert found >= 8


def test_the_default_search_reports_no_spread_change():
    x = np.random.default_rng(1).normal(0, 1, 600)
    x[300:] *= 4
    assert all(c.kind == "mean" for c in detect(100 + x, method="mosum"))


def test_a_single_spike_is_no_spread_change():
    """A spike anywhere -- at the edges too -- adds no change point of either kind to
    what the same noise alone gives (usually nothing)."""
    rng = np.random.default_rng(5)
    for n in (100, 400, 1000):
        for where in (0, 2, n // 2, n - 3, n - 1):
            x = 100 + rng.normal(0, 1, n)
            alone = [(c.index, c.kind) for c in detect(x, method="mosum", params=SPREAD)]
            x[where] = 1e4
            assert [(c.index, c.kind) for c in detect(x, method="mosum", params=SPREAD)] == alone, (n, where)


def test_flat_gaussian_noise_rarely_gives_a_spread_change():
    """1,000 change-free points, 20 seeds: the spread search's share of the false-alarm
    budget (0.1 per 1,000 points) makes one expected in about 2 series; allow 4."""
    series = [100 + np.random.default_rng(100 + s).normal(0, 1, 1000) for s in range(20)]
    assert sum(1 for x in series if spread_points(x)) <= 4


def test_a_level_step_is_not_a_spread_change():
    """The differences across the known level changes are not counted as noise."""
    x = 100 + np.random.default_rng(3).normal(0, 1, 600)
    x[300:] += 10
    assert [(c.index, c.kind) for c in detect(x, method="mosum", params=SPREAD)] == [(300, "mean")]


def test_log_spread_moves_by_log_of_the_ratio():
    x = np.random.default_rng(4).normal(0, 1, 20_000)
    x[10_000:] *= 3
    y = log_spread(x, [])
    # the floor: quantised values repeat, and a zero difference is no log 0
    assert np.all(np.isfinite(log_spread(np.round(x), [])))
    assert abs(np.median(y[10_000:]) - np.median(y[:10_000]) - math.log(3)) < 0.1
