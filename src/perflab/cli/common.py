"""What every command module of the CLI shares: the store from --db, and warnings."""

from __future__ import annotations

import os

import click

from perflab.model.errors import UsageError

# this invocation's arguments (set by main), kept with a run to reproduce it
COMMAND_LINE: list[str] = []


def open_store(ctx: click.Context, *, create: bool):
    """The database named by the top-level --db (or its defaults)."""
    from perflab.store import Store
    return Store(ctx.find_root().obj["db"], create=create)


def warn(message: str) -> None:
    click.echo(f"perflab: warning: {message}", err=True)


def check_output(path: str) -> None:
    """A file the command will write: its directory must exist (said before any work)."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"cannot write {path}: directory {directory} does not exist")


def write_output(path: str, text: str) -> None:
    """Write a command's output file; a path that cannot be written is one clear line."""
    check_output(path)
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error.strerror}") from None


DEFAULT_WIDTH = 120   # text tables fit a mailing-list post unless the terminal is wider


def terminal_width() -> int:
    """DEFAULT_WIDTH, or the terminal's columns when stdout is a wider terminal."""
    import shutil
    import sys
    if not sys.stdout.isatty():
        return DEFAULT_WIDTH
    return max(DEFAULT_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)
