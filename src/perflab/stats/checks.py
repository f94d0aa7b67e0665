"""Detectors for samples that break the assumptions of the usual statistics.

Each detector returns a `StatWarning` or None; none of them raises on small or
degenerate input. They take raw values in repetition order (the trend check needs
it) or an already computed number, so `summary` can call them without a cycle.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from perflab.stats.significance import mann_kendall, spearman_trend
from perflab.stats.warnings import (
    BIMODAL,
    HIGH_COV,
    NO_SAMPLES,
    OUTLIERS,
    SINGLE_SAMPLE,
    TOO_FEW_SAMPLES,
    TREND,
    ZERO_SPREAD,
    StatWarning,
)

MIN_SAMPLES = 5          # below this every statistic of spread is a guess
COV_LIMIT_PCT = 10.0     # pyperf and mmtests readers treat more as unstable
OUTLIER_Z = 3.5          # Iglewicz & Hoaglin's cut-off for the modified z-score
TREND_ALPHA = 0.01       # Mann-Kendall two-sided level for a drift warning
BIMODAL_MIN_N = 10       # fewer values cannot tell two groups from noise


def check_sample_size(n: int) -> StatWarning | None:
    """Warn on 0, 1 or fewer than `MIN_SAMPLES` values (no assumption: just a count)."""
    if n == 0:
        return StatWarning(NO_SAMPLES, "no samples")
    if n == 1:
        return StatWarning(SINGLE_SAMPLE, "a single sample: no spread, no test")
    if n < MIN_SAMPLES:
        return StatWarning(TOO_FEW_SAMPLES,
                           f"only {n} samples; at least {MIN_SAMPLES} advised, 10 or more to see small changes")
    return None


def check_spread(n: int, stddev: float) -> StatWarning | None:
    """Warn when two or more values are all identical (sd exactly 0)."""
    if n >= 2 and stddev == 0.0:
        return StatWarning(ZERO_SPREAD, f"all {n} values are identical: check the timer resolution or a cached result")
    return None


def check_cov(cov_pct: float, limit_pct: float = COV_LIMIT_PCT) -> StatWarning | None:
    """Warn when the coefficient of variation (in %) exceeds `limit_pct`; NaN passes silently."""
    if cov_pct > limit_pct:
        return StatWarning(HIGH_COV,
                           f"CoV {cov_pct:.1f}% exceeds {limit_pct:g}%: the machine or the benchmark is noisy")
    return None


def modified_z_scores(values: ArrayLike, median: float | None = None) -> np.ndarray:
    """Iglewicz-Hoaglin modified z-scores 0.6745·(x − median)/MAD.

    Robust to the outliers it looks for. When more than half the values are equal
    (MAD = 0) it falls back to the mean absolute deviation, (x − median)/(1.2533·meanAD);
    when that is 0 too, every value equals the median and all scores are 0. ``median``:
    the values' median, when the caller has it.
    """
    x = np.asarray(values, dtype=float).reshape(-1)
    if x.size == 0:
        return x
    deviation = x - (np.median(x) if median is None else median)
    mad = np.median(np.abs(deviation))
    if mad > 0:
        return np.asarray(0.6745 * deviation / mad, dtype=float)
    mean_ad = np.mean(np.abs(deviation))
    if mean_ad > 0:
        return np.asarray(deviation / (1.253314 * mean_ad), dtype=float)
    return np.zeros_like(x)


def check_outliers(values: ArrayLike, threshold: float = OUTLIER_Z, median: float | None = None) -> StatWarning | None:
    """Warn when some |modified z-score| exceeds `threshold` (needs 3 or more values)."""
    x = np.asarray(values, dtype=float).reshape(-1)
    if x.size < 3:
        return None
    outlying = np.flatnonzero(np.abs(modified_z_scores(x, median)) > threshold)
    if outlying.size == 0:
        return None
    shown = ", ".join(f"#{i}={x[i]:.6g}" for i in outlying[:5]) + (" ..." if outlying.size > 5 else "")
    return StatWarning(OUTLIERS,
                       f"{outlying.size} of {x.size} values have a modified z-score above {threshold:g}: {shown}")


def bimodality_ratio(values: ArrayLike) -> float:
    """The share of the variance explained by the best split of the sorted values in two groups.

    R = 1 − (SS_left + SS_right)/SS_total, maximised over split points that leave at least
    max(2, ⌈n/10⌉) values in each group (one-dimensional 2-means, Otsu's criterion). For a
    normal sample R tends to 2/π ≈ 0.64; two tight clusters push it towards 1. NaN when
    n < 4 or all values are equal.
    """
    x = np.sort(np.asarray(values, dtype=float).reshape(-1))
    n = x.size
    smallest = max(2, math.ceil(n / 10))
    total = np.sum((x - x.mean()) ** 2) if n else 0.0
    if n < 2 * smallest or total == 0.0:
        return math.nan
    # Shift before the running sums so that a large common offset does not cancel.
    x = x - x.mean()
    k = np.arange(smallest, n - smallest + 1)
    s, s2 = np.cumsum(x), np.cumsum(x * x)
    left = s2[k - 1] - s[k - 1] ** 2 / k
    right = (s2[-1] - s2[k - 1]) - (s[-1] - s[k - 1]) ** 2 / (n - k)
    return float(np.max(1.0 - (left + right) / total))


def check_bimodal(values: ArrayLike) -> StatWarning | None:
    """Warn when `bimodality_ratio` exceeds 2/π + 1/√n (needs `BIMODAL_MIN_N` values).

    The threshold was set by simulation: normal and log-normal (σ ≤ 0.25) samples of
    n = 10..50 exceed it in about 0.1-0.4% of cases (log-normal σ = 0.5: up to 1.2%), while
    two equal clusters 8 sd apart are caught in ~50% of samples at n = 10, ~80% at n = 12
    and over 95% from n = 15. A sample that jumps between two levels breaks every
    test that summarises it by one centre.
    """
    x = np.asarray(values, dtype=float).reshape(-1)
    if x.size < BIMODAL_MIN_N:
        return None
    ratio = bimodality_ratio(x)
    limit = 2 / math.pi + 1 / math.sqrt(x.size)
    if not ratio > limit:
        return None
    return StatWarning(BIMODAL, f"the values form two groups (split explains {100 * ratio:.0f}% of the variance, "
                                f"limit {100 * limit:.0f}%): report them separately")


# Mann-Kendall's O(n^2) pairs cost milliseconds per row above this many values; there
# Spearman's rho against the order (Daniels' test) asks the same question in O(n log n)
# with the same asymptotic power.
PAIRWISE_TREND_LIMIT = 100


def check_trend(values: ArrayLike, alpha: float = TREND_ALPHA) -> StatWarning | None:
    """Warn when a monotone drift along the order given is found (p < alpha).

    Assumes `values` are in repetition order. Fewer than 6 values can never reach
    p < 0.01, so short samples pass silently.
    """
    x = np.asarray(values, dtype=float).reshape(-1)
    if x.size <= PAIRWISE_TREND_LIMIT:
        (z, p), test = mann_kendall(x), "Mann-Kendall"
    else:
        (z, p), test = spearman_trend(x), "Spearman/Daniels"
    if not p < alpha:
        return None
    way = "rising" if z > 0 else "falling"
    return StatWarning(TREND, f"values keep {way} over the repetitions ({test} p={p:.2g}): "
                              "warm-up, thermal throttling or drift; interleave runs")
