"""perflab notify: deliver the outbox's due notifications once (for cron), list them, or
write them to files (docs/notify.md)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from perflab.cli.common import open_store
from perflab.model.errors import EnvironmentProblem, UsageError
from perflab.model.notify import PENDING, SENDING


def _options(function):
    """An option per variable of notify/config.py: --smtp overrides PERFLAB_SMTP, and so on."""
    from perflab.notify.config import VARIABLES
    for name, variable in reversed(VARIABLES.items()):
        secret = "password" in name or "secret" in name
        function = click.option(f"--{name.replace('_', '-')}", name, metavar="VALUE",
                                help=f"Overrides ${variable}" + (" (better kept in the environment)." if secret
                                                                 else "."))(function)
    return function


@click.command()
@click.option("--list", "listing", is_flag=True, help="Show the outbox: pending, sent and failed notifications.")
@click.option("--dry-run", "dry_run", metavar="DIR", type=click.Path(file_okay=False),
              help="Write each message that would be sent now to DIR (.eml, .json) instead of sending.")
@_options
@click.pass_context
def notify(ctx: click.Context, listing: bool, dry_run: str | None, **overrides: str | None) -> None:
    """Send what is due once: each confirmed alert summary's report, and its follow-ups.

    \b
      PERFLAB_SMTP=smtp://mail:25 PERFLAB_MAIL_FROM=perflab@example.org perflab notify
      perflab notify --list                       pending, sent and failed notifications
      perflab notify --dry-run out/               the messages, as files, nothing sent

    Exits 3, one line per channel, when a server could not be reached; what was not sent
    stays pending and goes with a later pass.
    """
    from perflab.notify.config import load_config
    from perflab.notify.sender import dry_run as write_messages
    from perflab.notify.sender import notify_pass
    from perflab.render.outbox import render_outbox
    if listing and dry_run is not None:
        raise UsageError("--list shows the outbox, --dry-run writes the messages: one or the other")
    if listing:
        with open_store(ctx, create=False) as store:
            click.echo(render_outbox(store.outbox.all(), time.time()), nl=False)
        return
    config = load_config(overrides)
    if dry_run is not None:
        with open_store(ctx, create=False) as store:
            done = write_messages(store, config, Path(dry_run))
        for path in done.written:
            click.echo(path)
        click.echo(f"perflab: wrote {len(done.written)} message(s); nothing sent", err=True)
        return
    if not config.configured:
        raise EnvironmentProblem("nowhere to send: set PERFLAB_SMTP (with PERFLAB_MAIL_FROM) or PERFLAB_WEBHOOK",
                                 hint="docs/notify.md")
    with open_store(ctx, create=False) as store:   # a store that is not there has nothing to send
        done = notify_pass(store, config)
        waiting = [n for n in store.outbox.all() if n.state in (PENDING, SENDING)]
    for line in done.sent:
        click.echo(f"sent {line}")
    later = f" (the next due {_utc(min(n.next_at for n in waiting))})" if waiting else ""
    click.echo(f"perflab: {done.queued} new event(s) queued, {len(done.sent)} sent, {done.failed} failed "
               f"for good; {len(waiting)} pending in the outbox{later}", err=True)
    if done.problems:
        raise EnvironmentProblem("; ".join(done.problems))


def _utc(at: float) -> str:
    return time.strftime("%H:%M:%S UTC", time.gmtime(at))


COMMANDS: list[click.Command] = [notify]
