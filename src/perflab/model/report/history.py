"""History, changes and change points as values: what `perflab history`, `changes`,
`report change` and `changepoints` print, every number computed by analysis.

A change is described by the estimator that found it. Detection runs on one value per
commit, the median of its samples; a segment's ``centre`` is the mean of those medians
(the level the detectors compare and the noise floor is applied to), and a change's % and
verdict come from the two centres. The raw samples' mean ±sd and Welch p-value are kept
beside it, named as such.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from perflab.model.alerts import ALERTED_METHOD as ALERTED_METHOD  # an alerted commit no detector places now
from perflab.model.alerts import CONFIRMED as CONFIRMED  # Change.status, re-exported
from perflab.model.alerts import SUSPECT as SUSPECT
from perflab.model.alerts import TIP_METHOD as TIP_METHOD  # the tip detector's findings' method
from perflab.model.alerts import Alert, Culprit
from perflab.model.methods import Shown
from perflab.model.params import Params, point_text
from perflab.model.records import Direction, MetricInfo, RunInfo
from perflab.model.verdicts import StatWarning, Verdict

ORDER_GRAPH = "commit-graph"   # first-parent spine, merged branches at their merge, topological
ORDER_TIME = "time"


@dataclass(frozen=True, kw_only=True)
class HistoryPoint:
    """One commit (all of its runs), or one run without a commit."""

    key: str                    # the commit as recorded (full sha), or "run-<id>"
    commit: str | None
    describe: str | None
    runs: tuple[RunInfo, ...]   # oldest first
    on_line: bool               # placed by the commit graph (False: the repository does not reach it, by time)

    @property
    def started_at(self) -> float:
        return self.runs[0].started_at

    @property
    def short(self) -> str:
        return self.commit[:12] if self.commit else f"run {self.runs[0].id}"


@dataclass(frozen=True, kw_only=True, slots=True)   # slots: a fleet's history holds millions (docs/fleet.md)
class PointSummary:
    """The ok samples of one point of a series (n = 0: a gap)."""

    n: int
    median: float     # what detection runs on
    mean: float
    stddev: float     # sample sd (n-1); NaN below 2 samples
    cov_pct: float    # 100·sd/mean; NaN when undefined


@dataclass(frozen=True, kw_only=True, slots=True)
class SeriesPoint:
    point: HistoryPoint
    values: tuple[float, ...]
    summary: PointSummary


@dataclass(frozen=True, kw_only=True)
class Segment:
    """The points between two change points: series positions [first, end)."""

    first: int
    end: int
    points: int        # positions with samples
    n: int             # samples
    centre: float      # mean of the per-point medians: the level detection compares
    centre_sd: float   # sd of the per-point medians (n-1); NaN below 2 points
    mean: float        # of the raw samples
    stddev: float      # of the raw samples (n-1); NaN below 2 samples


@dataclass(frozen=True, kw_only=True)
class ChangePart:
    """One commit of a change spread over several: its share of the whole change (its step
    from the commit before; the last part is the first commit at the new level)."""

    index: int                  # in the series' points
    point: HistoryPoint
    share: float                # of the whole change: the parts sum to 1


@dataclass(frozen=True, kw_only=True)
class Change:
    id: str
    host: str
    benchmark: str
    params: Params
    metric: str
    unit: str
    direction: Direction
    index: int                  # first point of the new regime, in the series' points
    point: HistoryPoint         # that point
    previous: HistoryPoint      # the last point with samples before it
    before: Segment
    after: Segment
    change_pct: float           # 100·(after.centre − before.centre)/before.centre, raw
    oriented_pct: float         # the same, positive = better
    verdict: Verdict            # by oriented_pct: IMPROVEMENT / REGRESSION (UNDECIDED: % undefined)
    p_value: float              # the detector's: for commit series stats/commit_series.commit_p
    detection_p: float          # Welch's t-test between the per-point medians of the two segments
    method: str
    #: "mean": a step in the level; "spread": the noise's spread changed by spread_ratio
    #: (after/before) and the level did not step: change_pct and oriented_pct are NaN,
    #: the verdict UNDECIDED (wider noise is neither better nor worse by itself)
    kind: str = "mean"
    spread_ratio: float = math.nan
    #: CONFIRMED for the whole-series detector's changes; the tip detector's (method
    #: TIP_METHOD) are SUSPECT (one or two commits out of line) or CONFIRMED (the level held)
    status: str = CONFIRMED
    #: a change spread over several commits (stats/commit_series.py): each one's share, in
    #: order, from ``point`` (the first) to the first commit at the new level; () for one step
    parts: tuple[ChangePart, ...] = ()

    @property
    def point_name(self) -> str:
        return point_text(self.params)

    @property
    def commit_range(self) -> tuple[str, str]:
        """(last good, first bad] of the change, by point key: the commits that may carry it.
        A spread change's range runs to its first commit at the new level, so the commits
        of its parts (the culprits a bisect looks for) all lie in it."""
        return self.previous.key, (self.parts[-1].point if self.parts else self.point).key

    @property
    def suspect(self) -> bool:
        return self.status == SUSPECT

    @property
    def stat(self) -> str:
        return f"{self.benchmark}.{self.metric}"


@dataclass(frozen=True, kw_only=True)
class Series:
    host: str
    benchmark: str
    params: Params
    params_key: str
    metric: str
    unit: str
    info: MetricInfo
    points: tuple[SeriesPoint, ...]
    changes: tuple[Change, ...]
    method: str
    typical: float     # median |per-point median|: the magnitude units are scaled for
    #: the tip detector's finding on the newest commits after the last change, when it has one
    tip: Change | None = None

    @property
    def point_name(self) -> str:
        return point_text(self.params)

    def medians(self) -> tuple[float, ...]:
        return tuple(p.summary.median for p in self.points)


@dataclass(frozen=True, kw_only=True)
class History:
    series: tuple[Series, ...]
    order: str                  # ORDER_GRAPH or ORDER_TIME
    repo: str | None            # the repository whose commit graph ordered the points
    warnings: tuple[StatWarning, ...] = ()
    keys: tuple[str, ...] = ()  # every point's key (HistoryPoint.key), in history order, across series

    def changes(self) -> tuple[Change, ...]:
        return tuple(c for s in self.series for c in s.changes)

    def tips(self) -> tuple[Change, ...]:
        """The tip detector's findings (suspect or confirmed), one per series at most."""
        return tuple(s.tip for s in self.series if s.tip is not None)


