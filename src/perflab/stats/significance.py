"""Hypothesis tests: Welch's t, Mann-Whitney U, Mann-Kendall trend, Benjamini-Hochberg FDR.

The tests return NaN instead of raising when they are undefined (too few values,
log of a non-positive value); callers turn that into a warning and never into a
significance mark.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from perflab.stats.rows import by_size

if TYPE_CHECKING:
    from perflab.stats.variance import RunVariance


class WelchResult(NamedTuple):
    """Welch's two-sample t-test of mean(new) − mean(base), with its confidence interval."""

    statistic: float
    p_value: float
    df: float
    difference: float  # mean(new) − mean(base), of the logs when log=True
    ci_low: float
    ci_high: float


def welch_t(base: ArrayLike, new: ArrayLike, *, log: bool = False, confidence: float = 0.95,
            bounded_df: bool = True, run_variance: RunVariance | None = None,
            run_shares: tuple[float, float] = (1.0, 1.0)) -> WelchResult:
    """Welch's unequal-variance t-test, two-sided, and the t interval of the difference.

    Assumes independent samples whose means are near normal (normal data, or n large).
    With ``log=True`` it compares mean logs, i.e. tests the ratio of geometric means, the
    right scale for times and rates whose noise is multiplicative; exp(ci) is then a
    confidence interval of the ratio new/base.

    Degrees of freedom: the Welch-Satterthwaite estimate is random and grows exactly when
    the smaller sample's variance comes out small, i.e. when |t| is large; with unequal n
    that makes the test liberal in the far tail where FDR control works (at p = 0.0033,
    n = 5 vs 30, 2.4 times the nominal rate). With ``bounded_df`` (the default) the
    estimate is capped at the value the same formula gives for equal variances, a
    function of n alone: identical to Welch for equal n, at or below nominal for unequal
    n with equal variances. ``bounded_df=False`` is textbook Welch (scipy's ttest_ind).

    ``run_variance`` (the sides are separate runs): the variance of the difference and its
    df come from `RunVariance.difference_variance`, the run as the experimental unit (see
    ``stats.variance``; ``run_shares``: how many runs each side pools, as sum (m_j/n)^2);
    never narrower than the samples' own.

    Needs 2 or more values per side (else all NaN) and, with ``log=True``, positive values
    (else all NaN). When both sides have zero variance the difference is exact: p = 0 if
    the means differ, NaN (undefined) if not, and the interval collapses to the difference.
    """
    return welch_from_moments(moments(base, log=log), moments(new, log=log), confidence=confidence,
                              bounded_df=bounded_df, run_variance=run_variance, run_shares=run_shares)


class Moments(NamedTuple):
    """What Welch's test takes of one side: its size, mean and sample variance (n - 1)."""

    n: int
    mean: float     # numpy scalars as the reductions give them: the test's arithmetic is theirs
    var: float


def moments(values: ArrayLike, *, log: bool = False) -> Moments | None:
    """The side's `Moments` (of its logs with ``log``); None with fewer than 2 values or,
    with ``log``, a value <= 0."""
    found = moments_rows([np.asarray(values, dtype=float).reshape(-1)], log=log)
    return found[0]


def moments_rows(samples: Sequence[np.ndarray], *, log: bool = False) -> list[Moments | None]:
    """`moments` of each 1-D float sample: the samples of one size are stacked and reduced
    along their rows (the same reductions, row by row)."""
    out: list[Moments | None] = [None] * len(samples)
    for rows, block in by_size(samples):
        size = block.shape[1]
        if size < 2:
            continue
        if log:
            usable = ~np.any(block <= 0, axis=1)   # as np.log takes them: a NaN passes, to NaN
            rows, block = [i for i, ok in zip(rows, usable.tolist()) if ok], np.log(block[usable])
        means, variances = block.mean(axis=1), block.var(axis=1, ddof=1)
        for j, i in enumerate(rows):
            out[i] = Moments(size, means[j], variances[j])
    return out


