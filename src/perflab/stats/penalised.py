"""Penalised least squares for changes in the mean: PELT (exact) and seeded binary segmentation.

The cost is the residual sum of squares plus β per change, β an information criterion
times the robust noise variance (`robust_noise_sd`). `pelt_cuts` is exact (Killick et al.
2012); `binseg_cuts` minimises the same objective over seeded candidates (Kovács et al.
2023). `stats.detectors.pelt` / `binseg` are the callers' entries.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from perflab.stats.segment_tests import merge_weakest, prefix_sums

_PENALTY_FACTORS = {
    # β = factor(n) · σ² per change point, σ² the robust noise variance.
    "bic": lambda n: 2.0 * math.log(n),  # 2 parameters per change: its location and the new mean
    "mbic": lambda n: 3.0 * math.log(n),  # Zhang & Siegmund's modified BIC, as R changepoint
    "aic": lambda n: 4.0,  # 2 · 2 parameters; liberal, many false alarms on long series
}


def robust_noise_sd(x: ArrayLike) -> float:
    """σ of the noise, robust to steps in the mean: MAD of first differences / (0.6745·√2).

    A step shifts only one difference, so a few steps barely move the median. Falls back
    to the sd of the differences / √2 when the MAD is 0 (quantised values); 0 for a
    constant series, NaN for fewer than 2 values.
    """
    v = np.asarray(x, dtype=float).reshape(-1)
    if v.size < 2:
        return math.nan
    d = np.diff(v)
    mad = float(np.median(np.abs(d - np.median(d))))
    if mad > 0.0:
        return mad / (0.6745 * math.sqrt(2.0))
    return float(d.std()) / math.sqrt(2.0)


def _penalty(x: NDArray[np.float64], penalty: str | float) -> float:
    """β per change point: the information criterion's factor times the noise variance."""
    if isinstance(penalty, str):
        try:
            factor = _PENALTY_FACTORS[penalty.lower()](x.size)
        except KeyError:
            raise ValueError(f"unknown penalty {penalty!r}: one of {sorted(_PENALTY_FACTORS)} "
                             "or a number") from None
    else:
        factor = float(penalty)
    sigma = robust_noise_sd(x)
    return factor * sigma * sigma


def _optimal_partition(s1: NDArray[np.float64], s2: NDArray[np.float64], ends: NDArray[np.intp], beta: float,
                       min_size: int) -> list[int]:
    """PELT over the segment ends allowed in `ends` (sorted, > 0, the last = n).

    Minimises Σ RSS(segment) + β·(#changes), segments >= min_size, exactly among the
    partitions whose cuts all lie in `ends`: every position for PELT proper, the seeded
    candidates for binseg.
    """
    p = np.concatenate([[0], ends])
    f = np.full(p.size, math.inf)
    f[0] = -beta
    last = np.zeros(p.size, dtype=np.intp)
    r = np.empty(0, dtype=np.intp)  # admissible, unpruned starts (indices into p)
    admitted = 0
    for j in range(1, p.size):
        t = p[j]
        while admitted < j and p[admitted] <= t - min_size:
            r = np.append(r, admitted)  # a start becomes admissible once min_size fits
            admitted += 1
        if not r.size:
            continue
        start = p[r]
        total = s1[t] - s1[start]
        vals = f[r] + (s2[t] - s2[start]) - total * total / (t - start)
        best = int(np.argmin(vals))
        f[j] = vals[best] + beta
        last[j] = r[best]
        # PELT pruning (K = 0 for this cost): s can never be optimal again if it loses now
        r = r[vals <= f[j]]
    cuts = []
    j = p.size - 1
    while j > 0:
        j = int(last[j])
        if j > 0:
            cuts.append(int(p[j]))
    return cuts[::-1]


def pelt_cuts(x: NDArray[np.float64], beta: float, min_size: int) -> list[int]:
    """Optimal partition minimising Σ RSS(segment) + β·(#changes), segments >= min_size."""
    _, s1, s2 = prefix_sums(x)
    return _optimal_partition(s1, s2, np.arange(min_size, x.size + 1), beta, min_size)


