"""Change points in a history of values: where the mean of a series steps to a new level.

Two methods, both for changes in the *mean* of a piecewise-constant series with
independent noise (they do not model trends, seasonality or changes in variance alone):

  e_divisive  Otava (formerly Hunter) style: candidates from the E-divisive energy
              statistic in sliding windows, then a Welch t-test between neighbouring
              segments; the weakest points are merged away until every remaining one
              is significant (p <= max_pvalue) and large enough (>= min_magnitude).
  pelt        PELT (Killick et al. 2012), exact penalised least squares for changes in
              mean (Gaussian cost), penalty from an information criterion scaled by a
              robust noise estimate, as asv's piecewise-constant fit does.

Input may hold NaN / ±inf gaps (a run that failed): they are dropped, and every index
reported is in the caller's original numbering. A `ChangePoint.index` is the first index
of the new regime. Short (fewer than two minimal segments) and constant series give [].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from perflab.model.records import Direction
from perflab.stats.significance import welch_t

#: The shortest segment e_divisive will split off (a t-test needs 2 per side; 3 keeps
#: single outliers from being paired into a "regime").
E_DIVISIVE_MIN_SEGMENT = 3

_PENALTY_FACTORS = {
    # β = factor(n) · σ² per change point, σ² the robust noise variance.
    "bic": lambda n: 2.0 * math.log(n),  # 2 parameters per change: its location and the new mean
    "mbic": lambda n: 3.0 * math.log(n),  # Zhang & Siegmund's modified BIC, as R changepoint
    "aic": lambda n: 4.0,  # 2 · 2 parameters; liberal, many false alarms on long series
}


@dataclass(frozen=True)
class ChangePoint:
    """A step in the mean of a series, with the two neighbouring segments that define it.

    ``change_pct`` is raw, 100·(mean_after − mean_before)/mean_before (NaN when
    mean_before is 0); use `oriented` to make positive = better. ``p_value`` is Welch's
    t-test (bounded df) between the neighbouring segments, i.e. from the previous
    reported change point (or the start) to the next (or the end); it is not corrected
    for the search that found the point, so it is optimistic as an absolute probability.
    """

    index: int
    mean_before: float
    stddev_before: float
    mean_after: float
    stddev_after: float
    change_pct: float
    p_value: float
    method: str


def oriented(change_pct: float, direction: Direction) -> float:
    """`change_pct` with positive = better: negated when lower values are better."""
    return -change_pct if direction is Direction.LOWER else change_pct


# --------------------------------------------------------------------------- helpers

def _finite(values: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """The finite values in order and their indices in the original numbering."""
    x = np.asarray(values, dtype=float).reshape(-1)
    keep = np.flatnonzero(np.isfinite(x))
    return x[keep], keep


def _segment_stats(s1: NDArray[np.float64], s2: NDArray[np.float64], lo: NDArray[np.intp],
                   hi: NDArray[np.intp]) -> tuple[NDArray, NDArray, NDArray]:
    """(n, mean, variance ddof=1) of segments [lo, hi) from prefix sums of x and x²."""
    n = (hi - lo).astype(float)
    total = s1[hi] - s1[lo]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / n
        var = np.maximum(s2[hi] - s2[lo] - total * mean, 0.0) / (n - 1)
    return n, mean, var


def _welch_p(na, ma, va, nb, mb, vb) -> NDArray[np.float64]:
    """Vectorised two-sided Welch p-values with welch_t's bounded df; 1.0 where undefined.

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
    p = np.where(se2 == 0.0, np.where(mb != ma, 0.0, 1.0), p)
    p = np.where((na < 2) | (nb < 2) | ~np.isfinite(p), 1.0, p)
    return p


def _describe(x: NDArray[np.float64], where: NDArray[np.intp], cuts: list[int],
              method: str) -> list[ChangePoint]:
    """ChangePoints for cuts (indices into the finite values x), mapped through `where`."""
    bounds = [0, *cuts, x.size]
    out = []
    for i, cut in enumerate(cuts, start=1):
        before, after = x[bounds[i - 1]:cut], x[cut:bounds[i + 1]]
        mb, ma = float(before.mean()), float(after.mean())
        out.append(ChangePoint(
            index=int(where[cut]),
            mean_before=mb,
            stddev_before=float(before.std(ddof=1)) if before.size > 1 else math.nan,
            mean_after=ma,
            stddev_after=float(after.std(ddof=1)) if after.size > 1 else math.nan,
            change_pct=100.0 * (ma - mb) / mb if mb != 0.0 else math.nan,
            p_value=welch_t(before, after).p_value,
            method=method,
        ))
    return out


