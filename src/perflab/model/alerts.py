"""Regression alerts and their triage, as data (Mozilla Perfherder's alert model).

An alert is one detected change of one series (host, benchmark, point, metric), created
once per change id. Alerts of one commit range (last good .. first bad) across metrics,
points and hosts form one summary, as does one change seen on several hosts over ranges
that share a commit (each alert keeps its own range). Triage moves an alert between the states below, only
along ``TRANSITIONS``; every move is an ``AlertEvent``. A summary has no state of its
own: ``summary_state`` derives it from its alerts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perflab.model.params import Params, point_text

UNTRIAGED = "untriaged"
ACKNOWLEDGED = "acknowledged"
FIXED = "fixed"
WONTFIX = "wontfix"
INVALID = "invalid"
IMPROVEMENT = "improvement"
DUPLICATE = "duplicate"

STATES = (UNTRIAGED, ACKNOWLEDGED, FIXED, WONTFIX, INVALID, IMPROVEMENT, DUPLICATE)

#: state -> the states it may move to. Any state but untriaged reopens to untriaged.
TRANSITIONS: dict[str, frozenset[str]] = {
    UNTRIAGED: frozenset({ACKNOWLEDGED, INVALID, IMPROVEMENT, DUPLICATE}),
    ACKNOWLEDGED: frozenset({FIXED, WONTFIX, UNTRIAGED}),
    FIXED: frozenset({UNTRIAGED}),
    WONTFIX: frozenset({UNTRIAGED}),
    INVALID: frozenset({UNTRIAGED}),
    IMPROVEMENT: frozenset({UNTRIAGED}),
    DUPLICATE: frozenset({UNTRIAGED}),
}

#: the triage actions of `perflab alert ID ACTION` and the dashboard -> the state they set
ACTIONS: dict[str, str] = {
    "ack": ACKNOWLEDGED, "fixed": FIXED, "wontfix": WONTFIX, "invalid": INVALID,
    "improvement": IMPROVEMENT, "duplicate-of": DUPLICATE, "reopen": UNTRIAGED,
}

#: A summary's state is the first of these that any of its alerts is in: one untriaged
#: alert keeps the summary untriaged; acknowledged (someone investigates) comes before the
#: closed states; invalid and duplicate alerts count only when every alert is one (a
#: summary of noise is invalid; one of duplicates is a duplicate).
SUMMARY_PRECEDENCE = (UNTRIAGED, ACKNOWLEDGED, WONTFIX, FIXED, IMPROVEMENT, INVALID, DUPLICATE)

# event kinds (AlertEvent.action) besides the triage actions
CREATED = "created"
RECOVERED = "recovered"
CONFIRMED_EVENT = "confirmed"   # a suspect alert's new level held
# the robot's reruns (analysis/alert_reruns.py): asked for, and what they showed; an alert
# whose step did not reproduce is withdrawn: untriaged -> invalid (noise), kept with its events
RERUN_REQUESTED = "rerun requested"
REPRODUCED = "reproduced"
WITHDRAWN = "withdrawn"
NOT_REPRODUCED = "not reproduced"   # the same finding on an alert a person triaged already: no move
RERUN_UNDECIDED = "rerun undecided"
RERUN_VERDICTS = (REPRODUCED, WITHDRAWN, NOT_REPRODUCED, RERUN_UNDECIDED)
# the robot's bisect of an alert's commit range (analysis/alert_bisects.py): queued, and its
# answer (the event's run: the found commit's bisect run; none when bisect named no commit)
BISECT_QUEUED = "bisect queued"
BISECTED = "bisected"

#: An alert's status: the whole-series detector's changes are confirmed; the tip detector's
#: (stats/tip.py) suspect after one or two commits out of line, confirmed once the level holds
SUSPECT, CONFIRMED = "suspect", "confirmed"
#: The method the tip detector's findings carry, and its suspect alerts' stored method (the
#: alert's status is kept in its method, so the alert table needs no new column)
TIP_METHOD = "tip"
TIP_SUSPECT_METHOD = "tip-suspect"
#: The method of an alerted change that no detector places any more (more data moved or
#: dissolved it): its report reads the levels either side of the alerted commit
ALERTED_METHOD = "alerted"


def alert_method(method: str, status: str) -> str:
    """The method an alert stores for a change of ``method`` and ``status``."""
    return TIP_SUSPECT_METHOD if method == TIP_METHOD and status == SUSPECT else method


def detector_of(alert: Alert) -> str:
    """The --method that finds the alert's change again ("auto": the tip detector runs behind it)."""
    return "auto" if alert.method in (TIP_METHOD, TIP_SUSPECT_METHOD) else alert.method
