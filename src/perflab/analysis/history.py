"""A metric across commits: its series in commit order, the change points, one change's report.

A series is one (host, benchmark, parameter point, metric) followed across runs. Runs
of one commit merge their samples into one point; a run without a commit is a point of
its own. Runs of different machines are never one series.

Order. When the runs carry a repository that still exists, points follow its commit
graph (of every measured commit it knows), whatever order the runs were recorded in: the first-parent spine, each side
branch's commits placed just before the merge that brings them in, topological
otherwise (`vcs.graph_order`). Only points the repository does not reach (unknown
commits, runs without a commit) are placed by the time of their first run. Without a
usable repository every point goes by time, with a warning when a recorded repository
is gone.

Detection runs on one value per point, the median of its samples (Otava works on one
value per commit; the median, so that one wild sample of a commit, a timer wake-up 50 ms
late, neither hides nor fakes a change; missing points and failed runs are NaN gaps the
detectors skip), by
mosum by default (``resolve_method``), E-divisive, PELT or binseg when asked; the newest
commits are also read by the tip detector (stats/tip.py: ``Series.tip``, a suspect or a
confirmed new level after the last change). Changes smaller than the metric's noise floor
are dropped. A change's size
and verdict come from that same estimator: each segment's centre is the mean of its
per-point medians (the level the detectors compare), the change % is between the two
centres, oriented by the metric's direction. The raw samples' mean ± sd and Welch p-value
of the two neighbouring segments are kept beside it, with the detector's own p-value on the
per-point medians. Samples of one commit share a build, so the raw-sample p-value is the
optimistic one.

A change's id is a short hash of (host, benchmark, point, metric, first point of the new
regime): nothing is stored, `find_change` recomputes the histories and looks for it.
"""

from __future__ import annotations

import bisect
import datetime as dt
import hashlib
import itertools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from perflab.analysis.change_table import compare_commit_centres
from perflab.analysis.compare import Filters
from perflab.analysis.reproduce import reproduce_lines
from perflab.model.errors import UsageError
from perflab.model.records import Direction, MetricInfo, RunInfo, RunStatus, is_pressure_metric
from perflab.model.report.history import (
    AUTO_METHOD,
    CHANGEPOINT_METHODS,
    CONFIRMED,
    ORDER_GRAPH,
    ORDER_TIME,
    SUSPECT,
    TIP_METHOD,
    Change,
    ChangeList,
    ChangeReport,
    History,
    HistoryPoint,
    ListedChange,
    PointSummary,
    ReportSide,
    Segment,
    Series,
    SeriesPoint,
    directed_verdict,
    resolve_method,
)
from perflab.model.verdicts import StatWarning, Verdict, WarningSide
from perflab.store import Store
from perflab.store.alerts import alert_of_changes
from perflab.vcs import commit_subjects, graph_order, is_repository

METHODS = (AUTO_METHOD, *CHANGEPOINT_METHODS)
DIRECTIONS = (Verdict.REGRESSION.value, Verdict.IMPROVEMENT.value)

# warning kinds of a history (StatWarning.kind)
REPOSITORY_GONE = "repository-gone"
REPOSITORY_UNRELATED = "repository-unrelated"
NO_METRIC_INFO = "no-metric-info"

__all__ = ["METHODS", "build_history", "change_report", "commit_subjects", "find_change",
           "list_changes", "order_points", "parse_since", "preload", "report_of_change", "select_changes"]


def _warning(kind: str, message: str) -> StatWarning:
    return StatWarning(kind, message, WarningSide.REPORT)


# --------------------------------------------------------------------------- order

def _line(runs: list[RunInfo], warnings: list[StatWarning]) -> tuple[str | None, dict[str, int]]:
    """(repo, commit -> position in its graph order); (None, {}) for time order."""
    newest_first = sorted((r for r in runs if r.commit and r.repo), key=lambda r: -r.started_at)
    if not newest_first:
        return None, {}
    repo = newest_first[0].repo
    assert repo is not None
    if not is_repository(repo):
        warnings.append(_warning(REPOSITORY_GONE, f"repository {repo} is gone or not a git repository: "
                                 "commits ordered by the time of their runs"))
        return None, {}
    line = graph_order(repo, list(dict.fromkeys(r.commit for r in newest_first if r.commit)))
    if line is None:
        warnings.append(_warning(REPOSITORY_UNRELATED, f"repository {repo} knows none of the measured commits: "
                                 "commits ordered by the time of their runs"))
        return None, {}
    return repo, {sha: i for i, sha in enumerate(line)}


