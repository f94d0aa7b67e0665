"""Change points in a history of values: where the mean of a series steps to a new level.

`detect` is the one entry point (CLI, history): a flat series or one group of samples per
commit, a method of the registry (model/methods.py CHANGE_POINT_METHODS: mosum, the default,
robust, calibrated to a false-alarm rate per point, also changes in spread; e-divisive,
Otava's; pelt, Killick et al. 2012; binseg, seeded binary segmentation; the last three for
changes in the mean of piecewise-constant series with independent noise) and its parameters.
Each method is one module of stats/detectors. NaN / ±inf gaps are dropped and indices are in
the caller's numbering; a `ChangePoint.index` is the first index of the new regime. Short
(fewer than two minimal segments) and constant series give []. A commit series is read by
`commit_series`. Methods: docs/methods.md (change points).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, TypeGuard

import numpy as np
from numpy.typing import ArrayLike, NDArray

from perflab.model.methods import ChangePointMethod, DetectorParams, change_point_method
from perflab.stats.detectors.points import ChangePoint, Values
from perflab.stats.energy import E_DIVISIVE_MIN_SEGMENT
from perflab.stats.methods import detector

#: The fewest values (positions with data) in which any method can place a change.
MIN_POINTS = 2 * E_DIVISIVE_MIN_SEGMENT

#: One value per position from its samples, for `detect` on groups.
CENTRES = ("mean", "median")

__all__ = ["CENTRES", "MIN_POINTS", "ChangePoint", "detect", "group_centres", "preload"]


def preload() -> None:
    """Import now the scipy modules the detectors and their tests import lazily (lazily so
    that a CLI command without detection starts fast): a long-lived server calls this once
    at start, so its first history page does not pay half a second of imports."""
    # mosum's filters; t and normal quantiles; a change report's comparison
    import scipy.ndimage
    import scipy.special
    import scipy.stats  # noqa: F401


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
           params: DetectorParams | None = None, centre: str = "mean", commits: bool = False) -> list[ChangePoint]:
    """Change points of a series by `method` (a name of model.methods.CHANGE_POINT_METHODS)
    with ``params`` (of the method's parameters type; None: its defaults); the callers' entry.

    ``values``: one number per position (NaN = missing), or one sequence of samples per
    position (a commit; empty = missing). With groups, detection runs on the ``centre``
    of each position ("mean", or "median": one wild sample of a commit then neither hides
    nor fakes a change), and each ChangePoint describes the samples of its two segments.
    Indices are positions in `values`, the first of the new regime. ``commits``: the
    positions are commits, not samples (`commit_series`: mosum keeps short excursions and
    adds the tip detector's confirmed levels; every method's points are placed by rank,
    their p from the commits' values, a change over several commits has its ``parts``); the
    ChangePoint's p_value is then `commit_series.commit_p`. ValueError: an unknown method or
    centre, parameters of another type or out of range.
    """
    chosen = change_point_method(method)
    if centre not in CENTRES:
        raise ValueError(f"unknown centre {centre!r}: one of {', '.join(CENTRES)}")
    params = chosen.params() if params is None else params
    if not isinstance(params, chosen.params):
        raise ValueError(f"{method} takes {chosen.params.__name__}, not {type(params).__name__}")
    if _is_grouped(values):
        groups = [np.asarray(g, dtype=float).reshape(-1) for g in values]
        groups = [g[np.isfinite(g)] for g in groups]
        centres = group_centres(groups, centre)
    else:
        groups = None
        centres = np.asarray(values, dtype=float).reshape(-1)
    x = np.asarray(centres, dtype=float).reshape(-1)
    keep = np.flatnonzero(np.isfinite(x))
    found = Values(x[keep], keep, groups)
    if commits and found.x.size >= MIN_POINTS and np.ptp(found.x) > 0.0:
        return _commit_points(found, chosen, params)
    return detector(method)(found, params)


def _commit_points(values: Values, method: ChangePointMethod, params: DetectorParams) -> list[ChangePoint]:
    """detect on a commit series (`commit_series.changes`): its own search (mosum's, for a
    method that searches commits itself, at the method's false-alarm rate), or the method's
    points as candidates; each change described by the commits before it (from the last
    change's new level) and from its new level on."""
    from perflab.stats import commit_series
    x, where, groups = values.x, values.where, values.groups
    found, rate = None, None
    if method.commit_search:
        rate = getattr(params, "false_rate", None)
    else:
        found = [cp.index for cp in detect(x, method=method.name, params=replace(params, min_magnitude=0.0))]
    steps = commit_series.changes(x, found=found, rate=rate)
    min_magnitude = params.min_magnitude
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
            change_pct=100.0 * (ma - mb) / mb if mb else math.nan, p_value=step.p_value, method=method.name,
            parts=tuple((int(where[i]), share) for i, share in step.parts)))
    return out


def _side(x: NDArray[np.float64], where: NDArray[np.intp], groups: list[NDArray[np.float64]] | None,
          first: int, end: int) -> tuple[float, float]:
    """(mean, sd) of positions [first, end) of x: of their samples with groups."""
    v = x[first:end] if groups is None else np.concatenate([np.empty(0), *(groups[i] for i in where[first:end])])
    if not v.size:
        return math.nan, math.nan
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else math.nan