EVIDENCE = "evidence"
ASSIGNED = "assigned"   # the assignee or the bug link was set


def summary_state(states: list[str] | tuple[str, ...]) -> str:
    """The state of a summary whose alerts are in ``states`` (see SUMMARY_PRECEDENCE)."""
    for state in SUMMARY_PRECEDENCE:
        if state in states:
            return state
    return UNTRIAGED  # a summary without alerts: nothing triaged yet


def can_move(state: str, to: str) -> bool:
    return to in TRANSITIONS.get(state, frozenset())


@dataclass(frozen=True)
class Alert:
    id: int
    summary_id: int
    change_id: str             # analysis.history's change id: what makes an alert unique
    host: str
    benchmark: str
    params: Params
    metric: str
    unit: str
    direction: str             # the metric's: "lower" or "higher" is better
    kind: str                  # "regression" or "improvement" (by the metric's direction)
    last_good: str             # point key (a commit sha, or run-<id>) before the change
    first_bad: str             # the first point of the new level
    before: float              # segment centres the detector compared
    after: float
    change_pct: float          # raw % between the centres
    oriented_pct: float        # positive = better
    p_value: float             # Welch t-test of the per-commit medians of the two segments
    method: str
    state: str
    duplicate_of: int | None
    recovered: bool
    recovered_by: str | None   # the later change's id that brought the level back
    created_at: float
    updated_at: float
    assignee: str | None = None    # who looks into it (set on the dashboard)
    bug_url: str | None = None     # the bug that tracks it

    @property
    def point_name(self) -> str:
        return point_text(self.params)

    @property
    def status(self) -> str:
        """SUSPECT or CONFIRMED (see TIP_SUSPECT_METHOD)."""
        return SUSPECT if self.method == TIP_SUSPECT_METHOD else CONFIRMED

    @property
    def series_name(self) -> str:
        point = f" {self.point_name}" if self.params else ""
        return f"{self.benchmark}{point} {self.metric} @{self.host}"


@dataclass(frozen=True)
class AlertEvent:
    """One thing that happened to an alert: created, a triage move, recovered, evidence."""

    id: int
    alert_id: int
    at: float
    who: str
    action: str
    from_state: str | None
    to_state: str | None
    note: str
    run_id: int | None       # evidence: a run attached by 'alert ID rerun'


@dataclass(frozen=True)
class AlertSummary:
    """The alerts of one commit range (Perfherder's alert summary)."""

    id: int
    last_good: str
    first_bad: str
    repo: str | None
    created_at: float
    alerts: tuple[Alert, ...]
    culprit: Culprit | None = None   # the commit the robot's bisect of the range named (list_summaries)

    @property
    def state(self) -> str:
        return summary_state([a.state for a in self.alerts])


def point_commit(key: str) -> str | None:
    """The commit of a history point key (None for a run without one, 'run-<id>')."""
    return None if key.startswith("run-") else key


def short_point(key: str) -> str:
    return key[:12] if point_commit(key) else key.replace("run-", "run ")


@dataclass(frozen=True)
class Culprit:
    """The commit a bisect of an alert's range named: the alert's and its report's headline
    commit instead of the range's first measured bad one."""

    commit: str                # full sha
    subject: str | None        # from the repository, when it is there
    author: str | None
    answer: str                # the bisect's answer, as its event says it
    host: str                  # where it was bisected

    @property
    def short(self) -> str:
        return self.commit[:12]

    @property
    def named(self) -> str:
        """'abc123456789 ("subject", author)', as much as is known."""
        said = ", ".join(x for x in (f'"{self.subject}"' if self.subject else "", self.author or "") if x)
        return f"{self.short} ({said})" if said else self.short


@dataclass(frozen=True)
class AlertDetail:
    """`perflab alert ID`: one alert, its summary's other alerts, its events, its report."""

    alert: Alert
    summary: AlertSummary
    events: tuple[AlertEvent, ...]
    report: Any                      # model.report.history.ChangeReport, or None (see report_missing)
    report_missing: str | None = None  # why there is no report: the change is no longer detected
    culprit: Culprit | None = None     # the commit the robot's bisect named, once it answered
