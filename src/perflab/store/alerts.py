"""Reading and writing alerts, their summaries and their events (see model/alerts.py).

Each write is one transaction. An alert is created at most once per change id and a
summary once per commit range, even by two perflabs at once (insert-or-ignore on the
unique keys); a triage move only applies to the state it was decided from.
"""

from __future__ import annotations

import json
import time
from collections.abc import Set as AbstractSet
from typing import Any

import sqlalchemy as sa

from perflab.model.alerts import (
    ASSIGNED,
    CONFIRMED_EVENT,
    CREATED,
    TIP_METHOD,
    TIP_SUSPECT_METHOD,
    Alert,
    AlertEvent,
    AlertSummary,
)
from perflab.model.errors import UsageError
from perflab.model.limits import parse_id
from perflab.store.connection import StoreConnection
from perflab.store.database import insert_or_ignore
from perflab.store.samples import decode_params
from perflab.store.schema import alert_events, alert_summaries, alerts


def _alert(row: Any) -> Alert:
    return Alert(
        id=row["id"], summary_id=row["summary_id"], change_id=row["change_id"], host=row["host"],
        benchmark=row["benchmark"], params=decode_params(row["params"]), metric=row["metric"],
        unit=row["unit"], direction=row["direction"], kind=row["kind"],
        last_good=row["last_good"] or row["summary_last_good"],
        first_bad=row["first_bad"] or row["summary_first_bad"],
        before=_number(row["before"]), after=_number(row["after"]),
        change_pct=_number(row["change_pct"]), oriented_pct=_number(row["oriented_pct"]),
        p_value=_number(row["p_value"]), method=row["method"], state=row["state"],
        duplicate_of=row["duplicate_of"], recovered=bool(row["recovered"]), recovered_by=row["recovered_by"],
        created_at=row["created_at"], updated_at=row["updated_at"], assignee=row["assignee"],
        bug_url=row["bug_url"])


def _number(value: float | None) -> float:
    return float("nan") if value is None else float(value)


def _alert_query() -> sa.Select[Any]:
    return (sa.select(alerts, alert_summaries.c.last_good.label("summary_last_good"),
                      alert_summaries.c.first_bad.label("summary_first_bad"))
            .select_from(alerts.join(alert_summaries, alert_summaries.c.id == alerts.c.summary_id))
            .order_by(alerts.c.id))


