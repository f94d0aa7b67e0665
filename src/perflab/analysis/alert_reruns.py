"""The robot's reruns: a change found at the tip is measured again before it is believed.

The tip detector confirms a new level from a few commits read against a short history, so
a machine that runs at another speed for a few seconds (a level moving 12-30% with no code
change) is a confirmed change too: rightly, by the data it had; and one commit measured
during another load is a suspect. The kernel test robot and Perfherder answer this the
same way: measure the commits again. Here:

1. ``request_reruns``: each alert of the tip detector, suspect or confirmed (``Alert.method``
   "tip-suspect" or "tip"), gets a "rerun requested" event, once; again when a suspect
   whose rerun was undecided is confirmed.
2. Whoever records (``perflab watch``'s rerun jobs, ``perflab alerts --rerun --as-recorded``,
   a nightly loop) measures each requested commit range again: last good and first bad,
   stats/rerun.ROUNDS rounds in ABBA order (``rounds_of``), each run attached to the
   range's requesting alerts as evidence (``pending_reruns``).
3. ``judge_reruns`` (run by every ``update_alerts``) reads the evidence attached after the
   request: stats/rerun.judge on each round's medians of the alert's own series. Not
   reproduced: the alert is withdrawn (untriaged -> invalid, event "withdrawn"; one a person
   triaged already keeps its state, event "not reproduced"); reproduced or undecided: an
   event says so and the alert stays. One verdict per request: updates stay idempotent.

A withdrawn (invalid) alert no longer starts the history the tip detector reads
(analysis/alerts.py), so the step after it is read against the level before it.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from perflab.analysis.history import find_change
from perflab.analysis.reproduce import with_option
from perflab.model.alerts import (
    CONFIRMED_EVENT,
    EVIDENCE,
    INVALID,
    NOT_REPRODUCED,
    REPRODUCED,
    RERUN_REQUESTED,
    RERUN_UNDECIDED,
    RERUN_VERDICTS,
    TIP_METHOD,
    TIP_SUSPECT_METHOD,
    UNTRIAGED,
    WITHDRAWN,
    Alert,
    AlertEvent,
    detector_of,
)
from perflab.model.errors import UsageError
from perflab.model.records import RunInfo
from perflab.model.report.history import HistoryPoint
from perflab.model.verdicts import SIGN
from perflab.stats import rerun as rerun_stats
from perflab.store import Store

__all__ = ["PendingRerun", "RerunRound", "RerunSide", "RoundMeasured", "ask_rerun", "awaiting_rerun",
           "judge_reruns", "pending_reruns", "request_reruns", "rerun_plan", "rerun_rounds", "rounds_of",
           "rounds_plan"]


@dataclass(frozen=True)
class PendingRerun:
    """One commit range to measure again with one benchmark's recorded command, for the
    alerts (its metrics and points) that asked."""

    last_good: str
    first_bad: str
    alerts: tuple[Alert, ...]
    requests: tuple[int, ...]    # each alert's open request: its "rerun requested" event's id


def _latest_request(events: Sequence[AlertEvent]) -> int | None:
    """The position of the latest rerun request in ``events`` (None: never requested)."""
    return max((i for i, e in enumerate(events) if e.action == RERUN_REQUESTED), default=None)


def _since_request(events: Sequence[AlertEvent]) -> list[AlertEvent] | None:
    """The events after the latest rerun request (None: never requested)."""
    at = _latest_request(events)
    return None if at is None else list(events[at + 1:])


def request_reruns(store: Store, who: str) -> int:
    """A rerun request on every untriaged, unrecovered tip alert (suspect or confirmed) that
    needs one (`_needs_rerun`); how many were made."""
    events = store.alerts.all_events()
    made = 0
    for a in store.alerts.all(state=UNTRIAGED):
        if a.method not in (TIP_METHOD, TIP_SUSPECT_METHOD) or a.recovered or not _needs_rerun(events.get(a.id, [])):
            continue
        store.alerts.note(a, RERUN_REQUESTED, who=who,
                          note=f"{a.status} at the tip: measure {a.last_good[:12]} and {a.first_bad[:12]} again, "
                               f"{rerun_stats.ROUNDS} rounds side by side ('perflab alerts --rerun --as-recorded')")
        made += 1
    return made


def _needs_rerun(events: Sequence[AlertEvent]) -> bool:
    """Never asked; or asked while a suspect, judged undecided, and confirmed since (the
    level that held is new evidence)."""
    after = _since_request(events)
    if after is None:
        return True
    undecided = next((i for i, e in enumerate(after) if e.action == RERUN_UNDECIDED), None)
    return undecided is not None and any(e.action == CONFIRMED_EVENT for e in after[undecided:])


def _sides(after: Sequence[AlertEvent], alert: Alert, commits: dict[int, str | None]) -> tuple[list[int], list[int]]:
    """The evidence runs in ``after`` of the alert's last good and first bad commit, in order."""
    runs = [e.run_id for e in after if e.action == EVIDENCE and e.run_id is not None]
    return ([r for r in runs if commits.get(r) == alert.last_good],
            [r for r in runs if commits.get(r) == alert.first_bad])


