"""The lines of `perflab watch`'s log: one per event, each first its UTC time (ISO 8601,
e.g. ``2026-11-28T12:00:03Z``), then what happened: queued, measured (or failed), suspect,
confirmed, rerun queued, rerun verdict, withdrawn, recovered, bisect queued, bisect answer.
Layout only: the events are the store's (the alerts' events, the jobs' ends)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from perflab.model.alerts import (
    BISECT_QUEUED,
    BISECTED,
    CONFIRMED_EVENT,
    CREATED,
    EVIDENCE,
    NOT_REPRODUCED,
    RECOVERED,
    REPRODUCED,
    RERUN_REQUESTED,
    RERUN_UNDECIDED,
    WITHDRAWN,
    Alert,
    AlertEvent,
)
from perflab.model.jobs import Job, JobState
from perflab.render.alerts import commits_text
from perflab.render.history import pct
from perflab.render.jobs import describe_request

# what an alert event is called in the log (others by their action: a person's triage)
EVENT_WORDS = {CONFIRMED_EVENT: "confirmed", RECOVERED: "recovered", WITHDRAWN: "withdrawn",
               REPRODUCED: "rerun verdict", NOT_REPRODUCED: "rerun verdict", RERUN_UNDECIDED: "rerun verdict",
               BISECT_QUEUED: "bisect queued", BISECTED: "bisect answer"}
# events the log leaves out: the rerun's runs (its job's end says it) and its request (its job's queueing)
UNLOGGED = (EVIDENCE, RERUN_REQUESTED)


def utc(at: float) -> str:
    """``at`` (a Unix time) as ISO 8601 UTC to the second."""
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def log_line(at: float, text: str) -> str:
    return f"{utc(at)} {text}"


def alert_event_text(event: AlertEvent, alert: Alert, raised_as: str | None = None) -> str | None:
    """An alert's event as a log line's text (None: an event the log leaves out);
    ``raised_as``: its status when it was raised, when that is not its status now."""
    if event.action in UNLOGGED:
        return None
    word = (raised_as or alert.status) if event.action == CREATED else EVENT_WORDS.get(event.action, event.action)
    by = "" if event.action in (*EVENT_WORDS, CREATED) else f" by {event.who}"
    text = (f"{word}: alert {alert.id}{by} ({alert.series_name}, {pct(alert.oriented_pct)} {alert.kind}, "
            f"commits {commits_text(alert)})")
    return text + (f": {event.note}" if event.note else "")


def queued_text(commit: str, subject: str | None, jobs: Sequence[tuple[int, str]]) -> str:
    """A commit queued: its build job on each host."""
    named = f' "{subject}"' if subject else ""
    return f"queued: {commit[:12]}{named}: " + ", ".join(f"build job {j} on {host}" for j, host in jobs)


def job_end_text(job: Job) -> str:
    """A job of the watch's ended: measured (its runs), or failed / cancelled (its error)."""
    word = "measured" if job.state is JobState.DONE else job.state.value
    runs = ", ".join(map(str, job.run_ids)) or "none"
    text = f"{word}: {job.kind.value} job {job.id} on {job.host or job.queue} ({describe_request(job)}); runs: {runs}"
    return text + (f"; {job.error}" if job.error else "")


def rerun_queued_text(job_id: int, host: str, alerts: Sequence[int]) -> str:
    return f"rerun queued: rerun job {job_id} on {host} for alert(s) {', '.join(map(str, alerts))}"