# --------------------------------------------------------------------------- E-divisive

def energy_statistic(x: ArrayLike) -> NDArray[np.float64]:
    """The E-divisive (Matteson & James 2014, α = 1) divergence q̂(τ) for every split τ.

    Element τ is the statistic for x[:τ] vs x[τ:], (m·n/(m+n))·(2/(mn)·Σ|xᵢ−yⱼ|
    − Σ_{i<k}|xᵢ−xₖ|/C(m,2) − Σ_{j<l}|yⱼ−yₗ|/C(n,2)); NaN where a side has fewer than 2
    values (τ < 2 or τ > len−2). O(len²) memory: meant for windows, not whole histories.
    """
    v = np.asarray(x, dtype=float).reshape(-1)
    w = v.size
    q = np.full(w + 1, math.nan)
    if w < 4:
        return q
    d = np.abs(v[:, None] - v[None, :])
    p = np.zeros((w + 1, w + 1))
    p[1:, 1:] = d.cumsum(axis=0).cumsum(axis=1)
    tau = np.arange(2, w - 1)
    m, n = tau.astype(float), (w - tau).astype(float)
    between = p[tau, w] - p[tau, tau]
    left = p[tau, tau] / 2
    right = (p[w, w] - 2 * p[tau, w] + p[tau, tau]) / 2
    q[tau] = m * n / (m + n) * (2 * between / (m * n) - left / (m * (m - 1) / 2)
                                - right / (n * (n - 1) / 2))
    return q


def _bisect(x: NDArray[np.float64], lo: int, hi: int, max_pvalue: float, out: list[int]) -> None:
    """Recursive E-divisive bisection of x[lo:hi], keeping splits whose t-test passes."""
    k = E_DIVISIVE_MIN_SEGMENT
    if hi - lo < 2 * k:
        return
    q = energy_statistic(x[lo:hi])[k:hi - lo - k + 1]
    if not np.any(q > 0):
        return
    tau = lo + k + int(np.nanargmax(q))
    if welch_t(x[lo:tau], x[tau:hi]).p_value <= max_pvalue:  # NaN compares False
        out.append(tau)
        _bisect(x, lo, tau, max_pvalue, out)
        _bisect(x, tau, hi, max_pvalue, out)


def _merge(x: NDArray[np.float64], cuts: NDArray[np.intp], max_pvalue: float,
           min_magnitude: float) -> list[int]:
    """Drop the weakest cut until every cut passes against its neighbouring segments."""
    shift = float(np.median(x))  # centred prefix sums keep the variances accurate
    s1 = np.concatenate([[0.0], np.cumsum(x - shift)])
    s2 = np.concatenate([[0.0], np.cumsum((x - shift) ** 2)])
    cuts = np.unique(cuts)
    while cuts.size:
        bounds = np.concatenate([[0], cuts, [x.size]])
        na, ma, va = _segment_stats(s1, s2, bounds[:-2], bounds[1:-1])
        nb, mb, vb = _segment_stats(s1, s2, bounds[1:-1], bounds[2:])
        p = _welch_p(na, ma, va, nb, mb, vb)
        with np.errstate(invalid="ignore", divide="ignore"):
            magnitude = np.abs(mb - ma) / np.abs(ma + shift)  # mean before 0: inf, passes
        magnitude = np.where(np.isnan(magnitude), 0.0, magnitude)
        weak = (p > max_pvalue) | (magnitude < min_magnitude)
        if not weak.any():
            break
        # weakest = largest p, ties broken by the smaller magnitude
        order = np.lexsort((magnitude, -p))
        cuts = np.delete(cuts, order[0])
    return [int(c) for c in cuts]