def _gain(s1: NDArray[np.float64], lo: int | NDArray[np.intp], tau: int | NDArray[np.intp],
          hi: int | NDArray[np.intp]) -> NDArray[np.float64]:
    """Fall of the RSS when x[lo:hi] is split at tau (vectorised over all three)."""
    left, total = s1[tau] - s1[lo], s1[hi] - s1[lo]
    right = total - left
    return np.asarray(left * left / (tau - lo) + right * right / (hi - tau) - total * total / (hi - lo), dtype=float)


def _seeded_candidates(s1: NDArray[np.float64], n: int, min_size: int, threshold: float) -> NDArray[np.intp]:
    """The best split of each seeded interval where it lowers the RSS by > threshold.

    Intervals (Kovács et al. 2023, seeded binary segmentation): lengths n, n/2, n/4, ...
    down to ~4·min_size (at least 8), each scale's intervals overlapping by half; one
    vectorised pass per scale, so O(n log n) in all. A change is the only one in some
    interval of about its neighbours' spacing, where a single split sees it.
    """
    out = []
    length = n
    shortest = max(4 * min_size, 8)
    while True:
        step = max(length // 2, 1)
        starts = np.arange(0, n - length + 1, step)
        if starts[-1] != n - length:
            starts = np.append(starts, n - length)
        tau = np.arange(min_size, length - min_size + 1)
        g = _gain(s1, starts[:, None], starts[:, None] + tau[None, :], (starts + length)[:, None])
        best = np.argmax(g, axis=1)
        keep = g[np.arange(starts.size), best] > threshold
        out.append(starts[keep] + tau[best[keep]])
        if length <= shortest:
            break
        length = max(length // 2, shortest)
    return np.unique(np.concatenate(out))


def binseg_cuts(x: NDArray[np.float64], beta: float, min_size: int) -> list[int]:
    """Seeded binary segmentation, the exact optimum over its candidates, then local repair.

    Candidates: the best split of each seeded interval that lowers the RSS by > β/4
    (generous: the selection decides). Selection: `_optimal_partition` restricted to the
    candidates. Repair, until nothing moves: re-place each cut at the best split between
    its neighbours, and remove the cut whose removal costs least when that is < β. Every
    step lowers PELT's objective, so the result is a local optimum of it.
    """
    _, s1, s2 = prefix_sums(x)
    n = x.size
    candidates = _seeded_candidates(s1, n, min_size, beta / 4)
    cuts = _optimal_partition(s1, s2, np.append(candidates, n), beta, min_size)
    for _ in range(2 * len(cuts) + 10):  # the bound stops equal-cost moves cycling
        moved = False
        for i in range(len(cuts)):
            lo = cuts[i - 1] if i else 0
            hi = cuts[i + 1] if i + 1 < len(cuts) else n
            tau = np.arange(lo + min_size, hi - min_size + 1)
            best = int(tau[np.argmax(_gain(s1, lo, tau, hi))])
            moved |= best != cuts[i]
            cuts[i] = best
        if cuts:
            bounds = np.array([0, *cuts, n])
            g = _gain(s1, bounds[:-2], bounds[1:-1], bounds[2:])
            weakest = int(np.argmin(g))
            if g[weakest] < beta:
                del cuts[weakest]
                moved = True
        if not moved:
            break
    return cuts


def penalised_cuts(x: NDArray[np.float64], search: Callable[[NDArray[np.float64], float, int], list[int]],
                    penalty: str | float, min_size: int, min_magnitude: float) -> list[int]:
    if min_size < 1:
        raise ValueError(f"min_size must be >= 1, got {min_size}")
    if x.size < 2 * min_size or x.size < 2 or np.ptp(x) == 0.0:
        return []
    beta = _penalty(x, penalty)
    if not beta > 0.0:
        return []
    cuts = search(x, beta, min_size)
    return merge_weakest(x, cuts, 1.0, min_magnitude) if min_magnitude > 0.0 else cuts
