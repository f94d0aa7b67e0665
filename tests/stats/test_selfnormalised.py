"""The self-normalised one-step test: its statistic is Shao & Zhang's by definition, its
table is the null law of the whole procedure, and it holds its level without a noise
estimate."""

from __future__ import annotations

import numpy as np
import pytest

from perflab.stats import selfnormalised as sn
from perflab.stats.changepoints import detect


def shao_zhang(y: np.ndarray) -> tuple[float, int]:
    """G and its split straight from the definition (sums written out, O(m²))."""
    m = y.size
    best, where = -1.0, -1
    for k in range(sn.MIN_PART, m - sn.MIN_PART + 1):
        d = (y[:k].sum() - k / m * y.sum()) / np.sqrt(m)
        left = sum((y[:t].sum() - t / k * y[:k].sum()) ** 2 for t in range(1, k + 1))
        right = sum((y[t:].sum() - (m - t) / (m - k) * y[k:].sum()) ** 2 for t in range(k, m))
        g = d * d / ((left + right) / m ** 2)
        if g > best:
            best, where = g, k
    return best, where


@pytest.mark.parametrize("m", [10, 17, 60])
def test_the_statistic_is_shao_and_zhangs(m):
    rng = np.random.default_rng(m)
    rows = rng.normal(0, 1, (4, m))
    rows[:, m // 3:] += rng.uniform(0, 3, (4, 1))
    g, k = sn.statistic(*sn.rows(rows))
    for row, gi, ki in zip(rows, g, k):
        want, at = shao_zhang(row)
        assert gi == pytest.approx(want, rel=1e-9) and ki == at


def test_segments_of_different_lengths_end_to_end_are_each_tested_alone():
    """mosum tests all of a series' segments in one call: each must get what it would
    alone (no sum leaks across a segment's start)."""
    rng = np.random.default_rng(5)
    lengths = np.array([10, 37, 11, 200, 64])
    parts = [rng.normal(rng.uniform(-50, 50), 1, m) + rng.uniform(-1, 1) * np.arange(m) for m in lengths]
    parts[3][120:] += 5.0
    values = np.concatenate(parts)
    assert list(sn.best_split(values, lengths)) == [sn.best_split(p, np.array([p.size]))[0] for p in parts]
    flat = sn.detrended(values, lengths)
    g, k = sn.statistic(flat, lengths)
    for i, p in enumerate(parts):
        one = np.array([p.size])
        alone = sn.detrended(p, one)
        assert np.allclose(flat[lengths[:i].sum():lengths[:i + 1].sum()], alone, atol=1e-9)
        gi, ki = sn.statistic(alone, one)
        assert g[i] == pytest.approx(gi[0], rel=1e-9) and k[i] == ki[0]


def test_a_segment_too_short_to_split_is_refused():
    with pytest.raises(ValueError, match="fewer than 10 values"):
        sn.one_step(np.arange(20.0), np.array([11, 9]))


def test_detrending_keeps_a_step_and_removes_the_line():
    t = np.arange(80.0)
    row = 5.0 + 0.3 * t + np.where(t >= 50, 4.0, 0.0)
    one = np.array([row.size])
    assert sn.best_split(row, one)[0] == 50
    flat = sn.detrended(row, one)
    assert np.ptp(flat[:50]) == pytest.approx(0.0, abs=1e-9)
    assert np.ptp(flat[50:]) == pytest.approx(0.0, abs=1e-9)
    assert flat[50] - flat[49] == pytest.approx(4.0)


def test_the_parts_are_mosums_shortest_segment():
    """The table was drawn with MIN_PART; mosum's segments must be cut the same way."""
    from perflab.stats.mosum import MIN_SEGMENT
    assert sn.MIN_PART == MIN_SEGMENT
    assert len(sn.NULL_QUANTILES) == len(sn.NULL_SIZES)
    assert all(len(row) == len(sn.NULL_P) for row in sn.NULL_QUANTILES)


def test_p_values_follow_the_table():
    for m, row in zip(sn.NULL_SIZES, sn.NULL_QUANTILES):
        for q, p in zip(row, sn.NULL_P):
            assert sn.p_value(q, m) == pytest.approx(p, rel=1e-6)
    gs = np.linspace(0.0, 2000.0, 200)
    ps = [sn.p_value(float(g), 100) for g in gs]
    assert ps[0] == 1.0 and all(a >= b for a, b in zip(ps, ps[1:])) and ps[-1] < 1e-5


def test_the_table_is_the_null_law_of_the_procedure():
    """A fresh small simulation of the procedure agrees with the stored quantiles at 5% and
    1% (a stale table, after a change of `detrended` or `statistic`, would not)."""
    rng = np.random.default_rng(7)
    for m in (16, 64):
        g = sn.one_step(*sn.rows(rng.standard_normal((20000, m))))[0]
        row = sn.NULL_QUANTILES[sn.NULL_SIZES.index(m)]
        for p in (0.05, 0.01):
            assert np.quantile(g, 1 - p) == pytest.approx(row[sn.NULL_P.index(p)], rel=0.08)


@pytest.mark.parametrize("noise", ["gaussian", "t3", "trend"])
def test_the_level_holds_without_a_noise_estimate(noise):
    """5% tests on 4,000 segments of 40 reject 5% ± binomial error (3 se), whatever the
    noise's scale, tails or a linear trend."""
    rng = np.random.default_rng(11)
    rows = rng.standard_normal((4000, 40)) if noise != "t3" else rng.standard_t(3, (4000, 40))
    rows = rows * 25.0 + (0.5 * np.arange(40) if noise == "trend" else 0.0)
    g = sn.one_step(*sn.rows(rows))[0]
    rate = float(np.mean([sn.p_value(float(x), 40) < 0.05 for x in g]))
    assert abs(rate - 0.05) < 3 * np.sqrt(0.05 * 0.95 / 4000)


def test_mosum_finds_a_clear_step_in_a_short_series():
    """A 4-sd step in the middle of 50 values: the windows (h = 8) see too little of it
    (alone, they found it 21 times in 60); with the whole-series test it is found nearly
    always (56), and white noise of that length stays within its 1% budget."""
    rng = np.random.default_rng(3)
    found = false = 0
    for _ in range(60):
        x = rng.normal(0, 1, 50)
        false += bool(detect(100 + x, method="mosum"))
        x[25:] += 4.0
        found += any(abs(c.index - 25) <= 3 for c in detect(100 + x, method="mosum"))
    assert found >= 50 and false <= 3
