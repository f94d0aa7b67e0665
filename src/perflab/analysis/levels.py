"""One change list per series: the detectors' changes and the robot's confirmed levels, each
change's two sides bounded by the levels around it.

A series' levels start at its boundaries: the whole-series detector's changes, the tip
detector's finding on the newest commits, and the levels the robot confirmed (the store's
alerts, confirmed and not invalid, and the ways back that recovered them) where no detector
places them now (method ALERTED_METHOD). A change's "before" side is the level that ends at
it; its "after" side starts at it and ends at the next boundary (the way back, the next
change or the tip), so commits restored to the old level are never pooled into the level
they left. History, `changes`, alerts, `report change`, `alert ID` and the dashboard all read
changes from here: they print the same levels, % and p (``Change.detection_p``).

An alerted boundary that the detectors no longer place is kept only when the levels either
side of it differ: Welch's t-test of their per-commit medians (the change's own p) below
ALPHA. A side of one commit has no spread to test, and two sides that agree are one level
(an alert one commit from where the detector now places its step). Unsupported boundaries
are dropped one at a time, the least supported first, until every one left is supported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from perflab.analysis.series import change_at, change_id, tip_change, welch_p
from perflab.model.alerts import INVALID, Alert
from perflab.model.report.history import ALERTED_METHOD, CONFIRMED, Change, History, Series

#: the test level at which an alerted boundary the detectors no longer place is kept
ALPHA = 0.05

__all__ = ["ALPHA", "levels", "nearer", "with_levels"]


def with_levels(history: History, alerts: Sequence[Alert]) -> History:
    """``history`` with each series' one change list (``levels``); idempotent."""
    by_series: dict[tuple[str, str, str], list[Alert]] = {}
    for a in alerts:
        by_series.setdefault((a.host, a.benchmark, a.metric), []).append(a)
    return replace(history, series=tuple(levels(s, by_series.get((s.host, s.benchmark, s.metric), ()))
                                         for s in history.series))


def levels(series: Series, alerts: Sequence[Alert] = ()) -> Series:
    """The series with its changes bounded by each other, by its tip finding and by the
    levels of ``alerts`` (any alerts: those of other series are ignored); see the module."""
    detector = tuple(c for c in series.changes if c.method != ALERTED_METHOD)
    fixed = {c.index for c in detector}
    kept = _supported(series, fixed, _alerted(series, alerts) - fixed)
    since = max(fixed | kept, default=0)
    plain = replace(series, changes=detector)
    unchanged = not kept and len(detector) == len(series.changes)
    tip = series.tip if unchanged else tip_change(plain, since=since)
    bounds = sorted(fixed | kept | ({tip.index} if tip is not None else set()))
    edges = [0, *bounds, len(series.points)]
    by_index = {c.index: c for c in detector}
    changes = []
    for k, b in enumerate(bounds, start=1):
        first, end = edges[k - 1], edges[k + 1]
        if b in by_index:
            changes.append(_bounded(series, by_index[b], first, end))
        elif b in kept:
            changes.append(change_at(series, b, first, end, method=ALERTED_METHOD))
        elif tip is not None:
            tip = _bounded(series, tip, first, end)
    return replace(series, changes=tuple(changes), tip=tip)


def _alerted(series: Series, alerts: Sequence[Alert]) -> set[int]:
    """The positions of the levels the robot confirmed on ``series``: its confirmed alerts
    that are not invalid, and the ways back that recovered them."""
    if not alerts:
        return set()
    at = {change_id(series.host, series.benchmark, series.params_key, series.metric, p.point.key): i
          for i, p in enumerate(series.points)}
    found = set()
    for a in alerts:
        if a.change_id not in at or a.status != CONFIRMED or a.state == INVALID:
            continue
        found.add(at[a.change_id])
        if a.recovered and a.recovered_by in at:
            found.add(at[a.recovered_by])
    found.discard(0)   # the first point starts the series, not a level
    return found


def _supported(series: Series, fixed: set[int], candidates: set[int]) -> set[int]:
    """The ``candidates`` left when, one at a time, the least supported is dropped while its
    two levels (between its neighbouring boundaries) do not differ at ALPHA."""
    centres = np.array(series.medians(), dtype=float)
    kept = set(candidates)
    while kept:
        bounds = [0, *sorted(fixed | kept), len(centres)]
        worst, worst_p = -1, -1.0
        for i in range(1, len(bounds) - 1):
            b = bounds[i]
            if b not in kept:
                continue
            p = welch_p(centres[bounds[i - 1]:b], centres[b:bounds[i + 1]])
            p = p if math.isfinite(p) else 1.0
            if p > worst_p:
                worst, worst_p = b, p
        if worst_p < ALPHA:
            break
        kept.discard(worst)
    return kept


def _bounded(series: Series, c: Change, first: int, end: int) -> Change:
    """Change ``c`` with its sides [first, c.index) and [c.index, end); its kind, status and
    the detector's own figures kept."""
    if (c.before.first, c.after.end) == (first, end):
        return c
    found = change_at(series, c.index, first, end, method=c.method, status=c.status)
    if c.kind != "mean":   # a change in the spread alone: no level step, as the detector said
        found = replace(found, change_pct=c.change_pct, oriented_pct=c.oriented_pct, verdict=c.verdict)
    return replace(found, p_value=c.p_value, kind=c.kind, spread_ratio=c.spread_ratio)


def nearer(level: float, old: float, new: float) -> bool:
    """Is ``level`` nearer ``old`` than ``new``: by ratio when all three are positive, else by difference."""
    if level > 0 and old > 0 and new > 0:
        return abs(math.log(level / old)) < abs(math.log(level / new))
    return abs(level - old) < abs(level - new)
