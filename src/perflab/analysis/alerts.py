"""Regression alerts from change points, and their triage (Perfherder's model, model/alerts.py).

``update_alerts`` runs change detection over the store's series (analysis.history) and
creates one alert per change not alerted yet. An alert is keyed by the change's id, a
hash of (host, benchmark, point, metric, first commit of the new level): appending
commits after a change keeps its id as long as the detector places the change at the
same commit (tests/test_alerts.py checks it); a detector that moves a change to a
neighbouring commit as data arrives makes a new id, so a new alert.

Behind the whole-series detector, the tip detector (stats/tip.py, ``Series.tip``) reads the
newest commits after the last change, known to the series or alerted already: its
finding is raised as an alert of method "tip", its status (``Alert.status``) "suspect"
after one or two commits out of line and "confirmed" once the new level holds; a suspect
alert is confirmed in place when the level holds, and marked recovered ("did not hold")
when the tip detector, MAX_TIP commits later, no longer sees it.

Its commit range is last good (the last measured point before the change) .. first bad
(the change's point); alerts of one range, across metrics, points and hosts, share one
summary, and so does the same change on another host placed over a range that shares a
commit with it (analysis/alert_hosts.py, which also carries a way back seen on one host to
the others). Each alert's figures (levels, %, p) are its change's in the one change list
(analysis/levels.py), refreshed at every update.
An alert is ``recovered`` when a later change point of its series brings the
level back nearer the old level than the alerted one (the later change undoes more than
half of the step; levels are the segments' centres, compared by their ratios when all are
positive, as times and rates are, else by their differences). The later change is itself a
detected change, so significant by the detector's test; the rule then only decides which
of the two known levels the series went back to. A stricter "back within the old
level's 95% interval" was tried: on a loaded machine a level drifts by a few percent
within minutes, and a step of 4x that plainly came back was not flagged.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace

from perflab.analysis.alert_bisects import culprit_of
from perflab.analysis.alert_hosts import alerted_already, peer_summary, positions, way_back_elsewhere
from perflab.analysis.alert_reruns import judge_reruns, request_reruns
from perflab.analysis.compare import Filters
from perflab.analysis.history import build_history, change_id, change_report, parse_since, robot_change, tip_change
from perflab.analysis.levels import nearer as _nearer
from perflab.analysis.levels import with_levels
from perflab.model.alerts import (
    ACTIONS,
    DUPLICATE,
    INVALID,
    STATES,
    TRANSITIONS,
    UNTRIAGED,
    Alert,
    AlertDetail,
    AlertSummary,
    alert_method,
    can_move,
    detector_of,
)
from perflab.model.errors import UsageError
from perflab.model.methods import AUTO_METHOD
from perflab.model.report.history import ALERTED_METHOD, CONFIRMED, SUSPECT, Change, ChangeList, History, Series
from perflab.model.verdicts import SIGN, Verdict
from perflab.store import Store

ROBOT = "perflab"   # who creates alerts and marks them recovered

__all__ = ["ROBOT", "alert_detail", "assign", "attach_evidence", "list_alerts", "mark_alerts", "with_alerted",
           "triage", "update_alerts", "who_default"]


def who_default() -> str:
    """Who triages: $USER (or $LOGNAME), else the uid."""
    return os.environ.get("USER") or os.environ.get("LOGNAME") or f"uid {os.getuid()}"


# --------------------------------------------------------------------------- creating

def update_alerts(store: Store, *, labels: Sequence[str] = (), since: float | str | None = None,
                  method: str = AUTO_METHOD) -> list[Alert]:
    """Detect changes over the store's series; an alert for each change not alerted yet,
    and for the tip detector's finding on each series' newest commits.

    ``since``: only changes whose first bad commit was measured on or after this time (a
    timestamp or an ISO date). Returns the new alerts; a second call with no new data
    returns none. Confirms suspect alerts whose level held; marks existing alerts
    recovered where a later change undoes them. First judges the reruns measured since
    the last update, last asks for a rerun of each new confirmed tip alert
    (analysis/alert_reruns.py).
    """
    moment = parse_since(since) if isinstance(since, str) else since
    history = build_history(store, labels=labels, method=method, keep_detections=True)
    judge_reruns(store, ROBOT)
    created: list[Alert] = []
    # A pass that confirms or recovers an alert moves where the tip detector's history
    # starts, so passes repeat until one changes nothing: an update is then idempotent.
    alerts = store.alerts.all()
    for _ in range(MAX_PASSES):
        new = _update_pass(store, history, moment, alerts)
        created += new
        alerts, before = store.alerts.all(), alerts
        if not new and _statuses(alerts) == _statuses(before):
            break
    _refresh_levels(store, history)
    request_reruns(store, ROBOT)
    return created


MAX_PASSES = 4


def _statuses(alerts: list[Alert]) -> dict[int, tuple[str, bool, str]]:
    return {a.id: (a.method, a.recovered, a.state) for a in alerts}


def _update_pass(store: Store, history: History, moment: float | None, alerts: list[Alert]) -> list[Alert]:
    """One pass over the series, ``alerts`` the store's alerts before it; the new alerts."""
    known = {a.change_id: a for a in alerts}
    order = positions(history)
    created: list[Alert] = []
    tips: dict[tuple[str, str, str, str], Change] = {}
    for series in history.series:
        tip = _tip_after_alerts(series, known)
        if tip is not None:
            tips[_key(series)] = tip
        for c in (*series.changes, *((tip,) if tip else ())):
            if c.verdict is Verdict.UNDECIDED:  # no sign: nothing to alert on
                continue
            if c.id in known:
                _confirm(store, known[c.id], c)
                continue
            if c.method == ALERTED_METHOD:   # a way back known from an alert only: no detector's finding
                continue
            if moment is not None and c.point.started_at < moment:
                continue
            same = alerted_already([*alerts, *created], c, order)
            if same is not None:   # the same change as another detector placed it
                _confirm(store, same, c)
                continue
            # the summary of its commit range; else that of the same change on another host
            last_good, first_bad = c.commit_range
            joins = store.alerts.find_summary(last_good, first_bad)
            if joins is None:
                joins = peer_summary([*alerts, *created], c, order)
            alert_id = store.alerts.create(_alert_values(c), last_good=last_good, first_bad=first_bad,
                                           repo=history.repo, who=ROBOT, summary_id=joins)
            if alert_id is not None:
                created.append(store.alerts.get(alert_id))
    _mark_recoveries(store, history, tips)
    return created


