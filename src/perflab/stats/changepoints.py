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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeGuard

import numpy as np
from numpy.typing import ArrayLike, NDArray

from perflab.model.verdicts import oriented as oriented  # re-exported: its old home
from perflab.stats.energy import E_DIVISIVE_MIN_SEGMENT, check_e_divisive, e_divisive_cuts
from perflab.stats.mosum import FALSE_RATE_PER_1000 as FALSE_RATE_PER_1000  # re-exported: detect's default
from perflab.stats.mosum import MIN_SEGMENT, search
from perflab.stats.penalised import binseg_cuts, pelt_cuts, penalised_cuts
from perflab.stats.segment_tests import prefix_sums, segment_stats, welch_p

#: The fewest values (positions with data) in which any method can place a change.
MIN_POINTS = 2 * E_DIVISIVE_MIN_SEGMENT

#: Method names `detect` accepts (the CLI's --method choices), the default first.
METHODS = ("mosum", "e-divisive", "pelt", "binseg")

#: One value per position from its samples, for `detect` on groups.
CENTRES = ("mean", "median")


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
    #: a commit series' change spread over several commits (`commit_series`): (index, share
    #: of the whole change) of each, the last the first at the new level; () for one step
    parts: tuple[tuple[int, float], ...] = ()

    @property
    def last(self) -> int:
        """The first index at the new level: ``index`` for one step, the last part's else."""
        return self.parts[-1][0] if self.parts else self.index


def preload() -> None:
    """Import now the scipy modules the detectors and their tests import lazily (lazily so
    that a CLI command without detection starts fast): a long-lived server calls this once
    at start, so its first history page does not pay half a second of imports."""
    # mosum's filters; t and normal quantiles; a change report's comparison
    import scipy.ndimage
    import scipy.special
    import scipy.stats  # noqa: F401


def _finite(values: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """The finite values in order and their indices in the original numbering."""
    x = np.asarray(values, dtype=float).reshape(-1)
    keep = np.flatnonzero(np.isfinite(x))
    return x[keep], keep


def _describe(x: NDArray[np.float64], cuts: Sequence[int], indices: Sequence[int] | NDArray[np.intp],
              method: str) -> list[ChangePoint]:
    """ChangePoints at positions `cuts` of the samples x, reported at `indices`: each
    segment's mean and sd, and Welch's p between the two (`welch_t`'s, NaN where it is
    undefined), all from prefix sums (`welch_t` and each side's mean and sd, point by point,
    cost ~1 ms of mosum's 11 on 10,000 points)."""
    if not len(cuts):
        return []
    shift, s1, s2 = prefix_sums(x)
    bounds = np.array([0, *cuts, x.size])
    na, ma, va = segment_stats(s1, s2, bounds[:-2], bounds[1:-1])
    nb, mb, vb = segment_stats(s1, s2, bounds[1:-1], bounds[2:])
    p = welch_p(na, ma, va, nb, mb, vb, undefined=math.nan)
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


def pelt(values: ArrayLike, *, penalty: str | float = "mbic", min_size: int = 2,
         min_magnitude: float = 0.0) -> list[ChangePoint]:
    """Change points in the mean by PELT with a Gaussian cost and an information criterion.

    Minimises Σ over segments of the residual sum of squares + β per change point, with
    β = c·σ², σ from `robust_noise_sd` so the penalty scales with the noise:
    ``penalty`` "mbic" c = 3·ln n (the default; bench/README.md, "Method history"), "bic"
    c = 2·ln n (two parameters per change), "aic" c = 4, or a number c. Exact (the global
    optimum) in expected O(n) time when changes keep occurring; segments hold at least `min_size` finite values. Points
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
    can move or go at a gain (see `penalised.binseg_cuts`). A few vectorised passes,
    O(n log n), instead of PELT's Python loop over n; the same answer on clear steps.
    """
    return detect(values, method="binseg", penalty=penalty, min_size=min_size, min_magnitude=min_magnitude)


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
           false_rate: float = FALSE_RATE_PER_1000, spread: bool = False,
           commits: bool = False) -> list[ChangePoint]:
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
    of the new regime. ``commits``: the positions are commits, not samples (`commit_series`:
    mosum keeps short excursions and adds the tip detector's confirmed levels; every method's
    points are placed by rank, their p from the commits' values, a change over several
    commits has its ``parts``); the ChangePoint's p_value is then `commit_series.commit_p`.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}: one of {', '.join(METHODS)}")
    if centre not in CENTRES:
        raise ValueError(f"unknown centre {centre!r}: one of {', '.join(CENTRES)}")
    if method == "e-divisive":
        check_e_divisive(window, max_pvalue)
    if _is_grouped(values):
        groups = [np.asarray(g, dtype=float).reshape(-1) for g in values]
        groups = [g[np.isfinite(g)] for g in groups]
        centres = group_centres(groups, centre)
    else:
        groups = None
        centres = np.asarray(values, dtype=float).reshape(-1)
    x, where = _finite(centres)
    if commits and x.size >= MIN_POINTS and np.ptp(x) > 0.0:
        return _commit_points(x, where, groups, method, window=window, max_pvalue=max_pvalue, penalty=penalty,
                              min_size=min_size, min_magnitude=min_magnitude, false_rate=false_rate)
    if method == "mosum":
        return _mosum(x, where, groups, false_rate, min_size, min_magnitude, spread)
    if method == "e-divisive":
        cuts = e_divisive_cuts(x, window, max_pvalue, min_magnitude)
    else:
        search = pelt_cuts if method == "pelt" else binseg_cuts
        cuts = penalised_cuts(x, search, penalty, min_size, min_magnitude)
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


def _commit_points(x: NDArray[np.float64], where: NDArray[np.intp], groups: list[NDArray[np.float64]] | None,
                   method: str, *, min_magnitude: float, false_rate: float, **options: Any) -> list[ChangePoint]:
    """detect on a commit series (`commit_series.changes`): mosum's own detection, or the
    other methods' points as candidates; each change described by the commits before it
    (from the last change's new level) and from its new level on."""
    from perflab.stats import commit_series
    found = None
    if method != "mosum":
        found = [cp.index for cp in detect(x, method=method, **options)]
    steps = commit_series.changes(x, found=found, rate=false_rate)
    out = []
    for j, step in enumerate(steps):
        lo = steps[j - 1].last if j else 0
        hi = steps[j + 1].index if j + 1 < len(steps) else x.size
        before, after = _side(x, where, groups, lo, step.index), _side(x, where, groups, step.last, hi)
        level = float(np.median(x[lo:step.index])) if step.index > lo else math.nan
        step_size = abs(float(np.median(x[step.last:hi])) - level)
        if min_magnitude > 0.0 and level and step_size < min_magnitude * abs(level):
            continue
        mb, sb, ma, sa = (*before, *after)
        out.append(ChangePoint(
            index=int(where[step.index]), mean_before=mb, stddev_before=sb, mean_after=ma, stddev_after=sa,
            change_pct=100.0 * (ma - mb) / mb if mb else math.nan, p_value=step.p_value, method=method,
            parts=tuple((int(where[i]), share) for i, share in step.parts)))
    return out


def _side(x: NDArray[np.float64], where: NDArray[np.intp], groups: list[NDArray[np.float64]] | None,
          first: int, end: int) -> tuple[float, float]:
    """(mean, sd) of positions [first, end) of x: of their samples with groups."""
    v = x[first:end] if groups is None else np.concatenate([np.empty(0), *(groups[i] for i in where[first:end])])
    if not v.size:
        return math.nan, math.nan
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else math.nan
