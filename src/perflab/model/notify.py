"""Notifications as data: the outbox's rows and their delivery attempts (notify/, store/outbox.py).

One notification is one event of one alert summary for one channel (the mail, or one
webhook). Its key (channel, event key) is unique: an event is queued once, whoever
derives it. A sender claims it (``SENDING``, for a lease), delivers, and records the
attempt: ``SENT``, or back to ``PENDING`` with a later ``next_at``, or ``FAILED`` after
its last try.
"""

from __future__ import annotations

from dataclasses import dataclass

PENDING, SENDING, SENT, FAILED = "pending", "sending", "sent", "failed"
OUTBOX_STATES = (PENDING, SENDING, SENT, FAILED)

# the events of a summary people hear of: its report (confirmed, with the bisect's answer
# when there is one), then the follow-ups in its thread
REPORTED = "reported"
BISECTED = "bisected"
# and model.alerts' RECOVERED and WITHDRAWN (the robot's rerun did not reproduce it: noise)
FOLLOW_UPS = (BISECTED, "recovered", "withdrawn", "fixed", "invalid", "wontfix")

MAIL = "mail"
WEBHOOK = "webhook"


@dataclass(frozen=True)
class Event:
    """Something that happened to a summary, once: ``key`` names it for good."""

    key: str                 # "summary 3 reported", "summary 3 fixed 41" (the triage event's id)
    kind: str                # REPORTED or one of FOLLOW_UPS
    summary_id: int
    note: str = ""
    since_event: int = 0     # the newest alert event's id when it happened: its follow-ups come after


@dataclass(frozen=True)
class Notification:
    id: int
    channel: str             # MAIL, or "webhook HOST#HASH" (never the URL: it may hold a token)
    event: Event
    state: str
    attempts: int
    created_at: float
    next_at: float
    sent_at: float | None
    message_id: str | None
    last_error: str | None


@dataclass(frozen=True)
class Attempt:
    notification_id: int
    at: float
    channel: str
    status: str              # "sent" or "error"
    error: str | None
    by: str