def order_points(runs: Sequence[RunInfo],
                 warnings: list[StatWarning]) -> tuple[list[HistoryPoint], str, str | None]:
    """The runs as points in history order, with the order's kind and repository."""
    groups: dict[str, list[RunInfo]] = {}
    for run in sorted(runs, key=lambda r: (r.started_at, r.id)):
        groups.setdefault(run.commit or f"run-{run.id}", []).append(run)
    repo, position = _line(list(runs), warnings)
    points = [HistoryPoint(key, members[0].commit,
                           next((r.commit_describe for r in reversed(members) if r.commit_describe), None),
                           tuple(members), key in position)
              for key, members in groups.items()]
    on = sorted((p for p in points if p.on_line), key=lambda p: position[p.key])
    off = sorted((p for p in points if not p.on_line), key=lambda p: (p.started_at, p.key))
    # an off-line point goes after the furthest line point measured before it (one old
    # commit measured late does not drag it back)
    # (the last i with on[i].started_at <= t is the last whose suffix minimum is <= t: the
    # suffix minima never decrease, so a binary search finds it)
    latest_first = [q.started_at for q in reversed(on)]
    suffix_min = list(reversed(list(itertools.accumulate(latest_first, min))))
    after: dict[int, list[HistoryPoint]] = {}
    for p in off:
        slot = bisect.bisect_right(suffix_min, p.started_at) - 1
        after.setdefault(slot, []).append(p)
    ordered = list(after.get(-1, []))
    for i, p in enumerate(on):
        ordered += [p, *after.get(i, [])]
    return ordered, (ORDER_GRAPH if repo else ORDER_TIME), repo


# --------------------------------------------------------------------------- series

def _selected_runs(store: Store, labels: Sequence[str]) -> list[RunInfo]:
    runs = [r for r in store.list_runs(counted=False, details=False) if r.status is not RunStatus.RUNNING]
    if labels:
        wanted = set(labels)
        runs = [r for r in runs if r.label in wanted]
        if not runs:
            raise UsageError(f"no runs labelled {', '.join(sorted(wanted))}", hint="'perflab runs' lists them")
    return runs


def build_history(store: Store, *, filters: Filters = Filters(), labels: Sequence[str] = (),
                  method: str = AUTO_METHOD) -> History:
    """Every selected series in history order, with its change points."""
    if method not in METHODS:
        raise UsageError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    runs = _selected_runs(store, labels)
    warnings: list[StatWarning] = []
    points, order, repo = order_points(runs, warnings)
    # (host, benchmark, params, metric) -> per point lists of value arrays
    found: dict[tuple[str, str, str, str], tuple[str, list[list[np.ndarray]]]] = {}
    seen_params: set[str] | None = None  # parameters of the benchmark/metric matches
    params_of: dict[str, dict[str, Any]] = {}  # each point's parameters, as the store decoded them
    groups_of = store.value_groups_of_runs([r.id for r in runs], set(filters.benchmarks) or None,
                                           set(filters.metrics) or None)
    for i, point in enumerate(points):
        for run in point.runs:
            for g in groups_of.get(run.id, ()):
                if g.point not in params_of:  # decoded once per point, not per run
                    params_of[g.point] = g.params
                    seen_params = (seen_params or set()) | set(g.params)
                params = params_of[g.point]
                if filters.params and not filters.keeps(params):
                    continue
                if is_pressure_metric(g.metric) and g.metric not in filters.metrics:
                    continue
                key = (run.host, g.benchmark, g.point, g.metric)
                if key not in found:
                    found[key] = (g.unit, [[] for _ in points])
                found[key][1][i].append(g.values)
    _check_filters(filters, seen_params, bool(found), bool(runs))
    infos: dict[str, dict[str, MetricInfo]] = {}
    series = []
    # each point's one host (None: runs of several), so a series keeps most points as they are
    host_of = [p.runs[0].host if all(r.host == p.runs[0].host for r in p.runs) else None for p in points]
    for (host, benchmark, params_key, metric), (unit, per_point) in found.items():
        if benchmark not in infos:
            infos[benchmark] = store.metric_infos(benchmark)
        info = infos[benchmark].get(metric)
        if info is None:
            info = MetricInfo(metric, unit, Direction.LOWER)
            warnings.append(_warning(NO_METRIC_INFO, f"{benchmark} {metric}: no metric metadata; "
                                     "assumed lower is better"))
        # keep only the points where this series was measured, with this host's runs
        kept = [(p if h == host else _on_host(p, host), v[0] if len(v) == 1 else np.concatenate(v))
                for p, h, v in zip(points, host_of, per_point) if v]
        series.append(make_series(host, benchmark, params_of[params_key], params_key, metric, unit, info,
                                  [p for p, _ in kept], [x for _, x in kept], method))
    series.sort(key=lambda s: (s.benchmark, s.params_key, s.metric, s.host))
    return History(tuple(series), order, repo, tuple(warnings))