def _tip_after_alerts(series: Series, known: dict[str, Alert]) -> Change | None:
    """The tip detector's finding on ``series``, its history starting after the series' last
    change or the last confirmed alert of the series, whichever is later (the robot's memory
    of a level it has already alerted on, which a short history's whole-series search may
    no longer separate). An invalid alert (noise: so triaged, or withdrawn when its rerun
    did not reproduce it) is no level."""
    since = series.changes[-1].index if series.changes else 0
    for i, p in enumerate(series.points):
        a = known.get(change_id(series.host, series.benchmark, series.params_key, series.metric, p.point.key))
        if a is not None and a.status == CONFIRMED and not a.recovered and a.state != INVALID and i > since:
            since = i
    if series.tip is not None and since == (series.changes[-1].index if series.changes else 0):
        return series.tip
    return tip_change(series, since=since)


def _confirm(store: Store, alert: Alert, c: Change) -> None:
    """A suspect alert whose change the detectors now hold as confirmed becomes confirmed."""
    if alert.status == SUSPECT and c.status == CONFIRMED:
        store.alerts.confirm(alert, who=ROBOT, note=f"the new level held ({c.method})")


def _alert_values(c: Change) -> dict[str, object]:
    return {"change_id": c.id, "host": c.host, "benchmark": c.benchmark, "params": c.params,
            "metric": c.metric, "unit": c.unit, "direction": c.direction.value, **level_values(c),
            "method": alert_method(c.method, c.status), "state": UNTRIAGED, "duplicate_of": None}


def level_values(c: Change) -> dict[str, object]:
    """The figures an alert keeps of its change: its levels, % and p, as the change list has them."""
    return {"kind": c.verdict.value, "before": _finite(c.before.centre), "after": _finite(c.after.centre),
            "change_pct": _finite(c.change_pct), "oriented_pct": _finite(c.oriented_pct),
            "p_value": _finite(c.detection_p)}


def _refresh_levels(store: Store, history: History) -> None:
    """Each alert's figures from the one change list as it is now (analysis.levels, with the
    alerts this update raised or recovered): a level bounded by its way back, or grown by the
    commits since, is what `alerts`, `alert ID` and `report change` all print."""
    alerts = store.alerts.all()
    current = {c.id: c for s in with_levels(history, alerts).series for c in (*s.changes, *((s.tip,) if s.tip else ()))}
    for a in alerts:
        c = current.get(a.change_id)
        if c is not None and c.verdict is not Verdict.UNDECIDED and _levels_of(a) != level_values(c):
            store.alerts.set_levels(a, level_values(c))