def _open_requests(store: Store) -> Iterator[tuple[Alert, int, list[int], list[int]]]:
    """Each alert with a rerun request and no verdict yet, with the request's event id and
    the evidence runs attached since of its last good and its first bad commit. The runs'
    commits are read only when some request is open (every update asks)."""
    events = store.alerts.all_events()
    commits: dict[int, str | None] | None = None
    for a in store.alerts.all():
        mine = events.get(a.id, [])
        at = _latest_request(mine)
        if at is None or any(e.action in RERUN_VERDICTS for e in mine[at + 1:]):
            continue
        if commits is None:
            commits = {r.id: r.commit for r in store.runs.all(counted=False, details=False)}
        good, bad = _sides(mine[at + 1:], a, commits)
        yield a, mine[at].id, good, bad


def pending_reruns(store: Store) -> list[PendingRerun]:
    """The commit ranges with a request that has no verdict nor its rounds measured, oldest first."""
    # one rerun per commit range and recorded command (the benchmark's, on its host)
    ranges: dict[tuple[str, str, str, str], list[tuple[Alert, int]]] = {}
    for a, request, good, bad in _open_requests(store):
        if min(len(good), len(bad)) < rerun_stats.ROUNDS:
            ranges.setdefault((a.last_good, a.first_bad, a.host, a.benchmark), []).append((a, request))
    return [PendingRerun(good, bad, tuple(a for a, _ in found), tuple(r for _, r in found))
            for (good, bad, _, _), found in ranges.items()]


def judge_reruns(store: Store, who: str) -> int:
    """A verdict on every request whose evidence holds its rounds; how many were judged."""
    judged = 0
    for a, _, good, bad in list(_open_requests(store)):   # listed first: judging writes events
        rounds = min(len(good), len(bad))
        if rounds < rerun_stats.ROUNDS:
            continue
        verdict = rerun_stats.judge([_median(store, a, r) for r in good[:rounds]],
                                    [_median(store, a, r) for r in bad[:rounds]], a.before, a.after)
        _record(store, a, verdict, who)
        judged += 1
    return judged


def _median(store: Store, alert: Alert, run_id: int) -> float:
    """The median of ``run_id``'s values of the alert's series (NaN: none)."""
    wanted = json.dumps(alert.params, sort_keys=True, default=str)
    for g in store.series.value_groups(run_id, {alert.benchmark}, {alert.metric}):
        if json.dumps(g.params, sort_keys=True, default=str) == wanted and g.values.size:
            return float(np.median(g.values))
    return float("nan")


def _record(store: Store, alert: Alert, verdict: rerun_stats.RerunVerdict, who: str) -> None:
    # one sign convention: both figures + = better, as the alert's own % (model/verdicts.SIGN)
    note = f"{verdict.text(lower_is_better=alert.direction == 'lower')}; alerted {alert.oriented_pct:+.1f}% ({SIGN})"
    if verdict.outcome == rerun_stats.REPRODUCED:
        store.alerts.note(alert, REPRODUCED, who=who, note=note)
    elif verdict.outcome == rerun_stats.UNDECIDED:
        store.alerts.note(alert, RERUN_UNDECIDED, who=who, note=note)
    elif alert.state == UNTRIAGED:
        store.alerts.move(alert, INVALID, action=WITHDRAWN, who=who, note=note)
    else:
        store.alerts.note(alert, NOT_REPRODUCED, who=who, note=note)


@dataclass(frozen=True)
class RerunSide:
    """One side of an alert's A/B rerun: the recorded command of a commit, to run again."""

    side: str            # "good" (last good) or "bad" (first bad)
    commit: str | None
    label: str           # the label the rerun records, to find it and attach it
    argv: list[str]      # a perflab command line, on the same store
    cwd: str | None      # the repository the runs recorded, when it is there


