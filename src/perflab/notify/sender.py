"""One pass of the sender: queue the new events, claim what is due, deliver, record.

Queueing and claiming go through the store (store/outbox.py: each event queued once per
channel; of two senders only one claims a row). Messages are composed here, from the
summary's facts (notify/facts.py), and delivered in threads, so a receiver that hangs costs
its own timeout and delays nothing else; every attempt is recorded by this thread. A
failed try is due again after the backoff (doubled at each try, at most an hour), and
failed for good after its last. At most ``max_mails`` mails go out per pass: over that,
the last one is a digest of the rest.
"""

from __future__ import annotations

import os
import socket
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from perflab.model.errors import UsageError
from perflab.model.notify import MAIL, PENDING, REPORTED, Event, Notification
from perflab.notify import mail, webhook
from perflab.notify.config import NotifyConfig
from perflab.notify.events import pending_events
from perflab.notify.facts import SummaryFacts, headline_alert, read_summary
from perflab.store import Store

MAX_BACKOFF_S = 3600.0
MAX_THREADS = 8


@dataclass
class Delivery:
    """What one message carries (a digest: several notifications) and how it is sent."""

    notifications: tuple[Notification, ...]
    channel: str
    name: str                                  # the file a dry run writes
    payload: bytes = b""
    send: Callable[[], None] | None = None     # network only: runs in a thread
    message_id: str | None = None
    error: str | None = None                   # composing failed: nothing to send


@dataclass(frozen=True)
class PassReport:
    queued: int
    sent: tuple[str, ...] = ()                 # "mail: summary 3 reported"
    problems: tuple[str, ...] = ()             # one line per channel that failed
    pending: int = 0
    failed: int = 0
    written: tuple[str, ...] = field(default=())


def sender_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def notify_pass(store: Store, config: NotifyConfig) -> PassReport:
    """Queue the events not queued yet, deliver every due notification of the configured
    channels once; what went out and what did not (a line per failing channel)."""
    queued = store.outbox.enqueue(pending_events(store), config.channels)
    by = sender_name()
    lease = 4 * config.timeout_s + 60
    mine = [n for n in store.outbox.due() if n.channel in config.channels and store.outbox.claim(n, by, lease)]
    deliveries = plan(store, config, mine)
    sendable = [d for d in deliveries if d.send is not None and d.error is None]
    if sendable:
        with ThreadPoolExecutor(max_workers=min(MAX_THREADS, len(sendable))) as pool:
            for d, error in zip(sendable, pool.map(_deliver, sendable)):
                d.error = error
    return _record(store, config, by, queued, deliveries)


def _deliver(d: Delivery) -> str | None:
    assert d.send is not None
    try:
        d.send()
    except webhook.DeliveryError as error:
        return str(error)
    except OSError as error:   # refused, unreachable, timed out: the socket's own words
        return f"cannot connect ({error.strerror or error})" if error.strerror else f"no answer ({error})"
    except Exception as error:   # smtplib's: the server's answer, one line
        text = str(error).strip()
        return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"
    return None


def _record(store: Store, config: NotifyConfig, by: str, queued: int, deliveries: list[Delivery]) -> PassReport:
    sent: list[str] = []
    errors: dict[str, str] = {}                      # channel -> its last error this pass
    stay: Counter[str] = Counter()
    gone: Counter[str] = Counter()
    for d in deliveries:
        for n in d.notifications:
            retry = retry_at(config, n.attempts + 1) if d.error is not None else None
            store.outbox.record(n, by, error=d.error, retry_at=retry, message_id=d.message_id)
            if d.error is None:
                sent.append(f"{n.channel}: {n.event.key}")
                continue
            errors[d.channel] = d.error
            (stay if retry is not None else gone)[d.channel] += 1
    problems = [f"{_channel_name(config, channel)}: {error}: " + ", ".join(
                    ([f"{_count(stay[channel], 'notification')} pending, tried again later"] if stay[channel] else [])
                    + ([f"{_count(gone[channel], 'notification')} failed after the last of {config.tries} tries"]
                       if gone[channel] else []))
                for channel, error in errors.items()]
    return PassReport(queued, tuple(sent), tuple(problems), sum(stay.values()), sum(gone.values()))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _channel_name(config: NotifyConfig, channel: str) -> str:
    if channel == MAIL and config.smtp is not None:
        return f"the SMTP server {config.smtp.name}"
    return channel


def retry_at(config: NotifyConfig, tries: int) -> float | None:
    """When a notification tried ``tries`` times is due again; None after its last try."""
    if tries >= config.tries:
        return None
    return time.time() + min(MAX_BACKOFF_S, config.backoff_s * 2 ** (tries - 1))