def welch_from_moments(a: Moments | None, b: Moments | None, *, confidence: float = 0.95, bounded_df: bool = True,
                       run_variance: RunVariance | None = None,
                       run_shares: tuple[float, float] = (1.0, 1.0)) -> WelchResult:
    """`welch_t` of two sides given as their `Moments` (None: no test, all NaN)."""
    from scipy import special  # lazily: importing scipy costs start-up time
    nan = math.nan
    if a is None or b is None:
        return WelchResult(nan, nan, nan, nan, nan, nan)
    na, nb = a.n, b.n
    va, vb = a.var / na, b.var / nb
    difference = float(b.mean - a.mean)
    df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1)) if va + vb > 0 else math.inf
    if bounded_df:
        df = min(df, (1 / na + 1 / nb) ** 2 / (1 / (na * na * (na - 1)) + 1 / (nb * nb * (nb - 1))))
    variance = va + vb
    if run_variance is not None:
        variance, df = run_variance.difference_variance(na, nb, variance, df, run_shares)
    se = math.sqrt(variance)
    if se == 0.0:
        p = 0.0 if difference != 0.0 else nan
        statistic = math.copysign(math.inf, difference) if difference != 0.0 else nan
        return WelchResult(statistic, p, nan, difference, difference, difference)
    statistic = difference / se
    p = float(2 * special.stdtr(df, -abs(statistic)))
    half = float(special.stdtrit(df, 0.5 + confidence / 2)) * se
    return WelchResult(statistic, p, float(df), difference, difference - half, difference + half)


def mann_whitney(base: ArrayLike, new: ArrayLike) -> float:
    """Two-sided Mann-Whitney U p-value (scipy): does one side tend to give larger values?

    Distribution-free; assumes independent values. Exact when there are no ties and
    n_base·n_new <= 2500 (up to 50 per side; the normal approximation is conservative in
    the far tail, where FDR control works), else the normal approximation with tie
    correction. Needs 4 or more values per side to ever reach p < 0.05 (with 3 and 3 the
    smallest p is 0.1). NaN when a side is empty.
    """
    a = np.asarray(base, dtype=float).reshape(-1)
    b = np.asarray(new, dtype=float).reshape(-1)
    if a.size == 0 or b.size == 0:
        return math.nan
    method = "exact" if mann_whitney_is_exact(a, b) else "asymptotic"
    from scipy import stats
    return float(stats.mannwhitneyu(b, a, alternative="two-sided", method=method).pvalue)


