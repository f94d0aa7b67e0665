"""Change points in a history of values: where the mean of a series steps to a new level.

`detect` is the one entry point (CLI, history): a flat series or one group of samples per
commit, and a method of METHODS: mosum (the default: robust, calibrated to a false-alarm
rate per point, also changes in spread; `stats.mosum`), e-divisive (Otava's), pelt
(Killick et al. 2012) and binseg (seeded binary segmentation), the last three for changes
in the mean of piecewise-constant series with independent noise. NaN / ±inf gaps are
dropped and indices are in the caller's numbering; a `ChangePoint.index` is the first
index of the new regime. Short (fewer than two minimal segments) and constant series give [].
Methods: docs/methods.md (change points).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeGuard

import numpy as np
from numpy.typing import ArrayLike, NDArray

from perflab.model.records import Direction
from perflab.stats.mosum import FALSE_RATE_PER_1000 as FALSE_RATE_PER_1000  # re-exported: detect's default
from perflab.stats.mosum import MIN_SEGMENT, search

#: The shortest segment e_divisive will split off (a t-test needs 2 per side; 3 keeps
#: single outliers from being paired into a "regime").
E_DIVISIVE_MIN_SEGMENT = 3

#: The fewest values (positions with data) in which any method can place a change.
MIN_POINTS = 2 * E_DIVISIVE_MIN_SEGMENT

#: Method names `detect` accepts (the CLI's --method choices), the default first.
METHODS = ("mosum", "e-divisive", "pelt", "binseg")

#: One value per position from its samples, for `detect` on groups.
CENTRES = ("mean", "median")

_PENALTY_FACTORS = {
    # β = factor(n) · σ² per change point, σ² the robust noise variance.
    "bic": lambda n: 2.0 * math.log(n),  # 2 parameters per change: its location and the new mean
    "mbic": lambda n: 3.0 * math.log(n),  # Zhang & Siegmund's modified BIC, as R changepoint
    "aic": lambda n: 4.0,  # 2 · 2 parameters; liberal, many false alarms on long series
}

#: Pairwise-distance cells computed at once when batching E-divisive windows (~16 MB).
_BATCH_CELLS = 2_000_000


@dataclass(frozen=True)
class ChangePoint:
    """A step in the mean of a series, with the two neighbouring segments that define it.

    ``change_pct`` is raw, 100·(mean_after − mean_before)/mean_before (NaN when
    mean_before is 0); use `oriented` to make positive = better. ``p_value`` is Welch's
    t-test (bounded df) between the neighbouring segments, i.e. from the previous
    reported change point (or the start) to the next (or the end); it is not corrected
    for the search that found the point, so it is optimistic as an absolute probability.
    With several samples per commit (`detect` given groups) the means, sds and p-value
    are over the samples of the segments' commits.
    """

    index: int
    mean_before: float
    stddev_before: float
    mean_after: float
    stddev_after: float
    change_pct: float
    p_value: float
    method: str
    #: mosum only (NaN / "mean" for the others): "mean" for a step in the level, "spread"
    #: for a change in the noise's width alone; the local, trend-corrected step in the
    #: (outlier-clipped) mean and its 95% CI from the noise's own variogram -- for a
    #: "spread" point the ratio of the noise's spread after/before and its CI, and
    #: change_pct NaN (the level did not step). For mosum p_value is the search-corrected
    #: tail probability, not the neighbours' Welch test.
    kind: str = "mean"
    magnitude: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan


def preload() -> None:
    """Import now the scipy modules the detectors and their tests import lazily (lazily so
    that a CLI command without detection starts fast): a long-lived server calls this once
    at start, so its first history page does not pay half a second of imports."""
    # mosum's filters; t and normal quantiles; a change report's comparison
    import scipy.ndimage
    import scipy.special
    import scipy.stats  # noqa: F401


def oriented(change_pct: float, direction: Direction) -> float:
    """`change_pct` with positive = better: negated when lower values are better."""
    return -change_pct if direction is Direction.LOWER else change_pct


# --------------------------------------------------------------------------- helpers

def _finite(values: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """The finite values in order and their indices in the original numbering."""
    x = np.asarray(values, dtype=float).reshape(-1)
    keep = np.flatnonzero(np.isfinite(x))
    return x[keep], keep


def _prefix_sums(x: NDArray[np.float64]) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
    """(shift, Σ(x−shift), Σ(x−shift)²) prefix sums; centring keeps variances accurate."""
    shift = float(np.median(x))
    v = x - shift
    return (shift, np.concatenate([[0.0], np.cumsum(v)]),
            np.concatenate([[0.0], np.cumsum(v * v)]))


def _segment_stats(s1: NDArray[np.float64], s2: NDArray[np.float64], lo: ArrayLike,
                   hi: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(n, mean, variance ddof=1) of segments [lo, hi) from prefix sums of x and x²."""
    lo, hi = np.asarray(lo), np.asarray(hi)
    n = (hi - lo).astype(float)
    total = s1[hi] - s1[lo]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / n
        var = np.maximum(s2[hi] - s2[lo] - total * mean, 0.0) / (n - 1)
    return n, mean, var