def _on_host(point: HistoryPoint, host: str) -> HistoryPoint:
    """The point with only ``host``'s runs (itself, unchanged, when they all are)."""
    if all(r.host == host for r in point.runs):
        return point
    return replace(point, runs=tuple(r for r in point.runs if r.host == host))


def _check_filters(filters: Filters, seen_params: set[str] | None, matched: bool, any_runs: bool) -> None:
    """One clear line for an empty selection; ``seen_params`` None: no benchmark/metric matched."""
    if not any_runs:
        raise UsageError("no runs in the database", hint="record some with 'perflab run'")
    if seen_params is None:
        what = []
        if filters.metrics:
            what.append(f"metric {', '.join(sorted(filters.metrics))}")
        if filters.benchmarks:
            what.append(f"benchmark {', '.join(sorted(filters.benchmarks))}")
        raise UsageError(f"no runs with {' and '.join(what) or 'samples'}", hint="'perflab runs' lists them")
    unknown = sorted({k for k, _ in filters.params} - seen_params)
    if unknown:
        known = ", ".join(sorted(seen_params)) if seen_params else "none"
        raise UsageError(f"unknown --filter key {unknown[0]!r}: the parameters are {known} "
                         "(benchmark=NAME selects a benchmark)")
    if not matched:
        raise UsageError("no series match the --filter values", hint="'perflab history' without them lists all")


# --------------------------------------------------------------------------- detection

def _summaries(samples: Sequence[np.ndarray]) -> list[PointSummary]:
    from perflab.stats.summary import group_stats
    found = group_stats(samples)
    defined = np.isfinite(found.sd) & (found.mean != 0)
    cov = np.full(found.sd.shape, math.nan)
    cov[defined] = 100.0 * found.sd[defined] / found.mean[defined]
    return list(map(PointSummary, found.n.tolist(), found.median.tolist(), found.mean.tolist(),
                    found.sd.tolist(), cov.tolist()))


def preload() -> None:
    """Import what detection and change reports import lazily (see stats.changepoints.preload):
    for the dashboard, whose first history page would otherwise pay for it."""
    from perflab.stats import changepoints, summary  # noqa: F401
    changepoints.preload()


def make_series(host: str, benchmark: str, params: dict[str, Any], params_key: str, metric: str, unit: str,
                info: MetricInfo, points: Sequence[HistoryPoint], samples: Sequence[np.ndarray],
                method: str = AUTO_METHOD, spread: bool = False) -> Series:
    """One series with its summaries and change points (see the module's description);
    with ``spread`` (mosum) changes in the noise's spread as well, of kind "spread"."""
    from perflab.stats.changepoints import detect as find_points
    summaries = _summaries(samples)
    centres = np.array([s.median for s in summaries])
    finite = int(np.isfinite(centres).sum())
    chosen = resolve_method(method, finite)
    # one group of samples per point: detection on their medians
    found = _DETECTED.get(samples, chosen + "+spread" * spread, info.noise_floor, lambda: find_points(
        list(samples), method=chosen, min_magnitude=info.noise_floor, centre="median", spread=spread))
    bounds = [0, *(c.index for c in found), len(points)]
    changes = []
    for k, cp in enumerate(found, start=1):
        before = _segment(samples, centres, bounds[k - 1], cp.index)
        after = _segment(samples, centres, cp.index, bounds[k + 1])
        raw = (100.0 * (after.centre - before.centre) / before.centre
               if before.centre != 0 and cp.kind == "mean" else math.nan)  # spread: no level step
        oriented = -raw if info.direction is Direction.LOWER else raw
        previous = next(points[i] for i in range(cp.index - 1, -1, -1) if samples[i].size)
        point = points[cp.index]
        changes.append(Change(
            id=change_id(host, benchmark, params_key, metric, point.key),
            host=host, benchmark=benchmark, params=params, metric=metric, unit=unit,
            direction=info.direction, index=cp.index, point=point, previous=previous,
            before=before, after=after, change_pct=raw, oriented_pct=oriented,
            verdict=directed_verdict(oriented), p_value=cp.p_value,
            detection_p=_welch_p(centres[bounds[k - 1]:cp.index], centres[cp.index:bounds[k + 1]]),
            method=chosen, kind=cp.kind, spread_ratio=cp.magnitude if cp.kind == "spread" else math.nan))
    shown = [abs(s.median) for s in summaries if math.isfinite(s.median) and s.median != 0]
    typical = float(np.median(shown)) if shown else 0.0
    series = Series(host, benchmark, params, params_key, metric, unit, info,
                    tuple(SeriesPoint(p, tuple(x.tolist()), s)
                          for p, x, s in zip(points, samples, summaries)),
                    tuple(changes), chosen, typical)
    return replace(series, tip=tip_change(series, samples))


