"""A metric across commits: its series in commit order, the change points, one change's report.

A series is one (host, benchmark, parameter point, metric) followed across runs. Runs
of one commit merge their samples into one point; a run without a commit is a point of
its own. Runs of different machines are never one series.

Order. When the runs carry a repository that still exists, points follow its commit
graph (of every measured commit it knows), whatever order the runs were recorded in: the
first-parent spine, each side branch's commits placed just before the merge that brings
them in, topological otherwise (`vcs.graph_order`). Only points the repository does not
reach (unknown commits, runs without a commit) are placed by the time of their first run.
Without a usable repository every point goes by time, with a warning when a recorded
repository is gone. Each series' changes: `analysis.series`, bounded by each other and the
robot's alerted levels in `analysis.levels` (the one change list every view reads).

A change's id is a short hash of (host, benchmark, point, metric, first point of the new
regime): nothing is stored, `find_change` recomputes the histories and looks for it.
"""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
import math
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any

import numpy as np

from perflab.analysis.alert_bisects import culprit_of
from perflab.analysis.change_table import compare_commit_centres
from perflab.analysis.compare import Filters
from perflab.analysis.levels import with_levels
from perflab.analysis.reproduce import reproduce_lines
from perflab.analysis.series import KeptDetections, make_series, preload, series_key
from perflab.analysis.series import change_id as change_id  # re-exported: analysis/alerts.py
from perflab.analysis.series import robot_change as robot_change  # re-exported: analysis/alerts.py
from perflab.analysis.series import tip_change as tip_change  # re-exported: analysis/alerts.py
from perflab.model.errors import UsageError
from perflab.model.methods import AUTO_METHOD, method_choices
from perflab.model.params import Params
from perflab.model.records import Direction, MetricInfo, RunInfo, RunStatus, is_pressure_metric
from perflab.model.report.history import (
    ORDER_GRAPH,
    ORDER_TIME,
    Change,
    ChangeList,
    ChangeReport,
    History,
    HistoryPoint,
    ListedChange,
    ReportSide,
    Segment,
    Series,
)
from perflab.model.verdicts import StatWarning, Verdict, WarningSide
from perflab.store import Store
from perflab.vcs import commit_subjects, graph_order, is_repository

