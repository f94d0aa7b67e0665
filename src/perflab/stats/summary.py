"""Summaries of one sample: centres, spread, best-N% means, percentiles.

Every function takes any array-like of numbers, never raises on empty or degenerate
input and returns NaN where the statistic is undefined; `summarize` says why in its
warnings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from perflab.model.records import Direction, MeanKind
from perflab.stats import checks
from perflab.stats.rows import by_size, median_rows
from perflab.stats.warnings import NON_FINITE, NONPOSITIVE_GMEAN, NONPOSITIVE_HMEAN, StatWarning


def clean(values: ArrayLike) -> tuple[NDArray[np.float64], tuple[StatWarning, ...]]:
    """`values` as a flat float array in the order given, NaN and ±inf dropped (with a warning)."""
    x = np.asarray(values, dtype=float).reshape(-1)
    finite = np.isfinite(x)
    if finite.all():
        return x, ()
    dropped = int(x.size - finite.sum())
    return x[finite], (StatWarning(NON_FINITE, f"{dropped} non-finite value(s) dropped"),)


# Every mean here is quasi-arithmetic: f⁻¹(mean(f(x))), with f = x, 1/x or log x.
_LINEARISE: dict[MeanKind, tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]] = {
    MeanKind.ARITHMETIC: (lambda x: x, lambda m: m),
    MeanKind.HARMONIC: (np.reciprocal, np.reciprocal),
    MeanKind.GEOMETRIC: (np.log, np.exp),
}


def linearise(kind: MeanKind) -> tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]:
    """(f, f⁻¹) such that the `kind` mean is f⁻¹(arithmetic mean of f(x)); f needs x > 0 unless amean."""
    return _LINEARISE[kind]


def centres(x: NDArray[np.float64], kind: MeanKind) -> NDArray[np.float64]:
    """The `kind` mean along the last axis of `x`.

    Harmonic and geometric means are NaN for a row holding a value <= 0; any mean of an
    empty row is NaN.
    """
    if x.shape[-1] == 0:
        return np.full(x.shape[:-1], math.nan)
    if kind is MeanKind.ARITHMETIC:
        means: NDArray[np.float64] = x.mean(axis=-1)  # a numpy scalar when x is 1-D
        return means
    forward, back = _LINEARISE[kind]
    positive = np.all(x > 0, axis=-1)
    return np.where(positive, back(forward(np.where(x > 0, x, 1.0)).mean(axis=-1)), math.nan)


def centre(values: ArrayLike, kind: MeanKind) -> float:
    """The mean of `kind` of the values (NaN if empty, or if hmean/gmean meets a value <= 0)."""
    return float(centres(np.asarray(values, dtype=float).reshape(-1), kind))


def amean(values: ArrayLike) -> float:
    """Arithmetic mean Σx/n: the centre for times (NaN if empty)."""
    return centre(values, MeanKind.ARITHMETIC)


def hmean(values: ArrayLike) -> float:
    """Harmonic mean n/Σ(1/x): the centre for rates. Defined for positive values only (else NaN)."""
    return centre(values, MeanKind.HARMONIC)


def gmean(values: ArrayLike) -> float:
    """Geometric mean exp(mean log x): the centre for ratios. Positive values only (else NaN)."""
    return centre(values, MeanKind.GEOMETRIC)


def median(values: ArrayLike) -> float:
    """The median (mean of the two middle values for even n); NaN if empty."""
    x = np.asarray(values, dtype=float).reshape(-1)
    return float(np.median(x)) if x.size else math.nan


def stddev(values: ArrayLike) -> float:
    """Sample standard deviation (n − 1 denominator); NaN with fewer than 2 values."""
    x = np.asarray(values, dtype=float).reshape(-1)
    return float(x.std(ddof=1)) if x.size >= 2 else math.nan


def cov(values: ArrayLike) -> float:
    """Coefficient of variation in %, 100·sd/amean (mmtests CoeffVar).

    Meaningful for positive quantities only: NaN when the mean is <= 0 or n < 2.
    """
    mean = amean(values)
    return 100.0 * stddev(values) / mean if mean > 0 else math.nan


def best_mean(values: ArrayLike, pct: float, kind: MeanKind, direction: Direction) -> float:
    """The `kind` mean of the best `pct`% of the values (mmtests BAmean-N / BHmean-N).

    Best means the lowest values when lower is better and the highest when higher is
    better. Keeps ⌊n·pct/100⌋ values, at least one; NaN if empty.
    """
    if not 0 < pct <= 100:
        raise ValueError(f"pct must be in (0, 100], not {pct}")
    x = np.sort(np.asarray(values, dtype=float).reshape(-1))
    keep = max(1, math.floor(x.size * pct / 100))
    best = x[:keep] if direction is Direction.LOWER else x[x.size - keep:]
    return centre(best, kind)


def percentiles(values: ArrayLike, q: ArrayLike = (25, 50, 75, 90, 95, 99)) -> NDArray[np.float64]:
    """Percentiles `q` (0..100) by linear interpolation between order statistics; NaN if empty."""
    x = np.asarray(values, dtype=float).reshape(-1)
    qs = np.asarray(q, dtype=float)
    if x.size == 0:
        return np.full(qs.shape, math.nan)
    out: NDArray[np.float64] = np.percentile(x, qs)  # a numpy scalar when q is a scalar
    return out


@dataclass(frozen=True)
class Summary:
    """One sample described: the centre of its metric's mean kind, the median and the spread."""

    n: int
    centre: float
    mean_kind: MeanKind
    median: float
    stddev: float
    cov: float  # %, 100·sd/amean
    min: float
    max: float
    warnings: tuple[StatWarning, ...] = ()


