"""A metric across commits: its series in commit order, the change points, one change's report.

A series is one (host, benchmark, parameter point, metric) followed across runs. Runs
of one commit merge their samples into one point; a run without a commit is a point of
its own. Runs of different machines are never one series.

Order. When the runs carry a repository that still exists, points follow git's
first-parent line (``git rev-list --first-parent``) of the newest run's commit,
extended to a measured descendant when one exists, so a commit measured late still
lands in its place. Points off that line (side branches, unknown commits, runs
without a commit) are placed by the time of their first run. Without a usable
repository every point goes by time, with a warning when a recorded repository is gone.

Detection runs on one value per point, the median of its samples (Otava works on one
value per commit; the median, so that one wild sample of a commit, a timer wake-up 50 ms
late, neither hides nor fakes a change; missing points and failed runs are NaN gaps the
detectors skip), by
E-divisive with t-tests by default, PELT for long series (``AUTO_PELT_ABOVE`` points), binseg
or when asked. Changes smaller than the metric's noise floor are dropped. Each change's
mean ± sd before/after and its p-value (Welch) come from the raw samples of the two
neighbouring segments; the detector's own p-value on the per-point medians is kept beside
it. Samples of one commit share a build, so the raw-sample p-value is the optimistic one.

A change's id is a short hash of (host, benchmark, point, metric, first point of the new
regime): nothing is stored, `find_change` recomputes the histories and looks for it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from perflab.analysis.compare import Comparison, Filters, compare_pooled
from perflab.execute.identity import git_output
from perflab.model.errors import UsageError
from perflab.model.params import point_text
from perflab.model.records import Direction, MetricInfo, RunInfo, RunStatus
from perflab.store import Store

METHODS = ("auto", "e-divisive", "pelt", "binseg")  # auto, then stats.changepoints.METHODS
AUTO_PELT_ABOVE = 1000  # points; E-divisive's windows make it slower and no better past this
ORDER_FIRST_PARENT = "first-parent"
ORDER_TIME = "time"
DIRECTIONS = ("regression", "improvement")
_MAX_LINE_TRIES = 8  # git rev-list calls spent looking for a longer first-parent line


# --------------------------------------------------------------------------- model

@dataclass(frozen=True)
class HistoryPoint:
    """One commit (all of its runs), or one run without a commit."""

    key: str                    # the commit as recorded (full sha), or "run-<id>"
    commit: str | None
    describe: str | None
    runs: tuple[RunInfo, ...]   # oldest first
    on_line: bool               # placed by the first-parent line (False: by time)

    @property
    def started_at(self) -> float:
        return self.runs[0].started_at

    @property
    def short(self) -> str:
        return self.commit[:12] if self.commit else f"run {self.runs[0].id}"


@dataclass(frozen=True)
class Segment:
    """The raw samples of the points between two change points."""

    n: int
    points: int
    mean: float
    stddev: float     # sample stddev (n-1); NaN for fewer than 2 samples


@dataclass(frozen=True)
class Change:
    id: str
    host: str
    benchmark: str
    params: dict[str, Any]
    metric: str
    unit: str
    direction: Direction
    index: int                  # first point of the new regime, in the series' points
    point: HistoryPoint         # that point
    previous: HistoryPoint      # the last point with samples before it
    before: Segment
    after: Segment
    change_pct: float           # 100·(after − before)/before, raw
    oriented_pct: float         # positive = better
    p_value: float              # Welch's t-test between the raw samples of the two segments
    detection_p: float          # the detector's p-value on per-point medians
    method: str

    @property
    def kind(self) -> str:
        return "improvement" if self.oriented_pct > 0 else "regression"

    @property
    def point_name(self) -> str:
        return point_text(self.params)

    @property
    def stat(self) -> str:
        return f"{self.benchmark}.{self.metric}"


@dataclass
class Series:
    host: str
    benchmark: str
    params: dict[str, Any]
    params_key: str
    metric: str
    unit: str
    info: MetricInfo
    points: list[HistoryPoint]
    samples: list[np.ndarray]   # per point: every ok value of its runs (empty: a gap)
    changes: list[Change] = field(default_factory=list)
    method: str = ""

    @property
    def point_name(self) -> str:
        return point_text(self.params)

    def means(self) -> np.ndarray:
        return np.array([x.mean() if x.size else math.nan for x in self.samples])


@dataclass
class History:
    series: list[Series]
    order: str                  # ORDER_FIRST_PARENT or ORDER_TIME
    repo: str | None            # the repository whose first-parent line ordered the points
    warnings: list[str] = field(default_factory=list)

    def changes(self) -> list[Change]:
        return [c for s in self.series for c in s.changes]


# --------------------------------------------------------------------------- git

def _first_parent(repo: str, sha: str) -> list[str] | None:
    out = git_output(repo, "rev-list", "--first-parent", "--reverse", sha, "--")
    return out.split() if out else None


def commit_subjects(repo: str | None, shas: Iterable[str]) -> dict[str, str]:
    """sha -> subject line, for the commits ``repo`` knows (one git call); {} without it."""
    wanted = sorted(set(shas))
    if not repo or not wanted or not Path(repo).is_dir():
        return {}
    out = git_output(repo, "log", "--no-walk=unsorted", "--format=%H %s", *wanted, "--")
    if out is None:  # one unknown commit fails the batch: ask one by one
        found = {}
        for sha in wanted:
            line = git_output(repo, "log", "-1", "--format=%H %s", sha, "--")
            if line:
                full, _, subject = line.strip().partition(" ")
                found[sha] = subject
        return found
    subjects = {}
    for line in out.splitlines():
        full, _, subject = line.partition(" ")
        for sha in wanted:
            if full.startswith(sha):
                subjects[sha] = subject
    return subjects


# --------------------------------------------------------------------------- order

def _line(runs: list[RunInfo], warnings: list[str]) -> tuple[str | None, dict[str, int]]:
    """(repo, commit -> position on its first-parent line); (None, {}) for time order."""
    newest_first = sorted((r for r in runs if r.commit and r.repo), key=lambda r: -r.started_at)
    if not newest_first:
        return None, {}
    repo = newest_first[0].repo
    assert repo is not None
    if not Path(repo).is_dir() or git_output(repo, "rev-parse", "--git-dir") is None:
        warnings.append(f"repository {repo} is gone or not a git repository: "
                        "commits ordered by the time of their runs")
        return None, {}
    candidates = list(dict.fromkeys(r.commit for r in newest_first if r.commit))
    line: list[str] | None = None
    known: set[str] = set()
    tip, calls = None, 0
    for sha in candidates:  # newest first: the newest run's line, extended by descendants
        if sha in known:
            continue
        if calls >= _MAX_LINE_TRIES:
            break
        calls += 1
        found = _first_parent(repo, sha)
        if found is None:
            continue
        if line is None or tip in set(found):
            line, tip, known = found, sha, set(found)
    if line is None:
        warnings.append(f"repository {repo} knows none of the measured commits: "
                        "commits ordered by the time of their runs")
        return None, {}
    return repo, {sha: i for i, sha in enumerate(line)}


def order_points(runs: Sequence[RunInfo], warnings: list[str]) -> tuple[list[HistoryPoint], str, str | None]:
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
    after: dict[int, list[HistoryPoint]] = {}
    for p in off:
        slot = max((i for i, q in enumerate(on) if q.started_at <= p.started_at), default=-1)
        after.setdefault(slot, []).append(p)
    ordered = list(after.get(-1, []))
    for i, p in enumerate(on):
        ordered += [p, *after.get(i, [])]
    return ordered, (ORDER_FIRST_PARENT if repo else ORDER_TIME), repo


# --------------------------------------------------------------------------- series

def _selected_runs(store: Store, labels: Sequence[str]) -> list[RunInfo]:
    runs = [r for r in store.list_runs() if r.status is not RunStatus.RUNNING]
    if labels:
        wanted = set(labels)
        runs = [r for r in runs if r.label in wanted]
        if not runs:
            raise UsageError(f"no runs labelled {', '.join(sorted(wanted))}", hint="'perflab runs' lists them")
    return runs


def build_history(store: Store, *, filters: Filters = Filters(), labels: Sequence[str] = (),
                  method: str = "auto") -> History:
    """Every selected series in history order, with its change points."""
    if method not in METHODS:
        raise UsageError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    runs = _selected_runs(store, labels)
    warnings: list[str] = []
    points, order, repo = order_points(runs, warnings)
    index_of = {p.key: i for i, p in enumerate(points)}
    # (host, benchmark, params, metric) -> per point lists of value arrays
    found: dict[tuple[str, str, str, str], tuple[str, list[list[np.ndarray]]]] = {}
    seen_params: set[str] | None = None  # parameters of the benchmark/metric matches
    for point in points:
        i = index_of[point.key]
        for run in point.runs:
            for g in store.value_groups(run.id, set(filters.benchmarks) or None, set(filters.metrics) or None):
                params = json.loads(g.params)
                seen_params = (seen_params or set()) | set(params)
                if filters.params and not filters.keeps(params):
                    continue
                key = (run.host, g.benchmark, g.params, g.metric)
                if key not in found:
                    found[key] = (g.unit, [[] for _ in points])
                found[key][1][i].append(g.values)
    _check_filters(filters, seen_params, bool(found), bool(runs))
    infos: dict[str, dict[str, MetricInfo]] = {}
    series = []
    for (host, benchmark, params_key, metric), (unit, per_point) in found.items():
        if benchmark not in infos:
            infos[benchmark] = store.metric_infos(benchmark)
        info = infos[benchmark].get(metric)
        if info is None:
            info = MetricInfo(metric, unit, Direction.LOWER)
            warnings.append(f"{benchmark} {metric}: no metric metadata; assumed lower is better")
        # keep only the points where this series was measured, with this host's runs
        kept = [(replace(p, runs=tuple(r for r in p.runs if r.host == host)), np.concatenate(v))
                for p, v in zip(points, per_point) if v]
        s = Series(host, benchmark, json.loads(params_key), params_key, metric, unit, info,
                   [p for p, _ in kept], [x for _, x in kept])
        detect(s, method)
        series.append(s)
    series.sort(key=lambda s: (s.benchmark, s.params_key, s.metric, s.host))
    return History(series, order, repo, warnings)


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


def detect(series: Series, method: str = "auto") -> None:
    """Set ``series.changes`` from its per-point samples (see the module's description)."""
    from perflab.stats import oriented, welch_t
    from perflab.stats.changepoints import detect as find_points
    from perflab.stats.changepoints import group_centres
    centres = group_centres(series.samples, "median")
    finite = int(np.isfinite(centres).sum())
    chosen = method if method != "auto" else ("pelt" if finite > AUTO_PELT_ABOVE else "e-divisive")
    series.method = chosen
    # one group of samples per point: detection on their medians, statistics on the samples
    found = find_points(series.samples, method=chosen, min_magnitude=series.info.noise_floor,
                        centre="median")
    bounds = [0, *(c.index for c in found), len(series.points)]
    changes = []
    for k, cp in enumerate(found, start=1):
        before = _segment(series.samples[bounds[k - 1]:cp.index])
        after = _segment(series.samples[cp.index:bounds[k + 1]])
        raw = 100.0 * (after.mean - before.mean) / before.mean if before.mean != 0 else math.nan
        previous = next(series.points[i] for i in range(cp.index - 1, -1, -1) if series.samples[i].size)
        point = series.points[cp.index]
        changes.append(Change(
            id=change_id(series.host, series.benchmark, series.params_key, series.metric, point.key),
            host=series.host, benchmark=series.benchmark, params=series.params, metric=series.metric,
            unit=series.unit, direction=series.info.direction, index=cp.index, point=point,
            previous=previous, before=before, after=after, change_pct=raw,
            oriented_pct=oriented(raw, series.info.direction), p_value=cp.p_value,
            detection_p=welch_t(_finite(centres[bounds[k - 1]:cp.index]),
                                _finite(centres[cp.index:bounds[k + 1]])).p_value,
            method=chosen))
    series.changes = changes


def _finite(x: np.ndarray) -> np.ndarray:
    return x[np.isfinite(x)]


def _segment(samples: Sequence[np.ndarray]) -> Segment:
    x = np.concatenate(samples) if samples else np.empty(0)
    return Segment(int(x.size), sum(1 for s in samples if s.size),
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
    found = [c for c in history.changes()
             if (since is None or c.point.started_at >= since)
             and (direction is None or c.kind == direction)]
    return sorted(found, key=lambda c: (-abs(c.oriented_pct) if math.isfinite(c.oriented_pct) else 0.0, c.id))


def find_change(store: Store, change: str, *, labels: Sequence[str] = (),
                method: str = "auto") -> tuple[History, Series, Change]:
    """The change with id ``change``: searched among all runs, then each label's alone."""
    wanted = change.strip().lower()
    if len(wanted) < 4 or any(ch not in "0123456789abcdef" for ch in wanted):
        raise UsageError(f"bad change id {change!r}: ids are hex, as 'perflab changes' lists them")
    tries: list[tuple[str, ...]] = [tuple(labels)]
    if not labels:
        tries += [(label,) for label in sorted({r.label for r in store.list_runs()})]
    for selection in tries:
        try:
            history = build_history(store, labels=selection, method=method)
        except UsageError:
            continue
        for series in history.series:
            for c in series.changes:
                if c.id.startswith(wanted):
                    return history, series, c
    raise UsageError(f"no change with id {change!r}", hint="'perflab changes' lists them")


# --------------------------------------------------------------------------- report

@dataclass
class ChangeReport:
    change: Change
    series: Series
    subject: str | None           # the commit's subject line, from its repository
    previous_subject: str | None
    repo: str | None
    base_runs: list[RunInfo]      # the run(s) of the last point(s) before the change
    new_runs: list[RunInfo]       # the run(s) at the change commit (and after)
    comparison: Comparison        # base vs new, every stat of these runs
    profile: Any                  # analysis.profile.ProfileComparison of the point, or None
    reproduce: list[str]          # shell lines
    warnings: list[str] = field(default_factory=list)


def change_report(store: Store, change: str, *, labels: Sequence[str] = (), method: str = "auto",
                  points: int = 3, q: float = 0.05) -> ChangeReport:
    """Everything the robot-style report of one change says."""
    if points < 1:
        raise UsageError(f"--points must be at least 1, got {points}")
    history, series, c = find_change(store, change, labels=labels, method=method)
    # the comparison pools up to `points` measured points on each side, inside the segments
    cuts = [0, *(x.index for x in series.changes), len(series.points)]
    k = cuts.index(c.index)
    measured = [i for i, x in enumerate(series.samples) if x.size]
    before = [i for i in measured if cuts[k - 1] <= i < c.index][-points:]
    after = [i for i in measured if c.index <= i < cuts[k + 1]][:points]
    base_runs = [r for i in before for r in series.points[i].runs]
    new_runs = [r for i in after for r in series.points[i].runs]
    comparison = compare_pooled(store, base_runs, new_runs, q=q)
    repo = history.repo or next((r.repo for r in reversed(new_runs) if r.repo), None)
    subjects = commit_subjects(repo, [x for x in (c.point.commit, c.previous.commit) if x])
    return ChangeReport(
        change=c, series=series, subject=subjects.get(c.point.commit or ""),
        previous_subject=subjects.get(c.previous.commit or ""), repo=repo,
        base_runs=base_runs, new_runs=new_runs, comparison=comparison,
        profile=profile_items(store, base_runs, new_runs, c.benchmark, c.params),
        reproduce=reproduce_lines(c.point, repo), warnings=list(history.warnings))


def profile_items(store: Store, base_runs: list[RunInfo], new_runs: list[RunInfo],
                  benchmark: str, params: dict[str, Any]) -> Any:
    """The changed point's profile rows, before vs after (None when neither side has a profile)."""
    from perflab.analysis.profile import compare_pooled_profiles
    try:
        return compare_pooled_profiles(store, base_runs, new_runs, filters=Filters.for_point(benchmark, params))
    except UsageError:
        return None  # a side without a profile: the report has the metrics only


def reproduce_lines(point: HistoryPoint, repo: str | None) -> list[str]:
    """Shell lines that measure the change's commit again, as its first run was made."""
    import shlex
    run = point.runs[0]
    argv = list(run.spec.get("command_line") or [])
    lines = []
    where = repo or run.repo
    if point.commit and where and Path(where).is_dir():
        lines += [f"cd {shlex.quote(where)}", f"git checkout {point.commit}"]
    elif point.commit:
        lines += [f"# in a clone of the repository ({where or 'not recorded'} is gone)",
                  f"git checkout {point.commit}"]
    if not argv:
        lines.append(f"# run {run.id} did not keep its command line; 'perflab show {run.id}' has its plan")
        return lines
    lines.append(shlex.join(_with_commit(argv, point.commit)))
    return lines


def _with_commit(argv: list[str], commit: str | None) -> list[str]:
    """The perflab argv with ``--commit`` set to ``commit`` (any old --commit replaced)."""
    out, skip = [], False
    stop = argv.index("--") if "--" in argv else len(argv)
    for i, word in enumerate(argv):
        if skip:
            skip = False
            continue
        if i < stop and word == "--commit":
            skip = True
            continue
        if i < stop and word.startswith("--commit="):
            continue
        out.append(word)
    if commit and "run" in out:
        at = out.index("run") + 1
        out[at:at] = ["--commit", commit]
    return out