def tip_change(series: Series, samples: Sequence[np.ndarray] | None = None,
               since: int | None = None) -> Change | None:
    """The tip detector's finding (stats/tip.py) on the newest commits of ``series``, as a
    Change of status "suspect" or "confirmed" and method "tip"; the history it reads starts
    at ``since`` (default: the series' last change). None when it finds nothing, when the
    whole-series detector has the same change, or when its size is below the noise floor."""
    from perflab.stats.tip import look
    centres = np.array(series.medians(), dtype=float)
    if since is None:
        since = series.changes[-1].index if series.changes else 0
    found = look(centres, since=since)
    if found.status not in (SUSPECT, CONFIRMED) or any(c.index == found.start for c in series.changes):
        return None
    c = change_at(series, found.start, since, len(series.points), samples, method=TIP_METHOD, status=found.status)
    if math.isfinite(c.change_pct) and abs(c.change_pct) / 100.0 < series.info.noise_floor:
        return None
    return c


def change_at(series: Series, index: int, first: int, end: int, samples: Sequence[np.ndarray] | None = None, *,
              method: str, status: str = CONFIRMED) -> Change:
    """A Change of ``series`` at point ``index``, between the segments [first, index) and
    [index, end), found by ``method``."""
    if samples is None:
        samples = [np.asarray(p.values, dtype=float) for p in series.points]
    centres = np.array(series.medians(), dtype=float)
    before = _segment(samples, centres, first, index)
    after = _segment(samples, centres, index, end)
    raw = 100.0 * (after.centre - before.centre) / before.centre if before.centre else math.nan
    oriented = -raw if series.info.direction is Direction.LOWER else raw
    points = [p.point for p in series.points]
    previous = next(points[i] for i in range(index - 1, -1, -1) if samples[i].size)
    return Change(
        id=change_id(series.host, series.benchmark, series.params_key, series.metric, points[index].key),
        host=series.host, benchmark=series.benchmark, params=series.params, metric=series.metric,
        unit=series.unit, direction=series.info.direction, index=index, point=points[index],
        previous=previous, before=before, after=after, change_pct=raw, oriented_pct=oriented,
        verdict=directed_verdict(oriented), p_value=math.nan,
        detection_p=_welch_p(centres[first:index], centres[index:end]), method=method, status=status)


def robot_change(series: Series, wanted: str) -> Change | None:
    """The change whose id starts with ``wanted`` among the levels a robot looking at every
    commit confirmed (stats/tip.confirmed_starts, after the series' own changes): an alert the
    tip detector raised on a short history whose whole-series search no longer separates it."""
    from perflab.stats.tip import confirmed_starts
    keys = [change_id(series.host, series.benchmark, series.params_key, series.metric, p.point.key)
            for p in series.points]
    if not any(k.startswith(wanted) for k in keys):
        return None
    bounds = sorted({c.index for c in series.changes} | set(confirmed_starts(series.medians())))
    edges = [0, *bounds, len(series.points)]
    for i, b in enumerate(bounds, start=1):
        if keys[b].startswith(wanted):
            return change_at(series, b, edges[i - 1], edges[i + 1], method=TIP_METHOD)
    return None