def plan(store: Store, config: NotifyConfig, notifications: list[Notification]) -> list[Delivery]:
    """The messages of ``notifications``: a mail each (over the limit: the rest in a digest),
    a POST each."""
    cache: dict[int, SummaryFacts | str] = {}

    def facts(summary_id: int) -> SummaryFacts | str:
        if summary_id not in cache:
            try:
                cache[summary_id] = read_summary(store, summary_id)
            except Exception as error:   # a summary that cannot be read fails its notification only
                cache[summary_id] = f"cannot compose: {type(error).__name__}: {error}"
        return cache[summary_id]

    mails = [n for n in notifications if n.channel == MAIL]
    over = len(mails) > config.max_mails
    alone = mails[:config.max_mails - 1] if over else mails
    out = [_mail(config, n, facts(n.event.summary_id)) for n in alone]
    if over:
        out.append(_digest(store, config, mails[len(alone):]))
    hooks = {h.channel: h for h in config.webhooks}
    for n in notifications:
        if n.channel in hooks:
            out.append(_post(config, hooks[n.channel], n, facts(n.event.summary_id)))
    return out


def _name(n: Notification, ext: str) -> str:
    channel = n.channel.replace(" ", "-").replace("#", "-")
    number = n.id if n.id > 0 else f"new{-n.id}"   # a dry run's events not queued yet
    return f"summary-{n.event.summary_id}-{n.event.kind}-{number}-{channel}.{ext}"


def _mail(config: NotifyConfig, n: Notification, facts: SummaryFacts | str) -> Delivery:
    d = Delivery((n,), n.channel, _name(n, "eml"))
    if isinstance(facts, str):
        d.error = facts
        return d
    body = (mail.report_body(facts, config) if n.event.kind == REPORTED
            else mail.follow_up_body(facts, n.event, config))
    try:
        message = mail.compose(facts, n.event, config, body)
    except mail.NoRecipient as error:
        d.error = str(error)
        return d
    d.payload, d.message_id = message.as_bytes(), message["Message-ID"]
    server = config.smtp
    if server is not None:
        d.send = lambda: mail.send(server, message, config.timeout_s)
    return d


def _digest(store: Store, config: NotifyConfig, rest: list[Notification]) -> Delivery:
    """One mail naming each of ``rest``: its summary's largest alert, as stored (no report)."""
    lines = []
    for n in rest:
        summary = store.alerts.summary(n.event.summary_id)
        a = headline_alert(summary)
        link = f"{config.dashboard_url}/alerts/{a.id}" if config.dashboard_url else None
        lines.append((f"{summary.first_bad[:12]}: {a.benchmark}.{a.metric} {a.oriented_pct:+.1f}% {a.kind} "
                      f"({n.event.kind}; alert {a.id})", link))
    message = mail.digest(lines, config, f"{rest[0].id}.{len(rest)}")
    d = Delivery(tuple(rest), MAIL, _name(rest[0], "eml").replace("summary-", "digest-", 1), message.as_bytes(),
                 message_id=message["Message-ID"])
    server = config.smtp
    if server is not None:
        d.send = lambda: mail.send(server, message, config.timeout_s)
    return d


def _post(config: NotifyConfig, hook: webhook.Webhook, n: Notification, facts: SummaryFacts | str) -> Delivery:
    d = Delivery((n,), n.channel, _name(n, "json"))
    if isinstance(facts, str):
        d.error = facts
        return d
    d.payload = webhook.body(hook, webhook.document(facts, n.event, config))
    payload, secret = d.payload, config.secret
    d.send = lambda: webhook.post(hook, payload, secret, config.timeout_s)
    return d


def dry_run(store: Store, config: NotifyConfig, directory: Path) -> PassReport:
    """Write each message a pass would send now (``.eml``, ``.json``) into ``directory``;
    the outbox is left as it is."""
    channels = (*((MAIL,) if config.mails else ()), *(h.channel for h in config.webhooks))
    if not channels:
        raise UsageError("nothing to write: set PERFLAB_MAIL_FROM (--mail-from) or PERFLAB_WEBHOOK (--webhook)")
    due = [n for n in store.outbox.due() if n.channel in channels]
    new = [_unqueued(e, channel, -(i + 1)) for i, e in enumerate(pending_events(store)) for channel in channels]
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"--dry-run {directory}: {error.strerror}") from None
    written = []
    for d in plan(store, replace(config, smtp=None), [*due, *new]):
        if d.error is None:
            (directory / d.name).write_bytes(d.payload)
            written.append(str(directory / d.name))
    return PassReport(0, written=tuple(written))


def _unqueued(event: Event, channel: str, number: int) -> Notification:
    return Notification(number, channel, event, PENDING, 0, time.time(), time.time(), None, None, None)
