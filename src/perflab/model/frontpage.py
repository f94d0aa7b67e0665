"""The dashboard's front page as data: what needs a person, then the fleet, then the runs.

Built by analysis/frontpage.py from the store's alerts, jobs, workers and runs; laid out by
the dashboard's templates. Nothing here is computed from samples but a sparkline's
per-commit medians (``SeriesWindow``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from perflab.model.alerts import Alert, Culprit
from perflab.model.jobs import WorkerInfo
from perflab.model.records import RunInfo


@dataclass(frozen=True)
class SeriesWindow:
    """One series' per-commit medians around an alert's first bad commit, oldest first
    (points in the order their first run was recorded: a sparkline, not the commit graph)."""

    keys: tuple[str, ...]          # history point keys: a commit, or run-<id>
    medians: tuple[float, ...]
    marked: int | None             # the position of the alert's first bad commit, if shown
    last_good: int | None = None   # the position of its last good commit, if shown


@dataclass(frozen=True)
class AlertGroup:
    """The alerts of one commit range (one summary) that need the same look."""

    summary_id: int
    last_good: str
    first_bad: str
    repo: str | None
    alerts: tuple[Alert, ...]       # largest |change| first (the first one's sparkline is shown)
    awaiting_rerun: bool = False    # a rerun was asked for and has no verdict yet
    culprit: Culprit | None = None  # the commit the robot's bisect of the range named, once it answered

    @property
    def commit(self) -> str:
        """The commit the range is told by: the bisected one, else its first bad commit."""
        return self.culprit.commit if self.culprit is not None else self.first_bad

    def with_rerun(self) -> AlertGroup:
        return replace(self, awaiting_rerun=True)

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(sorted({a.host for a in self.alerts}))

    @property
    def created_at(self) -> float:
        return min(a.created_at for a in self.alerts)


@dataclass(frozen=True)
class FleetHealth:
    """The workers and the queue as the store's job book has them."""

    workers: tuple[WorkerInfo, ...]
    stale_after: float              # a worker silent for this many heartbeat intervals is dead
    queued: int
    running: int
    oldest_queued_at: float | None
    failed_last_day: int


@dataclass(frozen=True)
class FrontPage:
    now: float
    untriaged: tuple[AlertGroup, ...]    # confirmed, untriaged, not awaiting a rerun: triage these
    suspects: tuple[AlertGroup, ...]     # untriaged and suspect or awaiting their rerun
    recent: tuple[Alert, ...]            # confirmed changes of the last days, either direction
    fleet: FleetHealth
    runs: tuple[RunInfo, ...]            # the newest runs
    untriaged_ranges: int = 0            # commit ranges with an untriaged alert (some may not be shown)


@dataclass(frozen=True)
class Level:
    """A level of a series to draw: its value over the window's points ``first``..``last``
    (positions, inclusive)."""

    name: str          # "before" or "after"
    value: float
    first: int
    last: int