def _levels_of(a: Alert) -> dict[str, object]:
    return {"kind": a.kind, "before": _finite(a.before), "after": _finite(a.after), "change_pct": _finite(a.change_pct),
            "oriented_pct": _finite(a.oriented_pct), "p_value": _finite(a.p_value)}


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _mark_recoveries(store: Store, history: History, tips: dict[tuple[str, str, str, str], Change]) -> None:
    """Each alert whose level a later change of its series undid is recovered; else one whose
    summary's alert on another host recovered, when its own series shows that way back too
    (analysis/alert_hosts.py)."""
    by_name = {(s.host, s.benchmark, _params_text(s.params), s.metric): s for s in history.series}
    alerts = store.alerts.all()
    for alert in alerts:
        if alert.recovered:
            continue
        s = by_name.get((alert.host, alert.benchmark, _params_text(alert.params), alert.metric))
        if s is None:
            continue
        undoing = _undoing(s, alert, _tips_of(s, tips))
        if undoing is not None:
            store.alerts.mark_recovered(alert, undoing.id, who=ROBOT,
                                        note=f"change {undoing.id} at {undoing.point.short} brought "
                                             f"{alert.metric} back to its old level")
            alerts = store.alerts.all()   # a recovery here is looked for on the other hosts
        elif alert.status == CONFIRMED and (back := way_back_elsewhere(alert, alerts, history, s)) is not None:
            store.alerts.mark_recovered(alert, back.id, who=ROBOT,
                                        note=f"another host of summary {alert.summary_id} came back at "
                                             f"{back.point.short}; here too: {alert.metric} {shift_text(back)}, "
                                             f"p = {back.detection_p:.2g}")
        else:
            _unheld_suspect(store, alert, s)


def shift_text(c: Change) -> str:
    """The change's % in the one sign convention."""
    return f"{c.oriented_pct:+.1f}% ({SIGN})"


def _params_text(params: Mapping[str, object]) -> str:
    return json.dumps(params, sort_keys=True, default=str)


def _undoing(s: Series, alert: Alert, tips: tuple[Change, ...]) -> Change | None:
    """The first change of ``s`` after the alert's first bad commit (its tip detector's
    confirmed finding included) after which the level is nearer the alert's old level
    than the one it moved to (see the module's description), or None."""
    keys = [p.point.key for p in s.points]
    if alert.first_bad not in keys or alert.before is None or alert.after is None:
        return None
    at = keys.index(alert.first_bad)
    later = [*s.changes, *(t for t in tips if t.status == CONFIRMED)]
    for c in sorted(later, key=lambda c: c.index):
        if c.index > at and math.isfinite(c.after.centre) and _nearer(c.after.centre, alert.before, alert.after):
            return c
    return None


def _unheld_suspect(store: Store, alert: Alert, s: Series) -> None:
    """A suspect alert that no detector holds any more, MAX_TIP commits after it: it did not hold."""
    from perflab.stats.tip import MAX_TIP
    if alert.status != SUSPECT or any(c.id == alert.change_id for c in (*s.changes, *((s.tip,) if s.tip else ()))):
        return
    keys = [p.point.key for p in s.points]
    if alert.first_bad in keys and len(keys) - keys.index(alert.first_bad) > MAX_TIP:
        store.alerts.mark_recovered(alert, alert.change_id, who=ROBOT,
                                    note=f"suspect: the level did not hold over the next {MAX_TIP} commits")


def _key(s: Series) -> tuple[str, str, str, str]:
    return (s.host, s.benchmark, s.params_key, s.metric)


def _tips_of(s: Series, tips: dict[tuple[str, str, str, str], Change]) -> tuple[Change, ...]:
    tip = tips.get(_key(s))
    return (tip,) if tip is not None else ()


# --------------------------------------------------------------------------- reading

def list_alerts(store: Store, *, state: str | None = None) -> list[Alert]:
    if state is not None and state not in STATES:
        raise UsageError(f"unknown state {state!r}; choose from {', '.join(STATES)}")
    return store.alerts.all(state=state)


def list_summaries(store: Store, *, state: str | None = None) -> list[AlertSummary]:
    """Summaries with their alerts; ``state`` filters by the summary's derived state."""
    if state is not None and state not in STATES:
        raise UsageError(f"unknown state {state!r}; choose from {', '.join(STATES)}")
    return [replace(s, culprit=culprit_of(store, s.alerts[0]) if s.alerts else None)
            for s in store.alerts.summaries() if state is None or s.state == state]


def alert_detail(store: Store, alert_id: int) -> AlertDetail:
    """One alert with its summary, its events and the `report change` of its change."""
    alert = store.alerts.get(alert_id)
    summary = store.alerts.summary(alert.summary_id)
    events = tuple(store.alerts.events(alert_id))
    try:
        # the detector that raised it, on the alert's series only (host, benchmark, point, metric)
        report = change_report(store, alert.change_id, method=detector_of(alert), filters=Filters(
            frozenset({alert.benchmark}), Filters.for_point(alert.benchmark, alert.params).params,
            frozenset({alert.metric})), hosts=frozenset({alert.host}))
    except UsageError as error:
        return AlertDetail(alert, summary, events, None, f"no report: {error}", culprit_of(store, alert))
    # the header's figures are the report's: one change, one set of levels, % and p
    c = report.change
    if c.id == alert.change_id and c.verdict is not Verdict.UNDECIDED:
        alert = replace(alert, kind=c.verdict.value, before=c.before.centre, after=c.after.centre,
                        change_pct=c.change_pct, oriented_pct=c.oriented_pct, p_value=c.detection_p)
    # the report of the alert's own change named its culprit already (one git look-up, not two)
    culprit = report.culprit if c.id == alert.change_id else culprit_of(store, alert)
    return AlertDetail(alert, summary, events, report, culprit=culprit)


