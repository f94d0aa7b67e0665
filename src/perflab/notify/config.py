"""Where notifications go, from the environment (shared by fleet workers and cron jobs),
each variable overridden by the `perflab notify` option of the same name.

    PERFLAB_SMTP            smtp://HOST[:PORT], smtp+starttls://..., smtps://...
    PERFLAB_SMTP_USER       PERFLAB_SMTP_PASSWORD: the login, when the server wants one
    PERFLAB_MAIL_FROM       the sender: perflab <perflab@example.org>
    PERFLAB_MAIL_CC         comma-separated lists in Cc of every mail
    PERFLAB_MAIL_TO         "authors" (default: the culprit's or the range's authors) or "list" (Cc only)
    PERFLAB_MAIL_MAX        at most this many mails per pass; the rest go as one digest (default 10)
    PERFLAB_WEBHOOK         one or more URLs (comma or space separated); slack+https://... posts {"text": ...}
    PERFLAB_WEBHOOK_SECRET  signs each POST: X-Perflab-Signature: sha256=HMAC-SHA256(secret, body)
    PERFLAB_DASHBOARD_URL   the dashboard's base URL: mails and posts link its alert pages
    PERFLAB_NOTIFY_TIMEOUT  seconds a server may take to answer (default 10)
    PERFLAB_NOTIFY_TRIES    tries of one notification before it is failed (default 5)
    PERFLAB_NOTIFY_BACKOFF  seconds before the first retry, doubled at each (default 60, at most 1 h)

Every malformed value is one UsageError line naming the variable (or option) and never
echoing a password or a secret.
"""

from __future__ import annotations

import hashlib
import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.utils import getaddresses, parseaddr

from perflab.model.errors import UsageError
from perflab.model.notify import MAIL, WEBHOOK

SMTP_SCHEMES = {"smtp": 25, "smtp+starttls": 587, "smtps": 465}
WEBHOOK_SCHEMES = ("http", "https", "slack+http", "slack+https")
DEFAULT_MAX_MAILS = 10
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_TRIES = 5
DEFAULT_BACKOFF_S = 60.0

#: option name -> environment variable
VARIABLES = {"smtp": "PERFLAB_SMTP", "smtp_user": "PERFLAB_SMTP_USER", "smtp_password": "PERFLAB_SMTP_PASSWORD",
             "mail_from": "PERFLAB_MAIL_FROM", "mail_cc": "PERFLAB_MAIL_CC", "mail_to": "PERFLAB_MAIL_TO",
             "mail_max": "PERFLAB_MAIL_MAX", "webhook": "PERFLAB_WEBHOOK", "webhook_secret": "PERFLAB_WEBHOOK_SECRET",
             "dashboard_url": "PERFLAB_DASHBOARD_URL", "notify_timeout": "PERFLAB_NOTIFY_TIMEOUT",
             "notify_tries": "PERFLAB_NOTIFY_TRIES", "notify_backoff": "PERFLAB_NOTIFY_BACKOFF"}


@dataclass(frozen=True)
class SmtpServer:
    scheme: str
    host: str
    port: int
    user: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        """How the server is named in a message: never with its login."""
        return f"{self.scheme}://{self.host}:{self.port}"


@dataclass(frozen=True)
class Webhook:
    url: str = field(repr=False)     # may carry a token (Slack's do): never printed nor stored
    slack: bool

    @property
    def channel(self) -> str:
        """The outbox's channel: the host and a hash of the URL, not the URL."""
        host = urllib.parse.urlsplit(self.url).hostname or "?"
        return f"{WEBHOOK} {host}#{hashlib.sha256(self.url.encode()).hexdigest()[:10]}"


@dataclass(frozen=True)
class NotifyConfig:
    smtp: SmtpServer | None = None
    mail_from: str | None = None
    cc: tuple[str, ...] = ()
    to_authors: bool = True
    max_mails: int = DEFAULT_MAX_MAILS
    webhooks: tuple[Webhook, ...] = ()
    secret: str | None = field(default=None, repr=False)
    dashboard_url: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    tries: int = DEFAULT_TRIES
    backoff_s: float = DEFAULT_BACKOFF_S

    @property
    def mails(self) -> bool:
        return self.mail_from is not None

    @property
    def configured(self) -> bool:
        return self.smtp is not None or bool(self.webhooks)

    @property
    def channels(self) -> tuple[str, ...]:
        return (*((MAIL,) if self.smtp is not None else ()), *(w.channel for w in self.webhooks))


