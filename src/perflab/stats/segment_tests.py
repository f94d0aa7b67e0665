"""Segment statistics from prefix sums, and the Welch test between neighbouring segments.

Shared by the change-point detectors of `stats.changepoints`: `prefix_sums` once per
series, then (n, mean, variance) of any segment in O(1) (`segment_stats`), Welch's p
between two segments (`welch_p`, `split_p`), and Otava's merge of the weakest cut
(`merge_weakest`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def prefix_sums(x: NDArray[np.float64]) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
    """(shift, Σ(x−shift), Σ(x−shift)²) prefix sums; centring keeps variances accurate."""
    shift = float(np.median(x))
    v = x - shift
    return (shift, np.concatenate([[0.0], np.cumsum(v)]),
            np.concatenate([[0.0], np.cumsum(v * v)]))


def segment_stats(s1: NDArray[np.float64], s2: NDArray[np.float64], lo: ArrayLike,
                   hi: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(n, mean, variance ddof=1) of segments [lo, hi) from prefix sums of x and x²."""
    lo, hi = np.asarray(lo), np.asarray(hi)
    n = (hi - lo).astype(float)
    total = s1[hi] - s1[lo]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / n
        var = np.maximum(s2[hi] - s2[lo] - total * mean, 0.0) / (n - 1)
    return n, mean, var


def welch_p(na: NDArray[np.float64], ma: NDArray[np.float64], va: NDArray[np.float64],
             nb: NDArray[np.float64], mb: NDArray[np.float64], vb: NDArray[np.float64],
             undefined: float = 1.0) -> NDArray[np.float64]:
    """Vectorised two-sided Welch p-values with welch_t's bounded df; `undefined` where
    undefined (1.0: a merge treats it as no difference; NaN: welch_t's own answer).

    Undefined: fewer than 2 values on a side, or both sides constant at the same mean.
    Both sides constant at different means: p = 0 (the difference is exact).
    """
    from scipy import special
    with np.errstate(invalid="ignore", divide="ignore"):
        sa, sb = va / na, vb / nb
        se2 = sa + sb
        t = (mb - ma) / np.sqrt(se2)
        df = se2**2 / (sa**2 / (na - 1) + sb**2 / (nb - 1))
        cap = (1 / na + 1 / nb) ** 2 / (1 / (na * na * (na - 1)) + 1 / (nb * nb * (nb - 1)))
        df = np.minimum(df, cap)
        p = 2 * special.stdtr(df, -np.abs(t))
    p = np.where(se2 == 0.0, np.where(mb != ma, 0.0, undefined), p)
    p = np.where((na < 2) | (nb < 2) | ~np.isfinite(p), undefined, p)
    return p


def split_p(s1: NDArray[np.float64], s2: NDArray[np.float64], lo: ArrayLike, tau: ArrayLike,
             hi: ArrayLike) -> NDArray[np.float64]:
    """Welch p-values of x[lo:tau] vs x[tau:hi], vectorised over the three index arrays."""
    return welch_p(*segment_stats(s1, s2, lo, tau), *segment_stats(s1, s2, tau, hi))


def merge_weakest(x: NDArray[np.float64], cuts: ArrayLike, max_pvalue: float,
           min_magnitude: float) -> list[int]:
    """Drop the weakest cut until every cut passes against its neighbouring segments.

    Weakest: the largest p-value above max_pvalue; when every p passes, the smallest
    relative change below min_magnitude (Otava's merge order).
    """
    shift, s1, s2 = prefix_sums(x)
    cuts = np.unique(np.asarray(cuts, dtype=np.intp))
    while cuts.size:
        bounds = np.concatenate([[0], cuts, [x.size]])
        na, ma, va = segment_stats(s1, s2, bounds[:-2], bounds[1:-1])
        nb, mb, vb = segment_stats(s1, s2, bounds[1:-1], bounds[2:])
        p = welch_p(na, ma, va, nb, mb, vb)
        with np.errstate(invalid="ignore", divide="ignore"):
            magnitude = np.abs(mb - ma) / np.abs(ma + shift)  # mean before 0: inf, passes
        magnitude = np.where(np.isnan(magnitude), 0.0, magnitude)
        if (p > max_pvalue).any():
            weakest = int(np.argmax(p))
        elif (magnitude < min_magnitude).any():
            weakest = int(np.argmin(magnitude))
        else:
            break
        cuts = np.delete(cuts, weakest)
    return [int(c) for c in cuts]
