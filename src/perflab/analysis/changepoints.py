"""`perflab changepoints FILE`: the change points of each column of a series file, as
model.report.history.FileChanges (numbers, oriented change and verdict computed here)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perflab.formats.series import SeriesFile
from perflab.model.errors import UsageError
from perflab.model.records import Direction
from perflab.model.report.history import (
    AUTO_METHOD,
    CHANGEPOINT_METHODS,
    ColumnChanges,
    FileChangePoint,
    FileChanges,
    directed_verdict,
    method_choices,
    resolve_method,
)


def file_changes(series: SeriesFile, columns: Sequence[str], *, method: str, window: int, max_pvalue: float,
                 penalty: str | float, min_magnitude: float, direction: Direction | None,
                 spread: bool = False) -> FileChanges:
    """Detect change points in ``columns`` (all numeric ones when empty) of ``series``;
    with ``spread`` (mosum only) changes in the noise's spread as well."""
    from perflab.stats.changepoints import FALSE_RATE_PER_1000 as FALSE_RATE
    from perflab.stats.changepoints import MIN_POINTS, detect
    if method != AUTO_METHOD and method not in CHANGEPOINT_METHODS:
        raise UsageError(f"unknown method {method!r}; choose from {', '.join(method_choices())}")
    chosen = list(dict.fromkeys(columns)) or list(series.columns)
    for name in chosen:
        if name not in series.columns:
            raise UsageError(f"{series.path}: no numeric column {name!r}",
                             f"numeric columns: {', '.join(series.columns)}")
    results = []
    used: list[str] = []
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
        try:
            found = detect(groups, method=used[-1], window=window, max_pvalue=max_pvalue,
                           min_magnitude=min_magnitude, penalty=penalty, spread=spread)
        except ValueError as error:
            raise UsageError(str(error)) from None
        points = []
        for cp in found:
            oriented = None
            if direction is not None:
                oriented = -cp.change_pct if direction is Direction.LOWER else cp.change_pct
            points.append(FileChangePoint(
                cp.index, series.labels[cp.index] if series.labels else None, cp.mean_before, cp.stddev_before,
                cp.mean_after, cp.stddev_after, cp.change_pct, oriented,
                directed_verdict(oriented) if oriented is not None and math.isfinite(cp.change_pct) else None,
                cp.p_value, cp.kind, cp.magnitude if cp.kind == "spread" else math.nan))
        results.append(ColumnChanges(name, len(groups), bool(series.labels), tuple(points)))
    method = used[0] if len(set(used)) == 1 else method
    parameters: dict[str, Any] = ({"window": window, "max_pvalue": max_pvalue} if method == "e-divisive"
                                  else {"false_alarms_per_1000_points": FALSE_RATE} if method == "mosum"
                                  else {"penalty": penalty} if method in ("pelt", "binseg") else {})
    if min_magnitude:
        parameters["min_magnitude"] = min_magnitude
    if spread:
        parameters["spread"] = True
    return FileChanges(series.path, method, parameters, direction, tuple(results))
