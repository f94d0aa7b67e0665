"""`perflab changepoints FILE`: the change points of each column of a series file, as
model.report.history.FileChanges (numbers, oriented change and verdict computed here).

A file whose points are commits (a label column, or several samples per point) is read as
`perflab history` reads a series: detection on each commit's median as a commit series
(stats/commit_series.py), and the tip detector's look at the newest commits after the last
change (suspect or confirmed). A plain column of numbers is a series of samples."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from perflab.formats.series import SeriesFile
from perflab.model.errors import UsageError
from perflab.model.methods import (
    AUTO_METHOD,
    CHANGE_POINT_NAMES,
    DetectorParams,
    DetectSettings,
    Shown,
    change_point_method,
    method_choices,
    resolve_method,
)
from perflab.model.records import Direction
from perflab.model.report.history import (
    CONFIRMED,
    TIP_METHOD,
    ColumnChanges,
    FileChangePoint,
    FileChanges,
    directed_verdict,
)
from perflab.model.verdicts import oriented

if TYPE_CHECKING:
    from perflab.stats.detectors.points import ChangePoint


def is_commit_series(series: SeriesFile) -> bool:
    """The file's points are commits: labelled, or several samples to a point."""
    return bool(series.labels) or any(len(g) > 1 for c in series.columns.values() for g in c)


def file_changes(series: SeriesFile, columns: Sequence[str], *, method: str, settings: DetectSettings,
                 direction: Direction | None, commits: bool | None = None) -> FileChanges:
    """Detect change points in ``columns`` (all numeric ones when empty) of ``series`` by
    ``method`` with the parameters ``settings`` give it; with ``settings.spread`` (mosum
    only) changes in the noise's spread as well. ``commits``: read the points as commits
    (None: `is_commit_series`; never with spread)."""
    from perflab.stats.changepoints import MIN_POINTS, detect
    spread = settings.spread
    if method != AUTO_METHOD and method not in CHANGE_POINT_NAMES:
        raise UsageError(f"unknown method {method!r}; choose from {', '.join(method_choices())}")
    chosen = list(dict.fromkeys(columns)) or list(series.columns)
    for name in chosen:
        if name not in series.columns:
            raise UsageError(f"{series.path}: no numeric column {name!r}",
                             f"numeric columns: {', '.join(series.columns)}")
    as_commits = (is_commit_series(series) if commits is None else commits) and not spread
    results = []
    used: list[str] = []
    params: list[DetectorParams] = []
    for name in chosen:
        groups = series.columns[name]
        present = sum(1 for g in groups if g)
        if present < MIN_POINTS:
            raise UsageError(f"{series.path}: column {name!r} has {present} points with values; "
                             f"change-point detection needs at least {MIN_POINTS}")
        used.append(resolve_method(method, present))
        if spread and used[-1] != "mosum":
            raise UsageError(f"--spread searches with mosum only, and column {name!r} would use {used[-1]}",
                             "pass --method mosum")
        params.append(change_point_method(used[-1]).params_from(settings))
        try:
            found = detect(groups, method=used[-1], params=params[-1], commits=as_commits,
                           centre="median" if as_commits else "mean")
        except ValueError as error:
            raise UsageError(str(error)) from None
        entries = [(cp, CONFIRMED) for cp in found]
        entries += _tip(groups, found, settings.min_magnitude or 0.0) if as_commits else []
        labels = series.labels
        points = []
        for cp, status in entries:
            better = oriented(cp.change_pct, direction) if direction is not None else None
            points.append(FileChangePoint(
                index=cp.index, label=labels[cp.index] if labels else None, mean_before=cp.mean_before,
                stddev_before=cp.stddev_before, mean_after=cp.mean_after, stddev_after=cp.stddev_after,
                change_pct=cp.change_pct, oriented_pct=better, p_value=cp.p_value, kind=cp.kind, status=status,
                verdict=directed_verdict(better) if better is not None and math.isfinite(cp.change_pct) else None,
                spread_ratio=cp.magnitude if cp.kind == "spread" else math.nan, method=cp.method,
                parts=tuple((i, labels[i] if labels else None, share) for i, share in cp.parts)))
        results.append(ColumnChanges(column=name, points=len(groups), has_labels=bool(series.labels),
                                     change_points=tuple(points), commits=as_commits))
    one = len(set(used)) == 1
    # the parameters of the one method used (none when auto took several), then the common ones
    parameters: Shown = params[0].shown() if one else {}
    if settings.min_magnitude:
        parameters["min_magnitude"] = settings.min_magnitude
    if spread:
        parameters["spread"] = True
    return FileChanges(source=series.path, method=used[0] if one else method, parameters=parameters,
                       direction=direction, columns=tuple(results))


def _tip(groups: Sequence[Sequence[float]], found: list[ChangePoint],
         min_magnitude: float) -> list[tuple[ChangePoint, str]]:
    """The tip detector's look at the newest commits after the last change (as history's
    `tip_change`): one ChangePoint of method TIP_METHOD with its status (suspect or
    confirmed), or none. Its p is `commit_p` of the commits since the last change before it and after."""
    import numpy as np

    from perflab.stats import commit_series
    from perflab.stats.detectors.points import ChangePoint
    from perflab.stats.tip import CONFIRMED as TIP_CONFIRMED
    from perflab.stats.tip import SUSPECT, look
    centres = np.array([float(np.median(g)) if len(g) else math.nan for g in groups])
    since = found[-1].last if found else 0
    seen = look(centres, since=since)
    if seen.status not in (SUSPECT, TIP_CONFIRMED) or any(cp.index == seen.start for cp in found):
        return []
    before = [v for g in groups[since:seen.start] for v in g]
    after = [v for g in groups[seen.start:] for v in g]
    mb, ma = float(np.mean(before)), float(np.mean(after))
    raw = 100.0 * (ma - mb) / mb if mb else math.nan
    if math.isfinite(raw) and abs(raw) / 100.0 < min_magnitude:
        return []
    old, new = centres[since:seen.start], centres[seen.start:]
    p = commit_series.commit_p(old[np.isfinite(old)], new[np.isfinite(new)])
    sb, sa = (float(np.std(v, ddof=1)) if len(v) > 1 else math.nan for v in (before, after))
    return [(ChangePoint(seen.start, mb, sb, ma, sa, raw, p, TIP_METHOD), seen.status)]
