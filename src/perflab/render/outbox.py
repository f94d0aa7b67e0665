"""`perflab notify --list`: the outbox, one line per notification."""

from __future__ import annotations

import time

from perflab.model.notify import Notification
from perflab.render.texttable import format_table


def _when(at: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at)) if at else "-"


def render_outbox(notifications: list[Notification], now: float) -> str:
    if not notifications:
        return "the outbox is empty\n"
    rows = [[str(n.id), n.state, n.channel, n.event.key, str(n.attempts),
             _when(n.sent_at) if n.sent_at else ("due" if n.next_at <= now else _when(n.next_at)),
             (n.last_error or "")[:60]]
            for n in notifications]
    return format_table(["id", "state", "channel", "event", "tries", "sent / next (UTC)", "last error"], rows,
                        align="lllllll") + "\n"
