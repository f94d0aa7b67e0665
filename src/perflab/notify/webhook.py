"""Webhooks: one JSON document POSTed per event, signed when a secret is set.

The document carries the event, the summary, each alert's numbers, the commits with
subject and author, and links; a ``slack+https://`` hook gets Slack's form instead, one
``text`` field. With a secret, ``X-Perflab-Signature: sha256=HEX`` is the HMAC-SHA256 of
the exact body bytes with the secret as key (GitHub's scheme): a receiver recomputes it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import urllib.error
import urllib.request
from typing import Any

from perflab import __version__
from perflab.model.alerts import Alert
from perflab.model.notify import Event
from perflab.notify.config import NotifyConfig, Webhook
from perflab.notify.facts import Commit, SummaryFacts
from perflab.notify.mail import alert_link, subject

SIGNATURE_HEADER = "X-Perflab-Signature"


def document(facts: SummaryFacts, event: Event, config: NotifyConfig) -> dict[str, Any]:
    s = facts.summary
    return {
        "event": event.kind, "key": event.key, "note": event.note, "subject": subject(facts),
        "summary": {"id": s.id, "state": s.state, "last_good": s.last_good, "first_bad": s.first_bad,
                    "repo": facts.repo, "branch": facts.branch},
        "headline": {"alert": facts.headline.id, "stat": facts.stat, "change": facts.shift, "kind": facts.kind},
        "alerts": [_alert(a) for a in s.alerts],
        "culprit": _commit(facts.culprit) if facts.culprit else None,
        "commits": [_commit(c) for c in facts.commits],
        "links": {"alert": alert_link(config, facts),
                  "dashboard": config.dashboard_url},
        "report": facts.report_text,
    }


def _alert(a: Alert) -> dict[str, Any]:
    def number(x: float) -> float | None:
        return x if math.isfinite(x) else None
    return {"id": a.id, "host": a.host, "benchmark": a.benchmark, "params": a.params, "metric": a.metric,
            "unit": a.unit, "direction": a.direction, "kind": a.kind, "status": a.status, "state": a.state,
            "before": number(a.before), "after": number(a.after), "change_pct": number(a.change_pct),
            "oriented_pct": number(a.oriented_pct), "p_value": number(a.p_value), "recovered": a.recovered,
            "method": a.method}


def _commit(c: Commit) -> dict[str, str]:
    return {"sha": c.sha, "subject": c.subject, "author": c.author, "email": c.email}


def slack_document(full: dict[str, Any]) -> dict[str, Any]:
    """Slack's incoming-webhook form: one line of text, with the alert's link."""
    what = full["subject"] if full["event"] == "reported" else f"{full['event']}: {full['subject']}"
    link = full["links"]["alert"]
    return {"text": f"{what} <{link}|alert {full['headline']['alert']}>" if link else what}


def body(hook: Webhook, full: dict[str, Any]) -> bytes:
    return json.dumps(slack_document(full) if hook.slack else full, sort_keys=True).encode()


def signature(secret: str, payload: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), payload, hashlib.sha256).hexdigest()


def post(hook: Webhook, payload: bytes, secret: str | None, timeout_s: float) -> None:
    """POST ``payload``; raises DeliveryError unless the receiver answers 2xx in time."""
    headers = {"Content-Type": "application/json", "User-Agent": f"perflab/{__version__}"}
    if secret:
        headers[SIGNATURE_HEADER] = signature(secret, payload)
    request = urllib.request.Request(hook.url, data=payload, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            answer.read(65536)
    except urllib.error.HTTPError as error:
        raise DeliveryError(f"answered {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise DeliveryError(f"no answer ({reason})") from None


class DeliveryError(Exception):
    """One line: why a receiver did not take a notification (never its URL: it may hold a token)."""