@dataclass(frozen=True, kw_only=True)
class ListedChange:
    """One line of `perflab changes`: a change and its commit's subject."""

    change: Change
    subject: str | None
    alert: Alert | None = None      # the change's alert, when one was raised (analysis.alerts)


@dataclass(frozen=True, kw_only=True)
class ChangeList:
    changes: tuple[ListedChange, ...]       # largest |oriented %| first
    warnings: tuple[StatWarning, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ReportSide:
    """One side of `report change`'s detailed comparison: points of one segment."""

    segment: Segment            # the whole segment, as `history` shows it
    first: HistoryPoint         # the first and last pooled point
    last: HistoryPoint
    points: int                 # pooled points (all of the segment's measured ones unless --points)
    runs: int
    whole: bool                 # every measured point of the segment is pooled
    commits: tuple[str, ...] = ()  # every pooled point, as short commits (or run ids), in order


#: how `report change`'s table is computed (analysis.change_table), as the report states it
CHANGE_TABLE_ESTIMATOR = ("per commit the median of its samples, per side the mean of those (the centres "
                          "above), the test Welch's t on their logs (the commit is the unit)")


@dataclass(frozen=True, kw_only=True)
class ChangeReport:
    """Everything the robot-style report of one change says.

    ``comparison`` and ``profile`` are analysis.compare's comparison and
    analysis.profile's deltas of the two sides, passed through to the lkp renderer.
    """

    change: Change
    subject: str | None           # the commit's subject line, from its repository
    previous_subject: str | None
    repo: str | None              # the repository the commits are in, when it is there
    recorded_repo: str | None     # the repository the runs recorded (may be gone)
    machine: RunInfo              # the first run at the change commit: its machine is described
    before: ReportSide
    after: ReportSide
    comparison: Any
    profile: Any
    reproduce: tuple[str, ...]    # shell lines
    warnings: tuple[StatWarning, ...] = ()
    alert: Alert | None = None    # the change's alert, when one was raised
    culprit: Culprit | None = None  # the commit the robot's bisect of the alert's range named


# --------------------------------------------------------------------------- changepoints FILE

@dataclass(frozen=True, kw_only=True)
class FileChangePoint:
    """One change point of a column of a series file."""

    index: int
    label: str | None
    mean_before: float
    stddev_before: float
    mean_after: float
    stddev_after: float
    change_pct: float                  # raw
    oriented_pct: float | None         # with a direction: positive = better
    verdict: Verdict | None            # with a direction
    p_value: float
    kind: str = "mean"                 # or "spread" (as Change.kind: no % step, spread_ratio)
    spread_ratio: float = math.nan
    #: CONFIRMED, or for the tip detector's finding on the newest commits (method TIP_METHOD)
    #: SUSPECT or CONFIRMED, as Change.status
    status: str = CONFIRMED
    method: str = ""
    #: a change spread over several commits: (index, label, share of the whole), as Change.parts
    parts: tuple[tuple[int, str | None, float], ...] = ()


@dataclass(frozen=True, kw_only=True)
class ColumnChanges:
    column: str
    points: int                        # positions in the series (commits, rows)
    has_labels: bool
    change_points: tuple[FileChangePoint, ...]
    commits: bool = False              # read as a commit series (stats/commit_series.py)


@dataclass(frozen=True, kw_only=True)
class FileChanges:
    source: str
    method: str
    parameters: Shown
    direction: Direction | None
    columns: tuple[ColumnChanges, ...]


def directed_verdict(oriented_pct: float) -> Verdict:
    """A detected change is significant by construction: its sign decides; no sign, undecided."""
    if not math.isfinite(oriented_pct) or oriented_pct == 0:
        return Verdict.UNDECIDED
    return Verdict.IMPROVEMENT if oriented_pct > 0 else Verdict.REGRESSION


