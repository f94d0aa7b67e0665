"""The dashboard's front page: what needs a person, then the fleet's health, then the runs.

Read from the store's alert book, job book and newest runs, never from a detection over
every series (the robot's ``alerts --update`` did that): the page costs a few indexed
queries whatever the store's size (bench/fleet_scale.py); each alert range's sparkline is
its own request (``series_window``: an indexed window of one series), drawn as it arrives.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np

from perflab.analysis.alert_bisects import culprit_of
from perflab.analysis.alert_reruns import awaiting_rerun
from perflab.model.alerts import DUPLICATE, INVALID, SUSPECT, UNTRIAGED, Alert
from perflab.model.frontpage import AlertGroup, FrontPage, Level, SeriesWindow
from perflab.model.records import normalise_params
from perflab.model.report.history import ChangeReport
from perflab.store import Store

RECENT_DAYS = 14      # confirmed changes shown on the front page: created this recently
RECENT_CHANGES = 20
NEWEST_RUNS = 20
SPARK_BEFORE, SPARK_AFTER = 24, 8   # commits either side of an alert's first bad commit
SHOWN_GROUPS = 20     # commit ranges of untriaged alerts on the front page (with a sparkline each)


def front_page(store: Store, now: float | None = None) -> FrontPage:
    """The front page of ``store`` at ``now`` (default: the clock)."""
    now = time.time() if now is None else now
    untriaged = store.alerts.all(state=UNTRIAGED)
    events = store.alerts.events_of([a.id for a in untriaged])
    waiting = {a.id for a in untriaged if a.status == SUSPECT or awaiting_rerun(events.get(a.id, []))}
    groups = _groups(store, untriaged)
    ranges = len({a.summary_id for a in untriaged})
    recent = sorted((a for a in store.alerts.recent(now - RECENT_DAYS * 86400)
                     if a.state not in (UNTRIAGED, INVALID, DUPLICATE) and a.status != SUSPECT),
                    key=lambda a: -a.created_at)[:RECENT_CHANGES]
    return FrontPage(
        now=now,
        untriaged=tuple(g for g in groups if not any(a.id in waiting for a in g.alerts)),
        suspects=tuple(g.with_rerun() for g in groups if any(a.id in waiting for a in g.alerts)),
        recent=tuple(recent), untriaged_ranges=ranges,
        fleet=store.jobs.health(store.workers.all(), now),
        runs=tuple(store.runs.recent(NEWEST_RUNS)))


def _groups(store: Store, alerts: Sequence[Alert], shown: int = SHOWN_GROUPS) -> list[AlertGroup]:
    """The alerts by summary (commit range), newest range first, largest change first in each;
    the ``shown`` newest ranges only (the rest are one click away, on /alerts)."""
    by_summary: dict[int, list[Alert]] = {}
    for a in alerts:
        by_summary.setdefault(a.summary_id, []).append(a)
    groups = []
    newest = sorted(by_summary, key=lambda k: -min(a.created_at for a in by_summary[k]))[:shown]
    for summary_id in newest:
        members = by_summary[summary_id]
        members.sort(key=lambda a: (-abs(a.oriented_pct) if math.isfinite(a.oriented_pct) else 0.0, a.id))
        head = members[0]
        groups.append(AlertGroup(summary_id, head.last_good, head.first_bad, store.alerts.repo_of(summary_id),
                                 tuple(members), culprit=culprit_of(store, head)))
    return sorted(groups, key=lambda g: -g.created_at)


def series_window(store: Store, alert: Alert, before: int = SPARK_BEFORE,
                  after: int = SPARK_AFTER) -> SeriesWindow:
    """The per-commit medians of the alert's series around its first bad commit: ``before``
    points ahead of it, ``after`` from it on, in the order their runs were recorded (read from
    two runs a point: a series measured more often per commit shows fewer points)."""
    at = store.series.first_run(alert.host, alert.first_bad)
    keys, medians = series_medians(store, alert, at, 2 * before, 2 * after)
    if alert.first_bad not in keys:
        return SeriesWindow(tuple(keys[-before:]), tuple(medians[-before:]), None)
    i = keys.index(alert.first_bad)
    first, end = max(0, i - before), i + after
    good = keys.index(alert.last_good) - first if alert.last_good in keys[first:end] else None
    return SeriesWindow(tuple(keys[first:end]), tuple(medians[first:end]), i - first, good)


def series_medians(store: Store, alert: Alert, around: int | None = None, runs_before: int = 0,
                   runs_after: int = 0) -> tuple[list[str], list[float]]:
    """The alert's series (its host, benchmark, point and metric) as point keys and each
    point's median, in the order the points' first runs started (around a run: in the order
    recorded, see store.series.of_one)."""
    values: dict[str, list[np.ndarray]] = {}
    for run_id, commit, _, found in store.series.of_one(alert.host, alert.benchmark, normalise_params(alert.params),
                                                          alert.metric, around=around, runs_before=runs_before,
                                                          runs_after=runs_after):
        values.setdefault(commit or f"run-{run_id}", []).append(found)
    keys = list(values)
    return keys, [float(np.median(np.concatenate(v))) if sum(x.size for x in v) else math.nan
                  for v in values.values()]


def report_levels(report: ChangeReport, window: SeriesWindow) -> tuple[Level, ...]:
    """The levels before and after the change as its report computes them (each side's
    segment centre, over the points it pools), placed on ``window``'s points (a side that
    reaches past the window is drawn to its edge): the one place the dashboard reads a
    report's levels."""
    keys, out = window.keys, []
    for name, side in (("before", report.before), ("after", report.after)):
        near = side.last.key if name == "before" else side.first.key   # the side's end at the change
        if near not in keys:
            continue
        far = side.first.key if name == "before" else side.last.key
        edge = 0 if name == "before" else len(keys) - 1
        first, last = sorted((keys.index(near), keys.index(far) if far in keys else edge))
        out.append(Level(name, side.segment.centre, first, last))
    return tuple(out)