class _DetectionCache:
    """Change points already found, keyed by the series' own values (every point's samples,
    with the method and noise floor): a dashboard drawing the same history again skips the
    detector, and a run that lands changes the values, so nothing stale is ever returned.
    Hashing the values costs far less than reading them, which the page needs anyway."""

    def __init__(self, size: int = 64):
        self._size = size
        self._found: OrderedDict[tuple[str, float, bytes], list[Any]] = OrderedDict()
        self._lock = threading.Lock()  # the dashboard serves pages from several threads

    def get(self, samples: Sequence[np.ndarray], method: str, floor: float,
            detect: Callable[[], list[Any]]) -> list[Any]:
        digest = hashlib.sha256(np.array([x.size for x in samples], dtype="<i8").tobytes())
        if samples:
            digest.update(np.concatenate(samples, dtype="<f8").tobytes())
        key = (method, floor, digest.digest())
        with self._lock:
            if key in self._found:
                self._found.move_to_end(key)
                return self._found[key]
        found = detect()
        with self._lock:
            self._found[key] = found
            while len(self._found) > self._size:
                self._found.popitem(last=False)
        return found


_DETECTED = _DetectionCache()


def _welch_p(a: np.ndarray, b: np.ndarray) -> float:
    from perflab.stats import welch_t
    return welch_t(a[np.isfinite(a)], b[np.isfinite(b)]).p_value


def _segment(samples: Sequence[np.ndarray], centres: np.ndarray, first: int, end: int) -> Segment:
    part = samples[first:end]
    x = np.concatenate(part) if part else np.empty(0)
    c = centres[first:end]
    c = c[np.isfinite(c)]
    return Segment(first, end, int(c.size), int(x.size),
                   float(c.mean()) if c.size else math.nan,
                   float(c.std(ddof=1)) if c.size > 1 else math.nan,
                   float(x.mean()) if x.size else math.nan,
                   float(x.std(ddof=1)) if x.size > 1 else math.nan)


def change_id(host: str, benchmark: str, params_key: str, metric: str, point_key: str) -> str:
    text = "\0".join((host, benchmark, params_key, metric, point_key))
    return hashlib.sha1(text.encode()).hexdigest()[:10]


# --------------------------------------------------------------------------- changes

def parse_since(text: str) -> float:
    """An ISO date (or date and time, local time) as a timestamp."""
    try:
        moment = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(f"bad --since {text!r}: expected an ISO date like 2024-01-31") from None
    return moment.timestamp()


def select_changes(history: History, *, since: float | None = None,
                   direction: str | None = None) -> list[Change]:
    """The changes of every series, largest |oriented %| first."""
    if direction is not None and direction not in DIRECTIONS:
        raise UsageError(f"unknown direction {direction!r}; choose from {', '.join(DIRECTIONS)}")
    found = [c for c in (*history.changes(), *history.tips())
             if (since is None or c.point.started_at >= since)
             and (direction is None or c.verdict.value == direction)]
    return sorted(found, key=lambda c: (-abs(c.oriented_pct) if math.isfinite(c.oriented_pct) else 0.0, c.id))


def list_changes(history: History, *, since: float | None = None, direction: str | None = None) -> ChangeList:
    """`perflab changes`: the selected changes, largest first, with their commits' subjects."""
    listed = select_changes(history, since=since, direction=direction)
    subjects = commit_subjects(history.repo, [c.point.commit for c in listed if c.point.commit])
    return ChangeList(tuple(ListedChange(c, subjects.get(c.point.commit or "")) for c in listed),
                      history.warnings)


def find_change(store: Store, change: str, *, labels: Sequence[str] = (),
                method: str = AUTO_METHOD) -> tuple[History, Series, Change]:
    """The change with id ``change``: searched among all runs, then each label's alone."""
    wanted = change.strip().lower()
    if len(wanted) < 4 or any(ch not in "0123456789abcdef" for ch in wanted):
        raise UsageError(f"bad change id {change!r}: ids are hex, as 'perflab changes' lists them")
    tries: list[tuple[str, ...]] = [tuple(labels)]
    if not labels:
        tries += [(label,) for label in sorted({r.label for r in store.list_runs(counted=False, details=False)})]
    for selection in tries:
        try:
            history = build_history(store, labels=selection, method=method)
        except UsageError:
            continue
        for series in history.series:
            for c in (*series.changes, *((series.tip,) if series.tip else ())):
                if c.id.startswith(wanted):
                    return history, series, c
        for series in history.series:
            found = robot_change(series, wanted)
            if found is not None:
                return history, series, found
    raise UsageError(f"no change with id {change!r}", hint="'perflab changes' lists them")


