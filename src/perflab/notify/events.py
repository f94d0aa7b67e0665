"""The events people hear of, derived from the alerts' state (model/notify.py).

A summary is *reported* once it holds a confirmed alert that is open (untriaged or
acknowledged, not recovered): a suspect alert waits until the new level holds, and a
summary closed or recovered before anyone was told stays quiet, as does one whose every
alert is the way back of an earlier alert (its ``recovered_by``): that is told as the
earlier summary's follow-up, not as a new improvement. After its report, each
change of the summary's state is one follow-up in its thread: *bisected* (an alert event
names the culprit commit), *recovered* (every alert of it not noise is back at its old
level), and the triage that closes it (*fixed*, *wontfix*, *invalid*, or *withdrawn* when
the robot's rerun did not reproduce it). Each event's key names it for good, so deriving
the events again, in any process, queues nothing twice.
"""

from __future__ import annotations

from perflab.model.alerts import (
    ACKNOWLEDGED,
    CONFIRMED,
    DUPLICATE,
    FIXED,
    INVALID,
    RECOVERED,
    UNTRIAGED,
    WITHDRAWN,
    WONTFIX,
    AlertEvent,
    AlertSummary,
)
from perflab.model.notify import BISECTED, REPORTED, Event
from perflab.notify.facts import bisect_answer
from perflab.store import Store

_CLOSED = (FIXED, WONTFIX, INVALID)


def pending_events(store: Store) -> list[Event]:
    """The events not queued yet on any channel, oldest summary first."""
    queued = store.outbox.queued_keys()
    events = store.alerts.all_events()
    found: list[Event] = []
    summaries = store.alerts.summaries()
    ways_back = {a.recovered_by for s in summaries for a in s.alerts if a.recovered_by}
    newest = max((e.id for listed in events.values() for e in listed), default=0)
    for summary in summaries:
        reported = queued.get(report_key(summary.id))
        if reported is None:
            if reportable(summary) and not all(a.change_id in ways_back for a in summary.alerts):
                found.append(Event(report_key(summary.id), REPORTED, summary.id, since_event=newest))
            continue
        history = sorted((e for a in summary.alerts for e in events.get(a.id, [])), key=lambda e: e.id)
        found += [e for e in follow_ups(store, summary, history, reported) if e.key not in queued]
    return found


def report_key(summary_id: int) -> str:
    return f"summary {summary_id} {REPORTED}"


def reportable(summary: AlertSummary) -> bool:
    return any(a.status == CONFIRMED and a.state in (UNTRIAGED, ACKNOWLEDGED) and not a.recovered
               for a in summary.alerts)


def follow_ups(store: Store, summary: AlertSummary, history: list[AlertEvent], reported: int) -> list[Event]:
    """The summary's follow-ups since its report: the alert events after event ``reported``
    (ids, not times: a fleet's hosts write events by clocks of their own)."""
    later = [e for e in history if e.id > reported]
    found = []
    culprit = bisect_answer(store, later)
    if culprit is not None:
        found.append(Event(f"summary {summary.id} {BISECTED} {culprit[:12]}", BISECTED, summary.id,
                           f"bisected to {culprit[:12]}"))
    live = [a for a in summary.alerts if a.state not in (INVALID, DUPLICATE)]
    if live and all(a.recovered for a in live):
        back = [e for e in later if e.action == RECOVERED]
        if back:
            found.append(Event(f"summary {summary.id} {RECOVERED}", RECOVERED, summary.id, back[-1].note))
    if summary.state in _CLOSED:
        moves = [e for e in history if e.to_state == summary.state and e.from_state != e.to_state]
        if moves and moves[-1].id > reported:
            kind = WITHDRAWN if moves[-1].action == WITHDRAWN else summary.state
            found.append(Event(f"summary {summary.id} {kind} {moves[-1].id}", kind, summary.id,
                               moves[-1].note))
    return found