def e_divisive(values: ArrayLike, *, window: int = 50, max_pvalue: float = 0.001,
               min_magnitude: float = 0.0, seed: int = 0) -> list[ChangePoint]:
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
    Segments are at least E_DIVISIVE_MIN_SEGMENT values long. Deterministic: `seed` is
    accepted for API stability (the E-divisive permutation test it would seed is
    replaced by the t-test, as in Otava) and is unused.
    """
    del seed
    if window < 2 * E_DIVISIVE_MIN_SEGMENT:
        raise ValueError(f"window must be >= {2 * E_DIVISIVE_MIN_SEGMENT}, got {window}")
    if not 0.0 < max_pvalue <= 1.0:
        raise ValueError(f"max_pvalue must be in (0, 1], got {max_pvalue}")
    x, where = _finite(values)
    n = x.size
    if n < 2 * E_DIVISIVE_MIN_SEGMENT or np.ptp(x) == 0.0:
        return []
    candidates: list[int] = []
    if n <= window:
        _bisect(x, 0, n, max_pvalue, candidates)
    else:
        step = max(window // 2, 1)
        starts = list(range(0, n - window + 1, step))
        if starts[-1] != n - window:
            starts.append(n - window)
        for lo in starts:
            _bisect(x, lo, lo + window, max_pvalue, candidates)
    cuts = _merge(x, np.asarray(candidates, dtype=np.intp), max_pvalue, min_magnitude)
    return _describe(x, where, cuts, "e-divisive")


# --------------------------------------------------------------------------- PELT

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


def _pelt_cuts(x: NDArray[np.float64], beta: float, min_size: int) -> list[int]:
    """Optimal partition minimising Σ RSS(segment) + β·(#changes), segments >= min_size."""
    n = x.size
    v = x - np.median(x)
    s1 = np.concatenate([[0.0], np.cumsum(v)])
    s2 = np.concatenate([[0.0], np.cumsum(v * v)])
    f = np.full(n + 1, math.inf)
    f[0] = -beta
    last = np.zeros(n + 1, dtype=np.intp)
    r = np.array([0], dtype=np.intp)
    for t in range(min_size, n + 1):
        ready = r <= t - min_size
        adm, waiting = r[ready], r[~ready]
        length = t - adm
        total = s1[t] - s1[adm]
        vals = f[adm] + (s2[t] - s2[adm]) - total * total / length
        j = int(np.argmin(vals))
        f[t] = vals[j] + beta
        last[t] = adm[j]
        # PELT pruning (K = 0 for this cost): s can never be optimal again if it loses now
        r = np.concatenate([adm[vals <= f[t]], waiting, [t]])
    cuts = []
    t = n
    while t > 0:
        t = int(last[t])
        if t > 0:
            cuts.append(t)
    return cuts[::-1]


def pelt(values: ArrayLike, *, penalty: str | float = "bic", min_size: int = 2) -> list[ChangePoint]:
    """Change points in the mean by PELT with a Gaussian cost and an information criterion.

    Minimises Σ over segments of the residual sum of squares + β per change point, with
    β = c·σ², σ from `robust_noise_sd` so the penalty scales with the noise:
    ``penalty`` "bic" c = 2·ln n (two parameters per change), "mbic" c = 3·ln n,
    "aic" c = 4, or a number c. Exact (the global optimum) in expected O(n) time when
    changes keep occurring; segments hold at least `min_size` finite values.

    Assumes independent Gaussian noise of constant variance; heavy tails or drift make
    it split more. No significance filter: the reported p_value is for information.
    """
    if min_size < 1:
        raise ValueError(f"min_size must be >= 1, got {min_size}")
    x, where = _finite(values)
    n = x.size
    if n < 2 * min_size or n < 2 or np.ptp(x) == 0.0:
        return []
    if isinstance(penalty, str):
        try:
            factor = _PENALTY_FACTORS[penalty.lower()](n)
        except KeyError:
            raise ValueError(f"unknown penalty {penalty!r}: one of {sorted(_PENALTY_FACTORS)} "
                             "or a number") from None
    else:
        factor = float(penalty)
    sigma = robust_noise_sd(x)
    beta = factor * sigma * sigma
    if not beta > 0.0:
        return []
    cuts = _pelt_cuts(x, beta, min_size)
    return _describe(x, where, cuts, "pelt")