# --------------------------------------------------------------------------- report

def _side(series: Series, segment: Segment, points: int | None, *,
          nearest_last: bool) -> tuple[ReportSide, list[list[RunInfo]]]:
    """The segment's measured points (or the ``points`` nearest the change), as a report side,
    and each pooled point's runs."""
    measured = [p.point for p in series.points[segment.first:segment.end] if p.summary.n]
    pooled = measured if points is None else (measured[-points:] if nearest_last else measured[:points])
    names = tuple(p.short if p.commit else f"run {p.runs[0].id}" for p in pooled)
    return ReportSide(segment, pooled[0], pooled[-1], len(pooled), sum(len(p.runs) for p in pooled),
                      len(pooled) == len(measured), names), [list(p.runs) for p in pooled]


def change_report(store: Store, change: str, *, labels: Sequence[str] = (), method: str = AUTO_METHOD,
                  points: int | None = None, q: float = 0.05) -> ChangeReport:
    """Everything the robot-style report of one change says, every part from the change's two
    segments (``points``: only the N measured points of each nearest the change)."""
    if points is not None and points < 1:
        raise UsageError(f"--points must be at least 1, got {points}")
    history, series, c = find_change(store, change, labels=labels, method=method)
    return report_of_change(store, history, series, c, points=points, q=q)


def report_of_change(store: Store, history: History, series: Series, c: Change, *,
                     points: int | None = None, q: float = 0.05) -> ChangeReport:
    """The report of change ``c`` of ``series`` in ``history`` (found already: the history
    page embeds the report of each of its changes)."""
    before, base = _side(series, c.before, points, nearest_last=True)
    after, new = _side(series, c.after, points, nearest_last=False)
    # a history's runs come without spec and environment: read them for the runs the report
    # describes (the sides' names, the machine, the command to reproduce), not for every run
    full = store.with_details([base[-1][-1], new[0][0], c.point.runs[0]])
    base[-1][-1], new[0][0] = full[base[-1][-1].id], full[new[0][0].id]
    point = replace(c.point, runs=(full[c.point.runs[0].id], *c.point.runs[1:]))
    base_runs, new_runs = [r for runs in base for r in runs], [r for runs in new for r in runs]
    # the change's own test case (its benchmark and point), as the robot's report is: the
    # table, its FDR and its warnings are of the rows it is about; one value per commit,
    # by the detector's estimator, so the table's % is the headline's
    comparison = compare_commit_centres(store, base, new, q=q, filters=Filters.for_point(c.benchmark, c.params))
    recorded = next((r.repo for r in reversed(new_runs) if r.repo), None) or point.runs[0].repo
    repo = history.repo or (recorded if recorded and is_repository(recorded) else None)
    subjects = commit_subjects(repo, [x for x in (c.point.commit, c.previous.commit) if x])
    return ChangeReport(
        change=c, subject=subjects.get(c.point.commit or ""),
        previous_subject=subjects.get(c.previous.commit or ""), repo=repo, recorded_repo=recorded,
        machine=point.runs[0], before=before, after=after, comparison=comparison,
        profile=profile_items(store, base_runs, new_runs, c.benchmark, c.params),
        reproduce=tuple(reproduce_lines(point, repo, recorded)),
        # the history's warnings that concern this stat (not other metrics' missing metadata)
        warnings=tuple(w for w in history.warnings if w.kind != NO_METRIC_INFO
                       or w.message.startswith(f"{c.benchmark} {c.metric}:")),
        alert=alert_of_changes(store, [c.id]).get(c.id))


def profile_items(store: Store, base_runs: list[RunInfo], new_runs: list[RunInfo],
                  benchmark: str, params: dict[str, Any]) -> Any:
    """The changed point's profile rows, before vs after (None when neither side has a profile)."""
    from perflab.analysis.profile import compare_pooled_profiles
    try:
        return compare_pooled_profiles(store, base_runs, new_runs, filters=Filters.for_point(benchmark, params))
    except UsageError:
        return None  # a side without a profile: the report has the metrics only
