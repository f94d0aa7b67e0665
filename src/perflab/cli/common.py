"""What every command module of the CLI shares: the store from --db, and warnings."""

from __future__ import annotations

import click


def open_store(ctx: click.Context, *, create: bool):
    """The database named by the top-level --db (or its defaults)."""
    from perflab.store import Store
    return Store(ctx.find_root().obj["db"], create=create)


def warn(message: str) -> None:
    click.echo(f"perflab: warning: {message}", err=True)
