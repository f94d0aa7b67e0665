"""The notifications' outbox (model/notify.py): queued once per event and channel, claimed
by one sender at a time, every delivery attempt recorded.

Queueing is insert-or-ignore on the unique (channel, event key), so two robots deriving
the same event queue it once. Claiming is a conditional UPDATE: of two senders (two
``perflab notify`` at once, a watch and a cron job) only the one whose UPDATE moved the row
from due to ``sending`` delivers it; a sender that died mid-way leaves a lease that
expires, and the row is due again.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa

from perflab.model.notify import FAILED, PENDING, SENDING, SENT, Attempt, Event, Notification
from perflab.store.connection import StoreConnection
from perflab.store.database import insert_or_ignore
from perflab.store.schema import outbox, outbox_attempts


def _notification(row: Any) -> Notification:
    return Notification(
        id=row["id"], channel=row["channel"],
        event=Event(row["event_key"], row["event"], row["summary_id"], row["note"], row["since_event"]),
        state=row["state"], attempts=row["attempts"], created_at=row["created_at"], next_at=row["next_at"],
        sent_at=row["sent_at"], message_id=row["message_id"], last_error=row["last_error"])


def _due(now: float) -> Any:
    return (((outbox.c.state == PENDING) & (outbox.c.next_at <= now))
            | ((outbox.c.state == SENDING) & (outbox.c.claimed_until < now)))


class OutboxRepository:
    def __init__(self, db: StoreConnection):
        self.db = db

    def enqueue(self, events: Iterable[Event], channels: Iterable[str]) -> int:
        """Queue each event for each channel, unless queued already; how many were new."""
        now = time.time()
        rows = [{"channel": channel, "event_key": e.key, "event": e.kind, "summary_id": e.summary_id,
                 "note": e.note, "since_event": e.since_event, "state": PENDING, "attempts": 0,
                 "created_at": now, "next_at": now}
                for e in events for channel in channels]
        if not rows:
            return 0
        self.db.commit_reads()
        statement = insert_or_ignore(self.db.dialect, outbox, ["channel", "event_key"])
        if statement is None:
            statement = outbox.insert()
        try:
            new = sum(self.db.conn.execute(statement, row).rowcount for row in rows)
            self.db.conn.commit()
        except BaseException:
            self.db.conn.rollback()
            raise
        return int(new)

    def queued_keys(self) -> dict[str, int]:
        """Every queued event key (any channel) -> the newest alert event's id when it was queued."""
        query = sa.select(outbox.c.event_key, sa.func.min(outbox.c.since_event)).group_by(outbox.c.event_key)
        return {key: int(since) for key, since in self.db.conn.execute(query)}

    def due(self, now: float | None = None) -> list[Notification]:
        """The notifications a sender may claim now, oldest first."""
        query = outbox.select().where(_due(time.time() if now is None else now)).order_by(outbox.c.id)
        found = [_notification(r) for r in self.db.conn.execute(query).mappings()]
        self.db.commit_reads()
        return found

    def claim(self, notification: Notification, by: str, lease_s: float) -> bool:
        """Take ``notification`` for ``lease_s`` seconds, if it is still due; whether we have it."""
        now = time.time()
        result = self.db.conn.execute(
            outbox.update().where(outbox.c.id == notification.id, _due(now))
            .values(state=SENDING, claimed_by=by, claimed_until=now + lease_s))
        self.db.conn.commit()
        return result.rowcount == 1

    def record(self, notification: Notification, by: str, *, error: str | None, retry_at: float | None,
               message_id: str | None = None) -> None:
        """One attempt's outcome: sent (``error`` None); else pending again from ``retry_at``,
        or failed for good when ``retry_at`` is None. Only the claim's holder writes it."""
        now = time.time()
        if error is None:
            values: dict[str, Any] = {"state": SENT, "sent_at": now, "message_id": message_id, "last_error": None}
        else:
            values = {"state": FAILED if retry_at is None else PENDING, "last_error": error,
                      "next_at": now if retry_at is None else retry_at}
        self.db.conn.execute(
            outbox.update().where(outbox.c.id == notification.id, outbox.c.claimed_by == by,
                                  outbox.c.state == SENDING)
            .values(attempts=outbox.c.attempts + 1, claimed_by=None, claimed_until=None, **values))
        self.db.conn.execute(outbox_attempts.insert().values(
            notification_id=notification.id, at=now, channel=notification.channel,
            status="sent" if error is None else "error", error=error, by=by))
        self.db.conn.commit()

    def thread_id(self, summary_id: int) -> str | None:
        """The Message-ID the summary's report went out with, once it has."""
        query = (sa.select(outbox.c.message_id)
                 .where(outbox.c.summary_id == summary_id, outbox.c.message_id.is_not(None))
                 .order_by(outbox.c.id).limit(1))
        return self.db.conn.execute(query).scalar()

    def all(self, state: str | None = None) -> list[Notification]:
        query = outbox.select().order_by(outbox.c.id)
        if state is not None:
            query = query.where(outbox.c.state == state)
        return [_notification(r) for r in self.db.conn.execute(query).mappings()]

    def attempts(self, notification_id: int | None = None) -> list[Attempt]:
        query = outbox_attempts.select().order_by(outbox_attempts.c.id)
        if notification_id is not None:
            query = query.where(outbox_attempts.c.notification_id == notification_id)
        return [Attempt(r["notification_id"], r["at"], r["channel"], r["status"], r["error"], r["by"])
                for r in self.db.conn.execute(query).mappings()]
