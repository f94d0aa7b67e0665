"""The dashboard's front page: what needs a person, then the fleet's health, then the runs.

Read from the store's alert book, job book and newest runs, never from a detection over
every series (the robot's ``alerts --update`` did that): the page costs a few indexed
queries and one series per alert group, whatever the store's size (bench/fleet_scale).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np

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


def front_page(store: Store, now: float | None = None) -> FrontPage:
    """The front page of ``store`` at ``now`` (default: the clock)."""
    now = time.time() if now is None else now
    untriaged = store.alerts.all(state=UNTRIAGED)
    events = store.alerts.events_of([a.id for a in untriaged])
    waiting = {a.id for a in untriaged if a.status == SUSPECT or awaiting_rerun(events.get(a.id, []))}
    groups = _groups(store, untriaged)
    recent = sorted((a for a in store.alerts.recent(now - RECENT_DAYS * 86400)
                     if a.state not in (UNTRIAGED, INVALID, DUPLICATE) and a.status != SUSPECT),
                    key=lambda a: -a.created_at)[:RECENT_CHANGES]
    return FrontPage(
        now=now,
        untriaged=tuple(g for g in groups if not any(a.id in waiting for a in g.alerts)),
        suspects=tuple(g.with_rerun() for g in groups if any(a.id in waiting for a in g.alerts)),
        recent=tuple(recent),
        fleet=store.jobs.health(store.workers.all(), now),
        runs=tuple(store.runs.recent(NEWEST_RUNS)))


def _groups(store: Store, alerts: Sequence[Alert]) -> list[AlertGroup]:
    """The alerts by summary (commit range), newest range first, largest change first in each."""
    by_summary: dict[int, list[Alert]] = {}
    for a in alerts:
        by_summary.setdefault(a.summary_id, []).append(a)
    groups = []
    for summary_id, members in by_summary.items():
        members.sort(key=lambda a: (-abs(a.oriented_pct) if math.isfinite(a.oriented_pct) else 0.0, a.id))
        head = members[0]
        groups.append(AlertGroup(summary_id, head.last_good, head.first_bad, store.alerts.repo_of(summary_id),
                                 tuple(members), series_window(store, head)))
    return sorted(groups, key=lambda g: -g.created_at)


def series_window(store: Store, alert: Alert, before: int = SPARK_BEFORE,
                  after: int = SPARK_AFTER) -> SeriesWindow:
    """The per-commit medians of the alert's series around its first bad commit (``before``
    commits ahead of it, ``after`` from it on); all of them when ``before`` is None."""
    keys, medians = series_medians(store, alert)
    if alert.first_bad not in keys:
        return SeriesWindow(tuple(keys[-(before or len(keys)):]), tuple(medians[-(before or len(keys)):]), None)
    at = keys.index(alert.first_bad)
    first = max(0, at - before) if before is not None else 0
    end = at + after if before is not None else len(keys)
    good = keys.index(alert.last_good) - first if alert.last_good in keys[first:end] else None
    return SeriesWindow(tuple(keys[first:end]), tuple(medians[first:end]), at - first, good)


def series_medians(store: Store, alert: Alert) -> tuple[list[str], list[float]]:
    """The alert's series (its host, benchmark, point and metric) as point keys and each
    point's median, in the order the points' first runs started."""
    values: dict[str, list[np.ndarray]] = {}
    for run_id, commit, _, found in store.series.of_one(alert.host, alert.benchmark,
                                                          normalise_params(alert.params), alert.metric):
        values.setdefault(commit or f"run-{run_id}", []).append(found)
    keys = list(values)
    return keys, [float(np.median(np.concatenate(v))) if sum(x.size for x in v) else math.nan
                  for v in values.values()]


def report_levels(report: ChangeReport, window: SeriesWindow) -> tuple[Level, ...]:
    """The levels before and after the change as its report computes them (each side's
    segment centre, over the points it pools), placed on ``window``'s points: the one
    place the dashboard reads a report's levels."""
    out = []
    for name, side in (("before", report.before), ("after", report.after)):
        if side.first.key in window.keys and side.last.key in window.keys:
            out.append(Level(name, side.segment.centre, window.keys.index(side.first.key),
                             window.keys.index(side.last.key)))
    return tuple(out)