def load_config(overrides: Mapping[str, str | None] | None = None,
                environ: Mapping[str, str] | None = None) -> NotifyConfig:
    """The configuration from ``environ`` (default: os.environ), each value of ``overrides``
    (option name -> value, None: not given) taking the variable's place."""
    env = os.environ if environ is None else environ
    given = {name: (overrides or {}).get(name) for name in VARIABLES}
    values = {name: (given[name] if given[name] is not None else env.get(var) or None)
              for name, var in VARIABLES.items()}
    where = {name: (f"--{name.replace('_', '-')}" if given[name] is not None else VARIABLES[name])
             for name in VARIABLES}
    smtp = _smtp(values["smtp"], where["smtp"], values["smtp_user"], values["smtp_password"])
    mail_from = _address(values["mail_from"], where["mail_from"]) if values["mail_from"] else None
    if smtp is not None and mail_from is None:
        raise UsageError(f"{where['smtp']} is set but not PERFLAB_MAIL_FROM: mail needs a From address "
                         "(--mail-from 'perflab <perflab@example.org>')")
    cc = tuple(_address(a, where["mail_cc"]) for a in _split(values["mail_cc"], ","))
    return NotifyConfig(
        smtp=smtp, mail_from=mail_from, cc=cc, to_authors=_to_authors(values["mail_to"], where["mail_to"]),
        max_mails=int(_number(values["mail_max"], where["mail_max"], DEFAULT_MAX_MAILS, minimum=1)),
        webhooks=tuple(_webhook(u, where["webhook"]) for u in _split(values["webhook"], ", ")),
        secret=values["webhook_secret"], dashboard_url=_dashboard(values["dashboard_url"], where["dashboard_url"]),
        timeout_s=_number(values["notify_timeout"], where["notify_timeout"], DEFAULT_TIMEOUT_S, minimum=0.1),
        tries=int(_number(values["notify_tries"], where["notify_tries"], DEFAULT_TRIES, minimum=1)),
        backoff_s=_number(values["notify_backoff"], where["notify_backoff"], DEFAULT_BACKOFF_S, minimum=0))


def _split(text: str | None, separators: str) -> list[str]:
    if not text:
        return []
    for sep in separators[1:]:
        text = text.replace(sep, separators[0])
    return [part.strip() for part in text.split(separators[0]) if part.strip()]


def _smtp(text: str | None, where: str, user: str | None, password: str | None) -> SmtpServer | None:
    if not text:
        return None
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in SMTP_SCHEMES:
        raise UsageError(f"{where}: unknown scheme {parts.scheme + '://' if parts.scheme else 'in ' + _safe(text)!s}; "
                         f"use {', '.join(s + '://HOST:PORT' for s in SMTP_SCHEMES)}")
    if parts.password is not None or parts.username is not None:
        raise UsageError(f"{where}: put the login in PERFLAB_SMTP_USER and PERFLAB_SMTP_PASSWORD, not in the URL")
    try:
        port = parts.port
    except ValueError:
        raise UsageError(f"{where}: port out of range in {_safe(text)} (1-65535)") from None
    if not parts.hostname:
        raise UsageError(f"{where}: no host in {_safe(text)} (smtp://HOST:PORT)")
    if port == 0:
        raise UsageError(f"{where}: port out of range in {_safe(text)} (1-65535)")
    if password and not user:
        raise UsageError("PERFLAB_SMTP_PASSWORD is set without PERFLAB_SMTP_USER")
    return SmtpServer(parts.scheme, parts.hostname, port or SMTP_SCHEMES[parts.scheme], user, password)


def _safe(text: str) -> str:
    """A URL as it may be printed: without its login."""
    parts = urllib.parse.urlsplit(text)
    netloc = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc, query="", fragment=""))


def _address(text: str, where: str) -> str:
    pairs = getaddresses([text])
    name, address = parseaddr(text)
    if len(pairs) != 1 or "@" not in address or address.startswith("@") or address.endswith("@"):
        raise UsageError(f"{where}: {text!r} is not a mail address (name@domain)")
    return f"{name} <{address}>" if name else address


def _to_authors(text: str | None, where: str) -> bool:
    if text in (None, "", "authors"):
        return True
    if text == "list":
        return False
    raise UsageError(f"{where}: {text!r}: choose 'authors' (the culprit's or the range's) or 'list' (Cc only)")


def _number(text: str | None, where: str, default: float, *, minimum: float) -> float:
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{where}: {text!r} is not a number") from None
    if not value >= minimum or value > 1e6:
        raise UsageError(f"{where}: {text} is out of range ({minimum:g} to 1000000)")
    return value


def _webhook(text: str, where: str) -> Webhook:
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in WEBHOOK_SCHEMES:
        raise UsageError(f"{where}: unknown scheme in {_safe(text)}; use http://, https:// or slack+https://")
    try:
        parts.port   # noqa: B018 - raises on a port out of range
    except ValueError:
        raise UsageError(f"{where}: port out of range in {_safe(text)} (1-65535)") from None
    if not parts.hostname:
        raise UsageError(f"{where}: no host in {_safe(text)}")
    slack = parts.scheme.startswith("slack+")
    return Webhook(text.removeprefix("slack+"), slack)


def _dashboard(text: str | None, where: str) -> str | None:
    if not text:
        return None
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{where}: {_safe(text)} is not an http:// or https:// URL")
    return text.rstrip("/")
