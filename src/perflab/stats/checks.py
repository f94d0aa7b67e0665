"""Detectors for samples that break the assumptions of the usual statistics.

Each detector returns a `StatWarning` or None; none of them raises on small or
degenerate input. They take raw values in repetition order (the trend check needs
it) or an already computed number, so `summary` can call them without a cycle.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from perflab.stats.rows import median_rows
from perflab.stats.significance import mann_kendall_rows, spearman_trend_rows
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
    x = np.asarray(values, dtype=float).reshape(1, -1)
    if x.size == 0:
        return x.reshape(-1)
    scores: np.ndarray = modified_z_rows(x, median_rows(x) if median is None else np.array([median]))[0]
    return scores


def modified_z_rows(block: np.ndarray, medians: np.ndarray) -> np.ndarray:
    """`modified_z_scores` of each row of ``block`` (at least one column), given their medians."""
    deviation = block - medians[:, None]
    absolute = np.abs(deviation)
    mad = median_rows(absolute)
    by_mad = mad > 0
    if by_mad.all():   # the common case: the same figures without the masked copies
        every: np.ndarray = 0.6745 * deviation / mad[:, None]
        return every
    scores: np.ndarray = np.zeros_like(deviation)
    scores[by_mad] = 0.6745 * deviation[by_mad] / mad[by_mad, None]
    mean_ad = np.mean(absolute[~by_mad], axis=1)      # the fallback, where half the values are equal
    rest = np.flatnonzero(~by_mad)[mean_ad > 0]
    scores[rest] = deviation[rest] / (1.253314 * mean_ad[mean_ad > 0, None])
    return scores


def check_outliers(values: ArrayLike, threshold: float = OUTLIER_Z, median: float | None = None) -> StatWarning | None:
    """Warn when some |modified z-score| exceeds `threshold` (needs 3 or more values)."""
    x = np.asarray(values, dtype=float).reshape(1, -1)
    if x.size < 3:
        return None
    return outlier_rows(x, median_rows(x) if median is None else np.array([median]), threshold)[0]


def outlier_rows(block: np.ndarray, medians: np.ndarray, threshold: float = OUTLIER_Z) -> list[StatWarning | None]:
    """`check_outliers` of each row of ``block``, given their medians."""
    rows, n = block.shape
    if n < 3:
        return [None] * rows
    far = np.abs(modified_z_rows(block, medians)) > threshold
    out: list[StatWarning | None] = [None] * rows
    for i in np.flatnonzero(far.any(axis=1)).tolist():
        outlying = np.flatnonzero(far[i])
        shown = ", ".join(f"#{j}={block[i, j]:.6g}" for j in outlying[:5]) + (" ..." if outlying.size > 5 else "")
        out[i] = StatWarning(OUTLIERS, f"{outlying.size} of {n} values have a modified z-score above "
                                       f"{threshold:g}: {shown}")
    return out


def bimodality_ratio(values: ArrayLike) -> float:
    """The share of the variance explained by the best split of the sorted values in two groups.

    R = 1 − (SS_left + SS_right)/SS_total, maximised over split points that leave at least
    max(2, ⌈n/10⌉) values in each group (one-dimensional 2-means, Otsu's criterion). For a
    normal sample R tends to 2/π ≈ 0.64; two tight clusters push it towards 1. NaN when
    n < 4 or all values are equal.
    """
    return float(bimodality_rows(np.sort(np.asarray(values, dtype=float).reshape(1, -1), axis=1))[0])


def bimodality_rows(ordered: np.ndarray) -> np.ndarray:
    """`bimodality_ratio` of each row of ``ordered`` (rows sorted)."""
    rows, n = ordered.shape
    smallest = max(2, math.ceil(n / 10))
    if n < 2 * smallest:
        return np.full(rows, math.nan)
    # Shift before the running sums so that a large common offset does not cancel.
    x = ordered - ordered.mean(axis=1)[:, None]
    total = np.sum(x ** 2, axis=1)
    k = np.arange(smallest, n - smallest + 1)
    s, s2 = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
    below, below2 = s[:, smallest - 1:n - smallest], s2[:, smallest - 1:n - smallest]   # at k - 1
    left = below2 - below ** 2 / k
    right = (s2[:, -1:] - below2) - (s[:, -1:] - below) ** 2 / (n - k)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.max(1.0 - (left + right) / total[:, None], axis=1)
    return np.where(total == 0.0, math.nan, ratio)


def check_bimodal(values: ArrayLike) -> StatWarning | None:
    """Warn when `bimodality_ratio` exceeds 2/π + 1/√n (needs `BIMODAL_MIN_N` values).

    The threshold was set by simulation: normal and log-normal (σ ≤ 0.25) samples of
    n = 10..50 exceed it in about 0.1-0.4% of cases (log-normal σ = 0.5: up to 1.2%), while
    two equal clusters 8 sd apart are caught in ~50% of samples at n = 10, ~80% at n = 12
    and over 95% from n = 15. A sample that jumps between two levels breaks every
    test that summarises it by one centre.
    """
    return bimodal_rows(np.sort(np.asarray(values, dtype=float).reshape(1, -1), axis=1))[0]


def bimodal_rows(ordered: np.ndarray) -> list[StatWarning | None]:
    """`check_bimodal` of each row of ``ordered`` (rows sorted)."""
    rows, n = ordered.shape
    if n < BIMODAL_MIN_N:
        return [None] * rows
    limit = 2 / math.pi + 1 / math.sqrt(n)
    out: list[StatWarning | None] = [None] * rows
    for i, ratio in enumerate(bimodality_rows(ordered).tolist()):
        if ratio > limit:
            out[i] = StatWarning(BIMODAL, f"the values form two groups (split explains {100 * ratio:.0f}% of the "
                                          f"variance, limit {100 * limit:.0f}%): report them separately")
    return out


# Mann-Kendall's O(n^2) pairs cost milliseconds per row above this many values; there
# Spearman's rho against the order (Daniels' test) asks the same question in O(n log n)
# with the same asymptotic power.
PAIRWISE_TREND_LIMIT = 100


def check_trend(values: ArrayLike, alpha: float = TREND_ALPHA) -> StatWarning | None:
    """Warn when a monotone drift along the order given is found (p < alpha).

    Assumes `values` are in repetition order. Fewer than 6 values can never reach
    p < 0.01, so short samples pass silently.
    """
    x = np.asarray(values, dtype=float).reshape(1, -1)
    return trend_rows(x, np.argsort(x, axis=1), alpha)[0]


def trend_rows(block: np.ndarray, order: np.ndarray, alpha: float = TREND_ALPHA) -> list[StatWarning | None]:
    """`check_trend` of each row of ``block`` (values in repetition order; ``order``: the
    rows' np.argsort)."""
    if block.shape[1] <= PAIRWISE_TREND_LIMIT:
        found, test = mann_kendall_rows(block, np.take_along_axis(block, order, axis=1)), "Mann-Kendall"
    else:
        found, test = spearman_trend_rows(block, order), "Spearman/Daniels"
    out: list[StatWarning | None] = []
    for z, p in found:
        way = "rising" if z > 0 else "falling"
        out.append(None if not p < alpha else StatWarning(
            TREND, f"values keep {way} over the repetitions ({test} p={p:.2g}): "
                   "warm-up, thermal throttling or drift; interleave runs"))
    return out


def split_gap(values: ArrayLike) -> float:
    """How far a run's level could move with how its values split in two groups, on the log
    scale: the gap between the means of its best split (the split of `bimodality_ratio`).
    However the samples fall between the groups, the run's mean stays within it (a drift has
    no such bound: the run could have gone on drifting). NaN below 4 values."""
    x = np.asarray(values, dtype=float).reshape(-1)
    ordered = np.sort(np.log(x[np.isfinite(x) & (x > 0)]))
    n = ordered.size
    smallest = max(2, math.ceil(n / 10))
    if n < 4 or n < 2 * smallest:
        return math.nan
    k = np.arange(smallest, n - smallest + 1)
    centred = ordered - ordered.mean()   # before the running sums, so a large offset does not cancel
    sums, squares = np.cumsum(centred), np.cumsum(centred * centred)
    below, below2 = sums[k - 1], squares[k - 1]
    within = (below2 - below ** 2 / k) + ((squares[-1] - below2) - (sums[-1] - below) ** 2 / (n - k))
    best = int(np.argmin(within))
    return float((sums[-1] - below[best]) / (n - k[best]) - below[best] / k[best])