def _welch_p(na: NDArray[np.float64], ma: NDArray[np.float64], va: NDArray[np.float64],
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


def _split_p(s1: NDArray[np.float64], s2: NDArray[np.float64], lo: ArrayLike, tau: ArrayLike,
             hi: ArrayLike) -> NDArray[np.float64]:
    """Welch p-values of x[lo:tau] vs x[tau:hi], vectorised over the three index arrays."""
    return _welch_p(*_segment_stats(s1, s2, lo, tau), *_segment_stats(s1, s2, tau, hi))


def _describe(x: NDArray[np.float64], cuts: Sequence[int], indices: Sequence[int] | NDArray[np.intp],
              method: str) -> list[ChangePoint]:
    """ChangePoints at positions `cuts` of the samples x, reported at `indices`: each
    segment's mean and sd, and Welch's p between the two (`welch_t`'s, NaN where it is
    undefined), all from prefix sums (`welch_t` and each side's mean and sd, point by point,
    cost ~1 ms of mosum's 11 on 10,000 points)."""
    if not len(cuts):
        return []
    shift, s1, s2 = _prefix_sums(x)
    bounds = np.array([0, *cuts, x.size])
    na, ma, va = _segment_stats(s1, s2, bounds[:-2], bounds[1:-1])
    nb, mb, vb = _segment_stats(s1, s2, bounds[1:-1], bounds[2:])
    p = _welch_p(na, ma, va, nb, mb, vb, undefined=math.nan)
    out = []
    for i, index in enumerate(indices):
        before, after = float(ma[i]) + shift, float(mb[i]) + shift
        out.append(ChangePoint(
            index=int(index),
            mean_before=before,
            stddev_before=math.sqrt(va[i]) if na[i] > 1 else math.nan,
            mean_after=after,
            stddev_after=math.sqrt(vb[i]) if nb[i] > 1 else math.nan,
            change_pct=100.0 * (after - before) / before if before != 0.0 else math.nan,
            p_value=float(p[i]),
            method=method,
        ))
    return out


def _merge(x: NDArray[np.float64], cuts: ArrayLike, max_pvalue: float,
           min_magnitude: float) -> list[int]:
    """Drop the weakest cut until every cut passes against its neighbouring segments.

    Weakest: the largest p-value above max_pvalue; when every p passes, the smallest
    relative change below min_magnitude (Otava's merge order).
    """
    shift, s1, s2 = _prefix_sums(x)
    cuts = np.unique(np.asarray(cuts, dtype=np.intp))
    while cuts.size:
        bounds = np.concatenate([[0], cuts, [x.size]])
        na, ma, va = _segment_stats(s1, s2, bounds[:-2], bounds[1:-1])
        nb, mb, vb = _segment_stats(s1, s2, bounds[1:-1], bounds[2:])
        p = _welch_p(na, ma, va, nb, mb, vb)
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


# --------------------------------------------------------------------------- E-divisive

def energy_statistic(x: ArrayLike) -> NDArray[np.float64]:
    """The E-divisive (Matteson & James 2014, α = 1) divergence q̂(τ) for every split τ.

    Element τ is the statistic for x[:τ] vs x[τ:], (m·n/(m+n))·(2/(mn)·Σ|xᵢ−yⱼ|
    − Σ_{i<k}|xᵢ−xₖ|/C(m,2) − Σ_{j<l}|yⱼ−yₗ|/C(n,2)); NaN where a side has fewer than 2
    values (τ < 2 or τ > len−2). O(len²) memory: meant for windows, not whole histories.
    """
    v = np.asarray(x, dtype=float).reshape(-1)
    q = np.full(v.size + 1, math.nan)
    if v.size >= 4:
        q[2:v.size - 1] = _energy_batch(v[None, :], 2)[0]
    return q


def _energy_batch(windows: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    """q̂(τ) for τ = k .. w−k of each row of `windows` (shape b × w), as energy_statistic."""
    w = windows.shape[1]
    d = windows[:, :, None] - windows[:, None, :]
    np.abs(d, out=d)
    row = d @ np.ones(w)                                  # Σ_j |x_i − x_j|
    low = np.einsum("bij,ij->bi", d, np.tri(w, k=-1))    # Σ_{j<i} |x_i − x_j|
    head_row = np.cumsum(row, axis=1)                     # Σ_{i<τ} Σ_j   (at τ−1)
    head_pairs = np.cumsum(low, axis=1)                   # Σ_{j<i<τ}     (at τ−1)
    tau = np.arange(k, w - k + 1)
    within_left = head_pairs[:, tau - 1]                  # pairs inside x[:τ]
    to_all = head_row[:, tau - 1]                         # x[:τ] against everything
    within_all = head_pairs[:, -1]
    between = to_all - 2 * within_left
    within_right = within_all[:, None] - within_left - between
    m, n = tau.astype(float), (w - tau).astype(float)
    return np.asarray(m * n / (m + n) * (2 * between / (m * n) - within_left / (m * (m - 1) / 2)
                                         - within_right / (n * (n - 1) / 2)), dtype=float)


def _bisect(x: NDArray[np.float64], s1: NDArray[np.float64], s2: NDArray[np.float64], lo: int, hi: int,
            max_pvalue: float, out: list[int]) -> None:
    """Recursive E-divisive bisection of x[lo:hi], keeping splits whose t-test passes."""
    k = E_DIVISIVE_MIN_SEGMENT
    if hi - lo < 2 * k:
        return
    q = _energy_batch(x[None, lo:hi], k)[0]
    best = int(np.argmax(q))
    if not q[best] > 0:
        return
    tau = lo + k + best
    if _split_p(s1, s2, lo, tau, hi) <= max_pvalue:
        out.append(tau)
        _bisect(x, s1, s2, lo, tau, max_pvalue, out)
        _bisect(x, s1, s2, tau, hi, max_pvalue, out)


def _window_candidates(x: NDArray[np.float64], s1: NDArray[np.float64], s2: NDArray[np.float64], window: int,
                       max_pvalue: float) -> list[int]:
    """Candidates from windows of `window` values overlapping by half.

    The first split of every window is found and tested in batches (most windows hold
    no change and stop there); only windows whose first split passes recurse.
    """
    n, k = x.size, E_DIVISIVE_MIN_SEGMENT
    step = max(window // 2, 1)
    starts = np.arange(0, n - window + 1, step)
    if starts[-1] != n - window:
        starts = np.append(starts, n - window)
    all_windows = np.lib.stride_tricks.sliding_window_view(x, window)
    per_batch = max(1, _BATCH_CELLS // (window * window))
    out: list[int] = []
    for first in range(0, starts.size, per_batch):
        lo = starts[first:first + per_batch]
        q = _energy_batch(all_windows[lo], k)
        best = np.argmax(q, axis=1)
        positive = q[np.arange(lo.size), best] > 0
        tau = lo + k + best
        p = _split_p(s1, s2, lo, tau, lo + window)
        for i in np.flatnonzero(positive & (p <= max_pvalue)):
            t, start = int(tau[i]), int(lo[i])
            out.append(t)
            _bisect(x, s1, s2, start, t, max_pvalue, out)
            _bisect(x, s1, s2, t, start + window, max_pvalue, out)
    return out


def _e_divisive_cuts(x: NDArray[np.float64], window: int, max_pvalue: float,
                     min_magnitude: float) -> list[int]:
    if x.size < 2 * E_DIVISIVE_MIN_SEGMENT or np.ptp(x) == 0.0:
        return []
    _, s1, s2 = _prefix_sums(x)
    if x.size <= window:
        candidates: list[int] = []
        _bisect(x, s1, s2, 0, x.size, max_pvalue, candidates)
    else:
        candidates = _window_candidates(x, s1, s2, window, max_pvalue)
    return _merge(x, candidates, max_pvalue, min_magnitude)


def _check_e_divisive(window: int, max_pvalue: float) -> None:
    if window < 2 * E_DIVISIVE_MIN_SEGMENT:
        raise ValueError(f"window must be >= {2 * E_DIVISIVE_MIN_SEGMENT}, got {window}")
    if not 0.0 < max_pvalue <= 1.0:
        raise ValueError(f"max_pvalue must be in (0, 1], got {max_pvalue}")


def e_divisive(values: ArrayLike, *, window: int = 50, max_pvalue: float = 0.001,
               min_magnitude: float = 0.0) -> list[ChangePoint]:
    """Change points in the mean by E-divisive means with t-tests, as Otava (Hunter) does.

    1. Candidates: windows of `window` finite values, overlapping by half (one window
       when the series is shorter); in each, split recursively at the maximum of the
       energy statistic while the Welch t-test between the two sides gives
       p <= max_pvalue. Energy is O(window²) per window, so the whole is O(n·window).
    2. Merge: each candidate is tested against its neighbouring segments (previous and
       next candidate); the weakest (largest p) failing point is removed and its
       neighbours retested, until all have p <= max_pvalue and a relative change
       |after − before| / |before| >= min_magnitude (a fraction: 0.05 = 5%).

    Assumes independent, roughly normal noise around piecewise-constant means; the
    t-test makes the rule sensitive to changes of a few noise sds over tens of points.
    Segments are at least E_DIVISIVE_MIN_SEGMENT values long. Deterministic: the
    E-divisive permutation test is replaced by the t-test, as in Otava.
    """
    return detect(values, method="e-divisive", window=window, max_pvalue=max_pvalue,
                  min_magnitude=min_magnitude)


# --------------------------------------------------------------------------- penalised

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


def _pelt_cuts(x: NDArray[np.float64], beta: float, min_size: int) -> list[int]:
    """Optimal partition minimising Σ RSS(segment) + β·(#changes), segments >= min_size."""
    _, s1, s2 = _prefix_sums(x)
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


def _binseg_cuts(x: NDArray[np.float64], beta: float, min_size: int) -> list[int]:
    """Seeded binary segmentation, the exact optimum over its candidates, then local repair.

    Candidates: the best split of each seeded interval that lowers the RSS by > β/4
    (generous: the selection decides). Selection: `_optimal_partition` restricted to the
    candidates. Repair, until nothing moves: re-place each cut at the best split between
    its neighbours, and remove the cut whose removal costs least when that is < β. Every
    step lowers PELT's objective, so the result is a local optimum of it.
    """
    _, s1, s2 = _prefix_sums(x)
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


def _penalised_cuts(x: NDArray[np.float64], search: Callable[[NDArray[np.float64], float, int], list[int]],
                    penalty: str | float, min_size: int, min_magnitude: float) -> list[int]:
    if min_size < 1:
        raise ValueError(f"min_size must be >= 1, got {min_size}")
    if x.size < 2 * min_size or x.size < 2 or np.ptp(x) == 0.0:
        return []
    beta = _penalty(x, penalty)
    if not beta > 0.0:
        return []
    cuts = search(x, beta, min_size)
    return _merge(x, cuts, 1.0, min_magnitude) if min_magnitude > 0.0 else cuts


def pelt(values: ArrayLike, *, penalty: str | float = "mbic", min_size: int = 2,
         min_magnitude: float = 0.0) -> list[ChangePoint]:
    """Change points in the mean by PELT with a Gaussian cost and an information criterion.

    Minimises Σ over segments of the residual sum of squares + β per change point, with
    β = c·σ², σ from `robust_noise_sd` so the penalty scales with the noise:
    ``penalty`` "mbic" c = 3·ln n (the default: on the synthetic grid of
    tests/stats/test_changepoints_accuracy.py it keeps BIC's recall of steps >= 2 sd
    with a third of its false alarms on short series), "bic" c = 2·ln n (two parameters
    per change), "aic" c = 4, or a number c. Exact (the global optimum) in expected O(n) time when
    changes keep occurring; segments hold at least `min_size` finite values. Points
    whose relative change is below `min_magnitude` (a fraction) are then merged away,
    smallest first.

    Assumes independent Gaussian noise of constant variance; heavy tails or drift make
    it split more. No significance filter: the reported p_value is for information.
    """
    return detect(values, method="pelt", penalty=penalty, min_size=min_size, min_magnitude=min_magnitude)


def binseg(values: ArrayLike, *, penalty: str | float = "mbic", min_size: int = 2,
           min_magnitude: float = 0.0) -> list[ChangePoint]:
    """Change points in the mean by binary segmentation, with PELT's cost and penalty.

    Seeded binary segmentation (Kovács et al. 2023): the best single split of each of
    O(n/8) intervals at halving scales gives candidates; PELT's objective is then
    minimised exactly over those candidates and the cuts moved and pruned until none
    can move or go at a gain (see `_binseg_cuts`). A few vectorised passes, O(n log n),
    instead of PELT's Python loop over n; the same answer on clear steps (the accuracy
    grid's F1 is within 0.01 of PELT's).
    """
    return detect(values, method="binseg", penalty=penalty, min_size=min_size, min_magnitude=min_magnitude)


# --------------------------------------------------------------------------- entry point

def group_centres(groups: Sequence[NDArray[np.float64]], centre: str = "mean") -> NDArray[np.float64]:
    """One value per group (NaN for an empty one): its mean or its median."""
    from perflab.stats.summary import group_stats
    found = group_stats(groups)
    return found.median if centre == "median" else found.mean


def _is_grouped(values: Any) -> TypeGuard[Iterable[ArrayLike]]:
    if isinstance(values, np.ndarray):
        return values.dtype == object or values.ndim == 2  # 2-D: one row of samples per position
    return any(isinstance(v, (Sequence, np.ndarray)) and not isinstance(v, str) for v in values)


def detect(values: ArrayLike | Sequence[ArrayLike], *, method: str = "mosum",
           window: int = 50, max_pvalue: float = 0.001, min_magnitude: float = 0.0,
           penalty: str | float = "mbic", min_size: int = 2, centre: str = "mean",
           false_rate: float = FALSE_RATE_PER_1000, spread: bool = False) -> list[ChangePoint]:
    """Change points of a series by `method` (one of METHODS); the callers' entry point.

    ``values``: one number per position (NaN = missing), or one sequence of samples per
    position (a commit; empty = missing). With groups, detection runs on the ``centre``
    of each position ("mean", or "median": one wild sample of a commit then neither hides
    nor fakes a change), and each ChangePoint describes the samples of its two segments.
    ``window`` and ``max_pvalue`` apply to e-divisive; ``penalty`` and ``min_size`` to
    pelt and binseg; ``false_rate`` (expected false points per 1,000 points of noise) to
    mosum, whose segments are at least max(min_size, mosum.MIN_SEGMENT) long, and which with
    ``spread`` also reports changes in the noise's spread alone (kind "spread", off by
    default: see stats/mosum.py);
    ``min_magnitude`` (a fraction) to all. Indices are positions in `values`, the first
    of the new regime.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}: one of {', '.join(METHODS)}")
    if centre not in CENTRES:
        raise ValueError(f"unknown centre {centre!r}: one of {', '.join(CENTRES)}")
    if method == "e-divisive":
        _check_e_divisive(window, max_pvalue)
    if _is_grouped(values):
        groups = [np.asarray(g, dtype=float).reshape(-1) for g in values]
        groups = [g[np.isfinite(g)] for g in groups]
        centres = group_centres(groups, centre)
    else:
        groups = None
        centres = np.asarray(values, dtype=float).reshape(-1)
    x, where = _finite(centres)
    if method == "mosum":
        return _mosum(x, where, groups, false_rate, min_size, min_magnitude, spread)
    if method == "e-divisive":
        cuts = _e_divisive_cuts(x, window, max_pvalue, min_magnitude)
    else:
        search = _pelt_cuts if method == "pelt" else _binseg_cuts
        cuts = _penalised_cuts(x, search, penalty, min_size, min_magnitude)
    indices = where[cuts]
    if groups is None:
        return _describe(x, cuts, indices, method)
    samples = np.concatenate([np.empty(0), *groups])
    offsets = np.concatenate([[0], np.cumsum([g.size for g in groups])])
    return _describe(samples, offsets[indices].tolist(), indices, method)


def _mosum(x: NDArray[np.float64], where: NDArray[np.intp], groups: list[NDArray[np.float64]] | None,
           false_rate: float, min_size: int, min_magnitude: float, spread: bool = False) -> list[ChangePoint]:
    """detect's mosum branch: search, then describe each point's segments and test."""
    if not false_rate > 0.0:
        raise ValueError(f"false_rate must be > 0, got {false_rate}")
    found = search(x, rate=false_rate, min_segment=max(min_size, MIN_SEGMENT), spread=spread)
    cuts = [f.index for f in found]
    if groups is None:
        points = _describe(x, cuts, where[cuts], "mosum")
    else:
        samples = np.concatenate([np.empty(0), *groups])
        offsets = np.concatenate([[0], np.cumsum([g.size for g in groups])])
        indices = where[cuts]
        points = _describe(samples, offsets[indices].tolist(), indices, "mosum")
    out = []
    for point, f in zip(points, found):
        if f.kind == "mean" and min_magnitude > 0.0:
            level = abs(point.mean_before)
            if level > 0.0 and abs(f.magnitude) / level < min_magnitude:
                continue
        half = 1.959964 * f.sd
        if f.kind == "spread":  # a step of log f in log|difference|: the ratio f, no level step
            out.append(replace(point, p_value=f.p_value, kind=f.kind, change_pct=math.nan,
                               magnitude=math.exp(f.magnitude), ci_low=math.exp(f.magnitude - half),
                               ci_high=math.exp(f.magnitude + half)))
            continue
        out.append(replace(point, p_value=f.p_value, kind=f.kind, magnitude=f.magnitude,
                           ci_low=f.magnitude - half, ci_high=f.magnitude + half))
    return out