def mann_whitney_is_exact(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether `mann_whitney` (and the interval that inverts it) takes U's exact null
    distribution: no ties and n_base·n_new <= 2500; else the normal approximation."""
    return a.size * b.size <= 2500 and np.unique(np.concatenate([a, b])).size == a.size + b.size


def spearman_trend(values: ArrayLike) -> tuple[float, float]:
    """Daniels' trend test: Spearman's rho of the values against their order: (z, p).

    z = rho·sqrt(n-1), normal approximation (fine for the n > 100 it is used for);
    ties get average ranks. (0, 1) when every value is equal.
    """
    x = np.asarray(values, dtype=float).reshape(1, -1)
    return spearman_trend_rows(x, np.argsort(x, axis=1))[0]


def mann_kendall(values: ArrayLike) -> tuple[float, float]:
    """Mann-Kendall test of a monotone trend along the order given: (z, two-sided p).

    S = Σ_{i<j} sign(x_j − x_i), Var S with the tie correction, z with a continuity
    correction and the normal approximation (Mann 1945, Kendall 1975). Distribution-free;
    assumes independent values under the null. (nan, nan) with fewer than 3 values,
    (0, 1) when every value is equal.
    """
    x = np.asarray(values, dtype=float).reshape(1, -1)
    return mann_kendall_rows(x, np.sort(x, axis=1))[0]


def _tie_runs(ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of sorted values, the runs of equal values (NaNs are one run, as np.unique
    counts them): each position's run index, and each run index's length (0 past the last)."""
    rows, n = ordered.shape
    same = (ordered[:, 1:] == ordered[:, :-1]) | (np.isnan(ordered[:, 1:]) & np.isnan(ordered[:, :-1]))
    starts = np.ones((rows, n), dtype=bool)
    starts[:, 1:] = ~same
    run = np.cumsum(starts, axis=1) - 1
    length = np.bincount((run + (np.arange(rows) * n)[:, None]).reshape(-1), minlength=rows * n)
    return run, length.reshape(rows, n)


def spearman_trend_rows(block: np.ndarray, order: np.ndarray) -> list[tuple[float, float]]:
    """`spearman_trend` of each row of ``block`` (``order``: its np.argsort along the rows)."""
    rows, n = block.shape
    if n < 3:
        return [(math.nan, math.nan)] * rows
    run, length = _tie_runs(np.take_along_axis(block, order, axis=1))
    # a run's average rank: its end - (length - 1)/2 (exact halves, as from np.unique's counts)
    average = np.cumsum(length, axis=1) - (length - 1) / 2.0
    ranks = np.empty((rows, n))
    np.put_along_axis(ranks, order, np.take_along_axis(average, run, axis=1), axis=1)
    ranks -= (n + 1) / 2.0      # both centred: mean rank is (n+1)/2
    position = np.arange(n) - (n - 1) / 2.0
    if n <= 2**17:   # sums of quarter-integers below 2^51: exact in any order, as one row's dot product
        along, squares = (ranks @ position).tolist(), np.einsum("ij,ij->i", ranks, ranks).tolist()
    else:
        along, squares = [float(r @ position) for r in ranks], [float(r @ r) for r in ranks]
    spread = float(position @ position)
    out = []
    for i in range(rows):
        if run[i, -1] == 0:     # every value equal
            out.append((0.0, 1.0))
            continue
        z = along[i] / math.sqrt(squares[i] * spread) * math.sqrt(n - 1)
        out.append((z, math.erfc(abs(z) / math.sqrt(2))))
    return out


def mann_kendall_rows(block: np.ndarray, ordered: np.ndarray) -> list[tuple[float, float]]:
    """`mann_kendall` of each row of ``block`` (``ordered``: the rows sorted)."""
    rows, n = block.shape
    if n < 3:
        return [(math.nan, math.nan)] * rows
    s = np.empty(rows)
    chunk = max(1, 2**20 // (n * n))   # rows whose n x n signs take about 8 MB
    for lo in range(0, rows, chunk):
        x = block[lo:lo + chunk]
        s[lo:lo + chunk] = np.sum(np.triu(np.sign(x[:, None, :] - x[:, :, None]), 1), axis=(1, 2))
    _, length = _tie_runs(ordered)
    ties = np.sum(length * (length - 1) * (2 * length + 5), axis=1)
    out = []
    for i in range(rows):
        var = (n * (n - 1) * (2 * n + 5) - float(ties[i])) / 18
        if var == 0.0:
            out.append((0.0, 1.0))
            continue
        si = float(s[i])
        z = (si - math.copysign(1.0, si)) / math.sqrt(var) if si else 0.0
        out.append((z, math.erfc(abs(z) / math.sqrt(2))))
    return out


class FdrResult(NamedTuple):
    """Benjamini-Hochberg decisions and adjusted p-values (q-values), in input order."""

    rejected: np.ndarray  # bool
    adjusted: np.ndarray  # float, NaN where the input was NaN


def benjamini_hochberg(p_values: ArrayLike, q: float = 0.05) -> FdrResult:
    """Benjamini-Hochberg step-up procedure controlling the false discovery rate at `q`.

    Rejects the k smallest p-values, k the largest rank with p_(k) <= k·q/m. Valid for
    independent or positively dependent tests. NaN p-values (no test possible) are never
    rejected but still count in m, which keeps the procedure conservative.
    """
    p = np.asarray(p_values, dtype=float).reshape(-1)
    m = p.size
    if m == 0:
        return FdrResult(np.zeros(0, dtype=bool), np.zeros(0))
    filled = np.where(np.isnan(p), 1.0, p)
    order = np.argsort(filled, kind="stable")
    ranked = filled[order] * m / np.arange(1, m + 1)
    adjusted_sorted = np.minimum(np.minimum.accumulate(ranked[::-1])[::-1], 1.0)
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    below = np.flatnonzero(filled[order] <= q * np.arange(1, m + 1) / m)
    rejected = np.zeros(m, dtype=bool)
    if below.size:
        rejected[order[: below[-1] + 1]] = True
    rejected &= ~np.isnan(p)
    adjusted[np.isnan(p)] = math.nan
    return FdrResult(rejected, adjusted)
