"""What every command module of the CLI shares: the store from --db, and warnings."""

from __future__ import annotations

import math
import os

import click

from perflab.model.errors import UsageError
from perflab.model.limits import MAX_REPETITIONS, parse_id

# this invocation's arguments (set by main), kept with a run to reproduce it
COMMAND_LINE: list[str] = []


def open_store(ctx: click.Context, *, create: bool):
    """The database named by the top-level --db (or its defaults)."""
    from perflab.store import Store
    return Store(ctx.find_root().obj["db"], create=create)


class RowId(click.ParamType):
    """A row id argument (a run's, an alert's, a job's): 1..2^63-1, checked before the store."""

    name = "id"

    def __init__(self, what: str = "id"):
        self.what = what

    def convert(self, value, param, ctx) -> int:
        return value if isinstance(value, int) else parse_id(value, self.what)


class Finite(click.FloatRange):
    """A float option that must be finite (no nan, inf or 1e400) and within its range."""

    name = "number"

    def convert(self, value, param, ctx) -> float:
        number = click.FLOAT.convert(value, param, ctx)  # a float, not yet in range
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)


def count(most: int = MAX_REPETITIONS, least: int = 1) -> click.IntRange:
    """A count option (repetitions, rounds, runs): its range is checked and shown in --help."""
    return click.IntRange(least, most)


SECONDS = Finite(min=0, min_open=True)
RATE = Finite(min=0, max=1, min_open=True, max_open=True)   # a probability: alpha, fdr, confidence
SEED = click.IntRange(0, 2**64 - 1)   # recorded in the run's spec: a JSON number every store keeps


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
