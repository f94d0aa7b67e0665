"""The robot's bisects: every alert over more than one commit gets its culprit.

1. ``pending_bisects``: the confirmed alerts (a tip or a whole-series change; not withdrawn,
   not invalid) whose range, last good .. first bad, holds more than one commit and that
   were never bisected (no "bisect queued" event), one bisect per host and range: the
   alerts of one range on one host (metrics, points) share it.
2. Whoever bisects (``perflab watch``'s bisect jobs) marks the alerts ("bisect queued",
   ``mark_queued``) and, when bisect answers, attaches the answer to each of them
   (``attach_answer``: a "bisected" event whose run is the found commit's bisect run, none
   when bisect named no commit).
3. ``culprit_of``: the found commit with its subject and author, which the alert's headline
   and its ``report change`` name instead of the range's first measured bad commit: the
   answer of the alert's own bisect, else that of another alert of its summary (the same
   range), its own host's first.
"""

from __future__ import annotations

from dataclasses import dataclass

from perflab.model.alerts import (
    BISECT_QUEUED,
    BISECTED,
    CONFIRMED,
    DUPLICATE,
    INVALID,
    Alert,
    AlertEvent,
    Culprit,
    point_commit,
)
from perflab.model.report.bisect import FOUND, BisectResult
from perflab.store import Store
from perflab.vcs import git_output, subject_and_author

__all__ = ["PendingBisect", "attach_answer", "culprit_of", "mark_queued", "pending_bisects"]


@dataclass(frozen=True)
class PendingBisect:
    """One commit range to bisect on one host, for the alerts that asked."""

    host: str
    good: str            # the last good commit
    bad: str             # the first bad (measured) commit
    commits: int         # in good..bad, as bisect walks them (merged branches too)
    alerts: tuple[Alert, ...]


def pending_bisects(store: Store, repo: str, hosts: tuple[str, ...]) -> list[PendingBisect]:
    """The ranges of more than one commit (of ``repo``) whose alerts on ``hosts`` were
    never bisected (see the module's description)."""
    alerts = store.alerts.all()
    queued = {a for a, events in store.alerts.all_events().items() if any(e.action == BISECT_QUEUED for e in events)}
    # a range bisected on a host is not bisected there again for an alert raised later
    # (another metric): that alert is named by its summary's answer
    asked = {(a.host, a.last_good, a.first_bad) for a in alerts if a.id in queued}
    grouped: dict[tuple[str, str, str], list[Alert]] = {}
    for a in alerts:
        good, bad = point_commit(a.last_good), point_commit(a.first_bad)
        if ((a.host, a.last_good, a.first_bad) in asked or a.status != CONFIRMED or a.state in (INVALID, DUPLICATE)
                or a.host not in hosts or not good or not bad):
            continue
        grouped.setdefault((a.host, good, bad), []).append(a)
    pending = []
    for (host, good, bad), alerts in grouped.items():
        between = git_output(repo, "rev-list", "--count", f"{good}..{bad}")
        if between is not None and int(between.strip() or 0) >= 2:
            pending.append(PendingBisect(host, good, bad, int(between.strip()), tuple(alerts)))
    return pending


def mark_queued(store: Store, pending: PendingBisect, job_id: int, who: str) -> None:
    """A "bisect queued" event on each alert of ``pending`` (a range is bisected once)."""
    note = f"bisect job {job_id} on {pending.host}: {pending.good[:12]}..{pending.bad[:12]} ({pending.commits} commits)"
    for a in pending.alerts:
        store.alerts.note(a, BISECT_QUEUED, who=who, note=note)


def attach_answer(store: Store, alert_ids: list[int], result: BisectResult, *, job: int, host: str,
                  who: str) -> None:
    """Bisect's answer as a "bisected" event on each alert: its note the answer, its run the
    found commit's (stored by the bisect), none when no commit was found."""
    found = result.first_bad.sha if result.outcome == FOUND and result.first_bad else None
    run_id = dict(result.stored).get(found) if found else None
    note = f"bisect job {job} on {host}: {result.message.splitlines()[0]}"
    if result.gradual:
        note += (f"; spread over {len(result.gradual)} commits: "
                 + ", ".join(f"{s.commit.short} {100 * s.share:.0f}%" for s in result.gradual))
    for alert_id in alert_ids:
        store.alerts.note(store.alerts.get(alert_id), BISECTED, who=who, note=note, run_id=run_id)


def culprit_of(store: Store, alert: Alert) -> Culprit | None:
    """The commit a bisect named for ``alert``'s range (see the module's description), or None."""
    summary = store.alerts.summary(alert.summary_id)
    answers: list[tuple[int, float, AlertEvent, Alert]] = []
    events = store.alerts.events_of([other.id for other in summary.alerts])   # one query, not one an alert
    for other in summary.alerts:
        rank = 0 if other.id == alert.id else 1 if other.host == alert.host else 2
        answers += [(rank, -e.at, e, other) for e in events.get(other.id, ())
                    if e.action == BISECTED and e.run_id is not None]
    if not answers:
        return None
    _, _, event, by = min(answers, key=lambda x: x[:2])
    run = store.runs.resolve(str(event.run_id))
    if not run.commit:
        return None
    known = subject_and_author(summary.repo, run.commit) or subject_and_author(run.repo, run.commit)
    subject, author = known if known else (None, None)
    return Culprit(run.commit, subject, author, event.note, by.host)