def summarize(values: ArrayLike, mean_kind: MeanKind = MeanKind.ARITHMETIC) -> Summary:
    """Summarise values given in repetition order, with every warning that applies.

    Non-finite values are dropped. Warnings: sample size, non-positive values under an
    hmean/gmean, zero spread, high CoV, outliers, bimodality, trend (see `checks`).
    """
    return summarize_rows([values], [mean_kind])[0]


def summarize_rows(samples: Sequence[ArrayLike], mean_kinds: Sequence[MeanKind]) -> list[Summary]:
    """`summarize` of each sample with its mean kind, the same figures and warnings: the
    samples of one size (once cleaned) are stacked and every statistic and check is taken
    along their rows, so a thousand rows cost a few array operations, not a thousand."""
    cleaned = [clean(values) for values in samples]
    out: list[Summary] = [None] * len(cleaned)  # type: ignore[list-item]
    for rows, block in by_size([x for x, _ in cleaned]):
        made = _summarize_block(block, [mean_kinds[i] for i in rows], [cleaned[i][1] for i in rows])
        for i, summary in zip(rows, made):
            out[i] = summary
    return out


def _summarize_block(block: NDArray[np.float64], kinds: list[MeanKind],
                     dropped: list[tuple[StatWarning, ...]]) -> list[Summary]:
    """`summarize` of each row of ``block`` (finite values, one size), with its mean kind."""
    rows, n = block.shape
    nan = np.full(rows, math.nan)
    order = np.argsort(block, axis=1)
    ordered = np.take_along_axis(block, order, axis=1)
    mid = median_rows(ordered)
    sd = block.std(axis=1, ddof=1) if n >= 2 else nan
    mean = block.mean(axis=1) if n else nan
    with np.errstate(divide="ignore", invalid="ignore"):
        cv = np.where(mean > 0, 100.0 * sd / mean, math.nan)
    nonpositive = np.sum(block <= 0, axis=1)
    outliers = checks.outlier_rows(block, mid)
    bimodal, trend = checks.bimodal_rows(ordered), checks.trend_rows(block, order)
    centre = np.empty(rows)
    for kind in set(kinds):
        chosen = np.array([k is kind for k in kinds])
        centre[chosen] = centres(block[chosen], kind)
    least, most = (block.min(axis=1), block.max(axis=1)) if n else (nan, nan)
    out = []
    for i, kind in enumerate(kinds):
        found = [*dropped[i], checks.check_sample_size(n)]
        if nonpositive[i] and kind is not MeanKind.ARITHMETIC:
            code, name = ((NONPOSITIVE_HMEAN, "harmonic") if kind is MeanKind.HARMONIC
                          else (NONPOSITIVE_GMEAN, "geometric"))
            found.append(StatWarning(code, f"{int(nonpositive[i])} value(s) <= 0: the {name} mean is undefined"))
        found += [checks.check_spread(n, float(sd[i])), checks.check_cov(float(cv[i])), outliers[i], bimodal[i],
                  trend[i]]
        out.append(Summary(
            n=n, centre=float(centre[i]), mean_kind=kind, median=float(mid[i]), stddev=float(sd[i]),
            cov=float(cv[i]), min=float(least[i]), max=float(most[i]),
            warnings=tuple(w for w in found if w is not None)))
    return out


@dataclass(frozen=True)
class GroupStats:
    """Per group (a commit's samples, say): its size, median, mean and sample stddev (NaN
    where undefined: no value, or one for the stddev)."""

    n: NDArray[np.int64]
    median: NDArray[np.float64]
    mean: NDArray[np.float64]
    sd: NDArray[np.float64]


def group_stats(groups: Sequence[NDArray[np.float64]]) -> GroupStats:
    """n, median, mean and stddev of every group, as np.median/np.mean/np.std(ddof=1) give
    them one group at a time: groups of one size are stacked and reduced along their rows
    (the same reductions per row), so 5,000 commits cost a few array operations."""
    count = len(groups)
    n = np.fromiter((g.size for g in groups), dtype=np.int64, count=count)
    median, mean, sd = (np.full(count, math.nan) for _ in range(3))
    for rows, block in by_size([np.asarray(g, dtype=float) for g in groups]):
        size = block.shape[1]
        if not size:
            continue
        median[rows] = median_rows(block)
        mean[rows] = np.mean(block, axis=1)
        if size > 1:
            sd[rows] = np.std(block, axis=1, ddof=1)
    return GroupStats(n, median, mean, sd)
