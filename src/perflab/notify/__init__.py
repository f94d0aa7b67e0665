"""Reports reach people: the outbox's sender, mail (smtplib) and webhooks (docs/notify.md).

``send_after_pass`` is what the robot calls after each pass (`perflab watch`, `alerts
--update`): it never raises, so a mail server down or a receiver that hangs costs the
robot one warning line and the time of one timeout, and what was not delivered stays in
the outbox for the next pass.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from perflab.notify.config import NotifyConfig
from perflab.store import Store


def send_after_pass(store: Store, config: NotifyConfig, warn: Callable[[str], None],
                    say: Callable[[str], None] | None = None) -> None:
    """One sender pass if notifications are configured: what went out to ``say`` (default
    ``warn``), its problems as warnings; nothing raised."""
    if not config.configured:
        return
    from perflab.notify.sender import notify_pass
    try:
        done = notify_pass(store, config)
    except Exception as error:   # the robot goes on: the outbox keeps what was not sent
        warn(f"notify: {type(error).__name__}: {str(error).strip()[:300]}")
        with contextlib.suppress(Exception):   # leave the robot's connection usable
            store.conn.rollback()
        return
    for line in done.sent:
        (say or warn)(f"notify: sent {line}")
    for line in done.problems:
        warn(f"notify: {line}")