class AlertRepository:
    """Alerts, the summaries that group them by commit range, and the events of their triage."""

    def __init__(self, db: StoreConnection):
        self.db = db

    # -- writing ---------------------------------------------------------------
    def create(self, values: dict[str, Any], *, last_good: str, first_bad: str,
               repo: str | None, who: str, summary_id: int | None = None) -> int | None:
        """A new alert with its summary and its 'created' event in one transaction; None when
        an alert of this change id exists already. ``summary_id``: the summary it joins (the
        same change on another host), else the summary of its commit range."""
        conn = self.db.conn
        try:
            summary = summary_id if summary_id is not None else self.summary_for(last_good, first_bad, repo)
            now = time.time()
            row = dict(values, params=json.dumps(values["params"], sort_keys=True, separators=(",", ":")),
                       summary_id=summary, created_at=now, updated_at=now, recovered=False,
                       last_good=last_good, first_bad=first_bad)
            # RETURNING yields the new row's id, and nothing when the change id exists (both dialects)
            inserted = conn.execute(self._insert(alerts, ["change_id"]).returning(alerts.c.id), row).scalar()
            if inserted is None:
                conn.rollback()
                return None
            alert_id = int(inserted)
            self._event(alert_id, who=who, action=CREATED, from_state=None, to_state=values["state"], note="")
            conn.commit()
            return alert_id
        except BaseException:
            conn.rollback()
            raise

    def find_summary(self, last_good: str, first_bad: str) -> int | None:
        """The id of the summary of this commit range, if there is one."""
        where = (alert_summaries.c.last_good == last_good) & (alert_summaries.c.first_bad == first_bad)
        found = self.db.conn.execute(sa.select(alert_summaries.c.id).where(where)).scalar()
        return None if found is None else int(found)

    def summary_for(self, last_good: str, first_bad: str, repo: str | None) -> int:
        """The id of the summary of this commit range, created on first use (not committed)."""
        conn = self.db.conn
        where = (alert_summaries.c.last_good == last_good) & (alert_summaries.c.first_bad == first_bad)
        found = conn.execute(sa.select(alert_summaries.c.id).where(where)).scalar()
        if found is None:
            conn.execute(self._insert(alert_summaries, ["last_good", "first_bad"]),
                         {"last_good": last_good, "first_bad": first_bad, "repo": repo,
                          "created_at": time.time()})
            found = conn.execute(sa.select(alert_summaries.c.id).where(where)).scalar_one()
        return int(found)

    def move(self, alert: Alert, to_state: str, *, action: str, who: str, note: str,
             duplicate_of: int | None = None) -> None:
        """Set ``alert``'s state, only if nobody moved it since it was read; recorded as an event."""
        result = self.db.conn.execute(
            alerts.update().where(alerts.c.id == alert.id, alerts.c.state == alert.state)
            .values(state=to_state, duplicate_of=duplicate_of, updated_at=time.time()))
        if result.rowcount != 1:
            self.db.conn.rollback()
            raise UsageError(f"alert {alert.id} changed meanwhile", hint=f"'perflab alert {alert.id}' shows it now")
        self._event(alert.id, who=who, action=action, from_state=alert.state, to_state=to_state, note=note)
        self.db.conn.commit()

    def mark_recovered(self, alert: Alert, by_change: str, *, who: str, note: str) -> None:
        result = self.db.conn.execute(
            alerts.update().where(alerts.c.id == alert.id, alerts.c.recovered.is_(False))
            .values(recovered=True, recovered_by=by_change, updated_at=time.time()))
        if result.rowcount == 1:
            self._event(alert.id, who=who, action="recovered", from_state=alert.state, to_state=alert.state,
                        note=note)
        self.db.conn.commit()

    def set_levels(self, alert: Alert, values: dict[str, Any]) -> None:
        """The alert's figures (kind, before, after, change_pct, oriented_pct, p_value) as
        its change's levels are now; no event: the change is the same, its sides grew."""
        self.db.conn.execute(alerts.update().where(alerts.c.id == alert.id).values(**values))
        self.db.conn.commit()

    def confirm(self, alert: Alert, *, who: str, note: str) -> None:
        """A suspect alert of the tip detector becomes confirmed (its stored method, see
        model.alerts.TIP_SUSPECT_METHOD), with a 'confirmed' event."""
        result = self.db.conn.execute(
            alerts.update().where(alerts.c.id == alert.id, alerts.c.method == TIP_SUSPECT_METHOD)
            .values(method=TIP_METHOD, updated_at=time.time()))
        if result.rowcount == 1:
            self._event(alert.id, who=who, action=CONFIRMED_EVENT, from_state=alert.state, to_state=alert.state,
                        note=note)
        self.db.conn.commit()

    def note(self, alert: Alert, action: str, *, who: str, note: str, run_id: int | None = None) -> None:
        """An event on ``alert`` that moves no state (the robot's rerun requests and verdicts,
        its bisects: ``run_id`` the found commit's run)."""
        self._event(alert.id, who=who, action=action, from_state=alert.state, to_state=alert.state, note=note,
                    run_id=run_id)
        self.db.conn.commit()

    def set_owner(self, alert: Alert, *, assignee: str | None, bug_url: str | None, who: str) -> None:
        """Set who looks into ``alert`` and the bug that tracks it, recorded as an event."""
        self.db.conn.execute(alerts.update().where(alerts.c.id == alert.id)
                             .values(assignee=assignee, bug_url=bug_url, updated_at=time.time()))
        self._event(alert.id, who=who, action=ASSIGNED, from_state=alert.state, to_state=alert.state,
                    note=f"assignee {assignee or '-'}, bug {bug_url or '-'}")
        self.db.conn.commit()

    def add_evidence(self, alert: Alert, run_id: int, *, who: str, note: str) -> None:
        self._event(alert.id, who=who, action="evidence", from_state=alert.state, to_state=alert.state,
                    note=note, run_id=run_id)
        self.db.conn.commit()

    def _insert(self, table: sa.Table, keys: list[str]) -> Any:
        statement = insert_or_ignore(self.db.dialect, table, keys)
        return table.insert() if statement is None else statement

    def _event(self, alert_id: int, *, who: str, action: str, from_state: str | None,
               to_state: str | None, note: str, run_id: int | None = None) -> None:
        self.db.conn.execute(alert_events.insert().values(
            alert_id=alert_id, at=time.time(), who=who, action=action, from_state=from_state,
            to_state=to_state, note=note, run_id=run_id))

    # -- reading ---------------------------------------------------------------
    def known_change_ids(self) -> set[str]:
        return {row[0] for row in self.db.conn.execute(sa.select(alerts.c.change_id))}

    def all(self, *, state: str | None = None, summary_id: int | None = None) -> list[Alert]:
        query = _alert_query()
        if state is not None:
            query = query.where(alerts.c.state == state)
        if summary_id is not None:
            query = query.where(alerts.c.summary_id == summary_id)
        return [_alert(row) for row in self.db.conn.execute(query).mappings()]

    def of_series(self, hosts: AbstractSet[str], benchmarks: AbstractSet[str],
                  metrics: AbstractSet[str]) -> list[Alert]:
        """The alerts of series of these hosts, benchmarks and metrics (a superset of those of
        the series they make: a history of a few series reads theirs, not a fleet's book)."""
        query = _alert_query().where(alerts.c.host.in_(sorted(hosts)), alerts.c.benchmark.in_(sorted(benchmarks)),
                                     alerts.c.metric.in_(sorted(metrics)))
        return [_alert(row) for row in self.db.conn.execute(query).mappings()]

    def recent(self, since: float) -> list[Alert]:
        """The alerts created at or after ``since``, oldest first."""
        return [_alert(row) for row in self.db.conn.execute(
            _alert_query().where(alerts.c.created_at >= since)).mappings()]

    def repo_of(self, summary_id: int) -> str | None:
        """The repository a summary's commits are in (as history knew it), or None."""
        return self.db.conn.execute(sa.select(alert_summaries.c.repo)
                                    .where(alert_summaries.c.id == summary_id)).scalar()

    def get(self, alert_id: int) -> Alert:
        parse_id(alert_id, "alert id")   # an id no key can hold is refused before the driver overflows
        row = self.db.conn.execute(_alert_query().where(alerts.c.id == alert_id)).mappings().first()
        if row is None:
            raise UsageError(f"no alert {alert_id}", hint="'perflab alerts' lists them")
        return _alert(row)

    def of_changes(self, change_ids: list[str]) -> dict[str, Alert]:
        """The alerts of these change ids (those that have one)."""
        if not change_ids:
            return {}
        query = _alert_query().where(alerts.c.change_id.in_(sorted(set(change_ids))))
        return {a.change_id: a for a in (_alert(row) for row in self.db.conn.execute(query).mappings())}

    def summaries(self) -> list[AlertSummary]:
        """Every summary with its alerts, oldest first."""
        grouped: dict[int, list[Alert]] = {}
        for a in self.all():
            grouped.setdefault(a.summary_id, []).append(a)
        rows = self.db.conn.execute(sa.select(alert_summaries).order_by(alert_summaries.c.id)).mappings()
        return [AlertSummary(r["id"], r["last_good"], r["first_bad"], r["repo"], r["created_at"],
                             tuple(grouped.get(r["id"], ()))) for r in rows]

    def summary(self, summary_id: int) -> AlertSummary:
        row = self.db.conn.execute(sa.select(alert_summaries)
                                   .where(alert_summaries.c.id == summary_id)).mappings().first()
        if row is None:
            raise UsageError(f"no alert summary {summary_id}")
        return AlertSummary(row["id"], row["last_good"], row["first_bad"], row["repo"], row["created_at"],
                            tuple(self.all(summary_id=summary_id)))

    def events(self, alert_id: int) -> list[AlertEvent]:
        return self.all_events(alert_events.c.alert_id == alert_id).get(alert_id, [])

    def last_event_id(self) -> int:
        """The newest event's id (0 with none): where a reader of new events starts."""
        return int(self.db.conn.execute(sa.select(sa.func.max(alert_events.c.id))).scalar() or 0)

    def events_after(self, event_id: int) -> list[AlertEvent]:
        """Every event newer than ``event_id``, oldest first."""
        found = self.all_events(alert_events.c.id > event_id)
        return sorted((e for events in found.values() for e in events), key=lambda e: e.id)

    def events_of(self, alert_ids: list[int]) -> dict[int, list[AlertEvent]]:
        """The events of these alerts, oldest first, by alert id."""
        return self.all_events(alert_events.c.alert_id.in_(sorted(set(alert_ids)))) if alert_ids else {}

    def all_events(self, where: Any = None) -> dict[int, list[AlertEvent]]:
        """Every alert's events (those ``where`` selects), oldest first, by alert id."""
        query = alert_events.select().order_by(alert_events.c.id)
        if where is not None:
            query = query.where(where)
        found: dict[int, list[AlertEvent]] = {}
        for r in self.db.conn.execute(query).mappings():
            found.setdefault(r["alert_id"], []).append(AlertEvent(
                r["id"], r["alert_id"], r["at"], r["who"], r["action"], r["from_state"], r["to_state"],
                r["note"], r["run_id"]))
        return found