METHODS = tuple(method_choices(auto=True))
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
    points = [HistoryPoint(key=key, commit=members[0].commit,
                           describe=next((r.commit_describe for r in reversed(members) if r.commit_describe), None),
                           runs=tuple(members), on_line=key in position)
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

def _selected_runs(store: Store, labels: Sequence[str], filters: Filters = Filters(),
                   hosts: AbstractSet[str] = frozenset()) -> list[RunInfo]:
    """The runs a history reads: those of ``labels`` (all when empty) on ``hosts`` (all when
    empty), not running; when the filters name benchmarks or metrics (or ``hosts`` is given),
    only the runs that measured them (store.runs.measuring), unless none did (then every run
    of the hosts, read by host too: the filters' error says why)."""
    chosen = (store.runs.measuring(filters.benchmarks, filters.metrics, hosts)
              if filters.benchmarks or filters.metrics or hosts else [])
    if not chosen and hosts and (filters.benchmarks or filters.metrics):
        chosen = store.runs.measuring(frozenset(), frozenset(), hosts)
    if hosts and not chosen:
        raise UsageError(f"no runs on host {', '.join(sorted(hosts))}", hint="'perflab runs' lists them")
    every = chosen or store.runs.all(counted=False, details=False)
    runs = [r for r in every if r.status is not RunStatus.RUNNING]
    if labels:
        wanted = set(labels)
        runs = [r for r in runs if r.label in wanted]
        if not runs:
            raise UsageError(f"no runs labelled {', '.join(sorted(wanted))}", hint="'perflab runs' lists them")
    return runs


def build_history(store: Store, *, filters: Filters = Filters(), labels: Sequence[str] = (),
                  method: str = AUTO_METHOD, hosts: AbstractSet[str] = frozenset(),
                  keep_detections: bool = False) -> History:
    """Every selected series in history order (``hosts``: only theirs, when given), with its
    one change list (analysis.levels: the detectors' changes and the levels the robot alerted
    on, each side bounded by the next boundary). The change points the store keeps for a
    series' very values are taken, not searched again; with ``keep_detections`` (the robot's
    pass) those found anew are kept for the next reader."""
    if method not in METHODS:
        raise UsageError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    runs = _selected_runs(store, labels, filters, hosts)
    warnings: list[StatWarning] = []
    points, order, repo = order_points(runs, warnings)
    found, params_of, seen_params = _gather(store, points, filters)
    _check_filters(filters, seen_params, bool(found), bool(runs))
    infos: dict[str, dict[str, MetricInfo]] = {}
    series = []
    on_host = _HostPoints(points)
    detections = KeptDetections(store.detections.of(series_key(*key, spread=False) for key in found),
                                writing=keep_detections and not store.read_only)
    # in the order the points first measured them; each series' values let go once it is made
    for key in sorted(found, key=lambda k: found[k].first):
        (host, benchmark, params_key, metric), gathered = key, found.pop(key)
        unit = gathered.unit
        if benchmark not in infos:
            infos[benchmark] = store.metrics.infos(benchmark)
        info = infos[benchmark].get(metric)
        if info is None:
            info = MetricInfo(metric, unit, Direction.LOWER)
            warnings.append(_warning(NO_METRIC_INFO, f"{benchmark} {metric}: no metric metadata; "
                                     "assumed lower is better"))
        # keep only the points where this series was measured, with this host's runs
        kept = [(on_host(i, host), gathered.values_at(i)) for i in sorted(gathered.per_point)]
        series.append(make_series(host, benchmark, params_of[params_key], params_key, metric, unit, info,
                                  [p for p, _ in kept], [x for _, x in kept], method, kept=detections))
    if detections.writing:
        store.detections.keep(detections.found)
    series.sort(key=lambda s: (s.benchmark, s.params_key, s.metric, s.host))
    # the one change list: the detectors' changes and the robot's levels, each bounded by its neighbours
    alerts = store.alerts.of_series({s.host for s in series}, {s.benchmark for s in series}, {s.metric for s in series})
    return with_levels(History(series=tuple(series), order=order, repo=repo, warnings=tuple(warnings),
                               keys=tuple(p.key for p in points)), alerts)


class _Gathered:
    """One series' values as read: per point index, (run's place in the point, read order,
    values), a list only for a point of several runs; ``first`` the earliest (point, run,
    read order) read, ``unit`` its unit."""

    def __init__(self, first: tuple[int, int, int], unit: str):
        self.first, self.unit = first, unit
        self.per_point: dict[int, Any] = {}

    def add(self, at: tuple[int, int, int], unit: str, values: np.ndarray) -> None:
        if at < self.first:
            self.first, self.unit = at, unit
        entry, got = (at[1], at[2], values), self.per_point.get(at[0])
        if got is None:
            self.per_point[at[0]] = entry
        elif isinstance(got, list):
            got.append(entry)
        else:
            self.per_point[at[0]] = [got, entry]

    def values_at(self, i: int) -> np.ndarray:
        """The point's values, its runs' in their order (as the point lists its runs)."""
        found = self.per_point[i]
        if isinstance(found, tuple):
            one: np.ndarray = found[2]
            return one
        return np.concatenate([values for _, _, values in sorted(found, key=lambda x: x[:2])])


def _gather(store: Store, points: list[HistoryPoint], filters: Filters
            ) -> tuple[dict[tuple[str, str, str, str], _Gathered], dict[str, Params], set[str] | None]:
    """(host, benchmark, point, metric) -> its values by point; each point's parameters; the
    parameters seen (None: no benchmark or metric matched). The value groups are read as a
    stream and only their values kept: a whole store's groups are never held at once."""
    place = {run.id: (i, j) for i, point in enumerate(points) for j, run in enumerate(point.runs)}
    found: dict[tuple[str, str, str, str], _Gathered] = {}
    seen_params: set[str] | None = None
    params_of: dict[str, Params] = {}  # each point's parameters, as the store decoded them
    for seq, (run_id, g) in enumerate(store.series.each_value_group(
            list(place), set(filters.benchmarks) or None, set(filters.metrics) or None)):
        if g.point not in params_of:  # decoded once per point, not per run
            params_of[g.point] = g.params
            seen_params = (seen_params or set()) | set(g.params)
        if filters.params and not filters.keeps(params_of[g.point]):
            continue
        if is_pressure_metric(g.metric) and g.metric not in filters.metrics:
            continue
        i, j = place[run_id]
        key = (points[i].runs[j].host, g.benchmark, g.point, g.metric)
        if key not in found:
            found[key] = _Gathered((i, j, seq), g.unit)
        found[key].add((i, j, seq), g.unit, g.values)
    return found, params_of, seen_params


class _HostPoints:
    """Each point with one host's runs only, made once per point (for all its hosts at once:
    a fleet's commit has runs of every host, and every series of a host keeps the same points)."""

    def __init__(self, points: list[HistoryPoint]):
        self.points = points
        self.made: dict[int, dict[str, HistoryPoint]] = {}

    def __call__(self, i: int, host: str) -> HistoryPoint:
        found = self.made.get(i)
        if found is None:
            found = self.made[i] = _by_host(self.points[i])
        return found[host]


def _by_host(point: HistoryPoint) -> dict[str, HistoryPoint]:
    """Host -> the point with only that host's runs (the point itself when it has one host)."""
    runs: dict[str, list[RunInfo]] = {}
    for r in point.runs:
        runs.setdefault(r.host, []).append(r)
    if len(runs) == 1:
        return dict.fromkeys(runs, point)
    return {host: HistoryPoint(key=point.key, commit=point.commit, describe=point.describe, runs=tuple(mine),
                               on_line=point.on_line)
            for host, mine in runs.items()}


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
    return ChangeList(changes=tuple(ListedChange(change=c, subject=subjects.get(c.point.commit or "")) for c in listed),
                      warnings=history.warnings)


def find_change(store: Store, change: str, *, labels: Sequence[str] = (), method: str = AUTO_METHOD,
                filters: Filters = Filters(), hosts: AbstractSet[str] = frozenset()
                ) -> tuple[History, Series, Change]:
    """The change with id ``change``: searched among all runs, then each label's alone; for
    an alert's change that no detector places now, the levels either side of its commit.
    ``filters`` and ``hosts`` narrow the search to the series known to hold it (an alert's):
    the same change, found without reading or detecting every other series."""
    wanted = change.strip().lower()
    if len(wanted) < 4 or any(ch not in "0123456789abcdef" for ch in wanted):
        raise UsageError(f"bad change id {change!r}: ids are hex, as 'perflab changes' lists them")
    alerted: bool | None = None
    def tries() -> Iterator[tuple[str, ...]]:   # each label's alone only when all runs do not hold it
        yield tuple(labels)
        if not labels:
            yield from ((label,) for label in sorted({r.label for r in store.runs.all(counted=False, details=False)}))

    for selection in tries():
        try:
            history = build_history(store, labels=selection, method=method, filters=filters, hosts=hosts)
        except UsageError:
            continue
        for series in history.series:
            for c in (*series.changes, *((series.tip,) if series.tip else ())):
                if c.id.startswith(wanted):
                    return history, series, c
        if alerted is None:   # read once, only when no detector names the change
            alerted = any(a.change_id.startswith(wanted) for a in store.alerts.all())
        for series in history.series:
            found = robot_change(series, wanted, alerted=alerted)
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
    return ReportSide(segment=segment, first=pooled[0], last=pooled[-1], points=len(pooled),
                      runs=sum(len(p.runs) for p in pooled),
                      whole=len(pooled) == len(measured), commits=names), [list(p.runs) for p in pooled]


def change_report(store: Store, change: str, *, labels: Sequence[str] = (), method: str = AUTO_METHOD,
                  points: int | None = None, q: float = 0.05, filters: Filters = Filters(),
                  hosts: AbstractSet[str] = frozenset()) -> ChangeReport:
    """Everything the robot-style report of one change says, every part from the change's two
    segments (``points``: only the N measured points of each nearest the change)."""
    if points is not None and points < 1:
        raise UsageError(f"--points must be at least 1, got {points}")
    history, series, c = find_change(store, change, labels=labels, method=method, filters=filters, hosts=hosts)
    return report_of_change(store, history, series, c, points=points, q=q)


def report_of_change(store: Store, history: History, series: Series, c: Change, *,
                     points: int | None = None, q: float = 0.05) -> ChangeReport:
    """The report of change ``c`` of ``series`` in ``history`` (found already: the history
    page embeds the report of each of its changes)."""
    before, base = _side(series, c.before, points, nearest_last=True)
    after, new = _side(series, c.after, points, nearest_last=False)
    # a history's runs come without spec and environment: read them for the runs the report
    # describes (the sides' names, the machine, the command to reproduce), not for every run
    full = store.runs.with_details([base[-1][-1], new[0][0], c.point.runs[0]])
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
    alert = store.alerts.of_changes([c.id]).get(c.id)
    culprit = culprit_of(store, alert) if alert is not None else None
    return ChangeReport(
        change=c, subject=subjects.get(c.point.commit or ""),
        previous_subject=subjects.get(c.previous.commit or ""), repo=repo, recorded_repo=recorded,
        machine=point.runs[0], before=before, after=after, comparison=comparison,
        profile=profile_items(store, base_runs, new_runs, c.benchmark, c.params),
        reproduce=tuple(reproduce_lines(point, repo, recorded, culprit.commit if culprit else None)),
        # the history's warnings that concern this stat (not other metrics' missing metadata)
        warnings=tuple(w for w in history.warnings if w.kind != NO_METRIC_INFO
                       or w.message.startswith(f"{c.benchmark} {c.metric}:")),
        alert=alert, culprit=culprit)


def profile_items(store: Store, base_runs: list[RunInfo], new_runs: list[RunInfo],
                  benchmark: str, params: Params) -> Any:
    """The changed point's profile rows, before vs after (None when neither side has a profile)."""
    from perflab.analysis.profile import compare_pooled_profiles
    try:
        return compare_pooled_profiles(store, base_runs, new_runs, filters=Filters.for_point(benchmark, params))
    except UsageError:
        return None  # a side without a profile: the report has the metrics only