def rerun_plan(store: Store, alert_id: int, stamp: str) -> list[RerunSide]:
    """The two commands of an A/B rerun: each side's first recorded `perflab run` command
    line, with its commit, a new label ``alert<ID>-<side>-<stamp>`` and this store.

    It reruns the commands as recorded: it neither checks out nor builds the commits
    (a program built per commit needs its build; then measure each side and attach the
    runs with ``--run``)."""
    alert = store.alerts.get(alert_id)
    try:
        _, _, c = find_change(store, alert.change_id, method=detector_of(alert))
    except UsageError:
        raise UsageError(f"alert {alert_id}'s change {alert.change_id} is no longer detected: "
                         "attach runs with --run RUN") from None
    chosen = {side: _recording(store, alert, point) for side, point in (("good", c.previous), ("bad", c.point))}
    full = store.runs.with_details(chosen.values())  # a history's runs are light
    sides = []
    for side, point in (("good", c.previous), ("bad", c.point)):
        run = full[chosen[side].id]
        recorded = list(run.request.identity.command_line or [])
        if "run" not in recorded:
            raise UsageError(f"run {run.id} did not record a 'perflab run' command line: "
                             "measure the commit yourself and attach it with --run RUN")
        label = f"alert{alert_id}-{side}-{stamp}"
        argv = with_option(with_option(recorded[recorded.index("run"):], "--commit", point.commit),
                           "--label", label)
        command = [sys.executable, "-m", "perflab.cli.main", "--db", store.target, *argv]
        cwd = run.repo if run.repo and os.path.isdir(run.repo) else None
        sides.append(RerunSide(side, point.commit, label, command, cwd))
    return sides


def _recording(store: Store, alert: Alert, point: HistoryPoint) -> RunInfo:
    """The point's first run that recorded the alert's benchmark (a commit's runs may each
    run another benchmark), else its first run."""
    for run in point.runs:
        if run.host == alert.host and store.series.value_groups(run.id, {alert.benchmark}, {alert.metric}):
            return run
    return point.runs[0]


@dataclass(frozen=True)
class RerunRound:
    """One run of a requested rerun: which side, and the label it records."""

    side: str            # "good" (last good) or "bad" (first bad)
    label: str


def rounds_of(alert_id: int, stamp: str) -> list[RerunRound]:
    """The runs of a requested rerun, in the order to measure them (stats/rerun.order),
    each labelled ``alert<ID>-<side>-<stamp>-<n>`` (ID: the range's first alert)."""
    return [RerunRound(side, f"alert{alert_id}-{side}-{stamp}-{n}")
            for n, side in enumerate(rerun_stats.order(), start=1)]


def rounds_plan(store: Store, pending: PendingRerun, stamp: str) -> list[RerunSide]:
    """``rounds_of`` as command lines: each side's recorded `perflab run` (``rerun_plan``)
    with the round's label."""
    sides = {s.side: s for s in rerun_plan(store, pending.alerts[0].id, stamp)}
    return [replace(sides[r.side], label=r.label, argv=with_option(sides[r.side].argv, "--label", r.label))
            for r in rounds_of(pending.alerts[0].id, stamp)]


def awaiting_rerun(events: Sequence[AlertEvent]) -> bool:
    """Whether the alert's latest rerun request has no verdict yet."""
    after = _since_request(events)
    return after is not None and not any(e.action in RERUN_VERDICTS for e in after)


def ask_rerun(store: Store, alert_id: int, *, who: str, note: str = "") -> bool:
    """A person's rerun request on an alert (the dashboard's "rerun" button): a "rerun
    requested" event that ``perflab watch`` queues as a rerun job and ``perflab alerts
    --rerun --as-recorded`` measures; False when a request is open already (nothing added)."""
    alert = store.alerts.get(alert_id)
    if awaiting_rerun(store.alerts.events(alert_id)):
        return False
    store.alerts.note(alert, RERUN_REQUESTED, who=who,
                      note=note or f"asked by {who}: measure {alert.last_good[:12]} and {alert.first_bad[:12]} "
                                   f"again, {rerun_stats.ROUNDS} rounds side by side")
    return True


@dataclass(frozen=True)
class RoundMeasured:
    """One run attached after the latest rerun request: its side and the median of the
    alert's series in it (what ``judge_reruns`` reads)."""

    run_id: int
    side: str          # "good", "bad", or "other" (a run of neither commit)
    median: float


def rerun_rounds(store: Store, alert: Alert, events: Sequence[AlertEvent]) -> list[RoundMeasured]:
    """The rounds measured for the alert's latest rerun request, in the order attached."""
    after = _since_request(events) or []
    runs = [e.run_id for e in after if e.action == EVIDENCE and e.run_id is not None]
    if not runs:
        return []
    commits = {r: store.runs.resolve(str(r)).commit for r in runs}   # a few runs; a deleted one is SET NULL
    sides = {alert.last_good: "good", alert.first_bad: "bad"}
    return [RoundMeasured(r, sides.get(commits.get(r) or "", "other"), _median(store, alert, r)) for r in runs]