def with_alerted(store: Store, history: History) -> History:
    """The history with the changes the robot alerted on and still holds, where the
    whole-series detector no longer separates them (a short history: stats/tip's
    confirmed levels, `robot_change`), added to their series' changes. Each series is
    asked about its own alerts only (a fleet has thousands of alerts over thousands of
    series: every pair would be millions of searches)."""
    alerted: dict[tuple[str, str, str, str], list[str]] = {}
    for a in store.alerts.all():
        alerted.setdefault((a.host, a.benchmark, _params_text(a.params), a.metric), []).append(a.change_id)
    series = []
    for s in history.series:
        have = {c.id for c in (*s.changes, *((s.tip,) if s.tip else ()))}
        mine = alerted.get((s.host, s.benchmark, _params_text(s.params), s.metric), [])
        more = [found for cid in mine if cid not in have
                for found in (robot_change(s, cid, alerted=True),) if found is not None]
        series.append(replace(s, changes=tuple(sorted((*s.changes, *more), key=lambda c: c.index)))
                      if more else s)
    return replace(history, series=tuple(series))


def mark_alerts(store: Store, listing: ChangeList) -> ChangeList:
    """The listing with each change's alert (those that have one)."""
    found = store.alerts.of_changes([item.change.id for item in listing.changes])
    return replace(listing, changes=tuple(replace(item, alert=found.get(item.change.id))
                                          for item in listing.changes))


# --------------------------------------------------------------------------- triage

def triage(store: Store, alert_id: int, action: str, *, who: str, note: str = "",
           duplicate_of: int | None = None) -> Alert:
    """Move an alert by a triage action (model/alerts.py ACTIONS), recorded as an event.
    An illegal move is a UsageError naming the moves that are allowed."""
    if action not in ACTIONS:
        raise UsageError(f"unknown action {action!r}; choose from {', '.join(ACTIONS)}")
    alert = store.alerts.get(alert_id)
    to = ACTIONS[action]
    if not can_move(alert.state, to):
        allowed = ", ".join(a for a, s in ACTIONS.items() if s in TRANSITIONS[alert.state]) or "none"
        raise UsageError(f"alert {alert_id} is {alert.state}: it cannot become {to} (allowed: {allowed})")
    if to == DUPLICATE:
        if duplicate_of is None:
            raise UsageError("duplicate-of needs the id of the alert it duplicates: 'duplicate-of N'")
        if duplicate_of == alert_id:
            raise UsageError(f"alert {alert_id} cannot duplicate itself")
        original = store.alerts.get(duplicate_of)
        if original.state == DUPLICATE:
            raise UsageError(f"alert {duplicate_of} is itself a duplicate of {original.duplicate_of}: "
                             f"mark it duplicate-of {original.duplicate_of}")
    elif duplicate_of is not None:
        raise UsageError(f"{action} takes no alert id (only duplicate-of N does)")
    store.alerts.move(alert, to, action=action, who=who, note=note, duplicate_of=duplicate_of)
    return store.alerts.get(alert_id)


def attach_evidence(store: Store, alert_id: int, run_ref: str, *, who: str, note: str = "") -> Alert:
    """Record a run (id, label or commit) as evidence on the alert."""
    alert = store.alerts.get(alert_id)
    run = store.runs.resolve(run_ref)
    store.alerts.add_evidence(alert, run.id, who=who, note=note or f"run {run.id} ({run.label})")
    return alert


def assign(store: Store, alert_id: int, *, assignee: str, bug_url: str, who: str) -> Alert:
    """Set who looks into an alert and the bug that tracks it (empty: none), as an event.
    A bug link is an http(s) URL; anything else is a UsageError."""
    assignee, bug_url = assignee.strip(), bug_url.strip()
    if len(assignee) > 100:
        raise UsageError("an assignee is a name or an address of at most 100 characters")
    if bug_url and (not bug_url.startswith(("https://", "http://")) or len(bug_url) > 2000 or " " in bug_url):
        raise UsageError(f"bad bug link {bug_url[:60]!r}: expected an http(s) URL")
    alert = store.alerts.get(alert_id)
    store.alerts.set_owner(alert, assignee=assignee or None, bug_url=bug_url or None, who=who)
    return store.alerts.get(alert_id)
