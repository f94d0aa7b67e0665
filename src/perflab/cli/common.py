"""What every command module of the CLI shares: the store from --db, and warnings."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from typing import Any

import click

from perflab.model.errors import UsageError
from perflab.model.limits import MAX_REPETITIONS, check_repetitions, is_id, parse_id, parse_repetitions, shorten
from perflab.model.output_formats import FormatRegistry

# this invocation's arguments (set by main), kept with a run to reproduce it
COMMAND_LINE: list[str] = []


# Help text is wrapped by textwrap, which breaks after hyphens, at any space and inside a word
# longer than the line: `perf-stat,perf-` / `profile`, `[default:` / `0]`. While wrapping,
# hyphens and the spaces inside click's brackets stand in as characters it never breaks at, and
# a list (`a,b,c`, `[x|y]`) gets a break opportunity after each separator (a marked space);
# the finished help gets the original text back.
_HYPHEN, _SPACE, _MARK = "\u2011", "\u00a0", "\u2063"
_BRACKETED = re.compile(r"\[(?:default|env var|required)[^\]]*\]")
_SEPARATOR = re.compile(r"([,|])(?=[^\s\]\d])")  # not before a digit: 10,000 stays whole


def _glue(text: str) -> str:
    text = _BRACKETED.sub(lambda m: m.group(0).replace(" ", _SPACE), text)
    return _SEPARATOR.sub(rf"\1{_MARK} ", text.replace("-", _HYPHEN))


def _unglue(text: str) -> str:
    return text.replace(f"{_MARK} ", "").replace(_MARK, "").replace(_HYPHEN, "-").replace(_SPACE, " ")


class HelpFormatter(click.HelpFormatter):
    """click's formatter that breaks lines only between words, never inside a name."""

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        super().write_usage(prog, _glue(args), prefix)

    def write_text(self, text: str) -> None:
        super().write_text(_glue(text))

    def write_dl(self, rows, col_max: int = 30, col_spacing: int = 2) -> None:
        super().write_dl([(_glue(term), _glue(text)) for term, text in rows], col_max, col_spacing)

    def getvalue(self) -> str:
        return _unglue(super().getvalue())


class Context(click.Context):
    formatter_class = HelpFormatter


def with_help_formatter(command: click.Command) -> click.Command:
    """``command`` (and a group's subcommands) laid out by ``HelpFormatter``."""
    command.context_class = Context
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            with_help_formatter(sub)
    return command


def open_store(ctx: click.Context, *, create: bool):
    """The database named by the top-level --db (or its defaults)."""
    from perflab.store import Store
    return Store(ctx.find_root().obj["db"], create=create)


def store_exists(ctx: click.Context) -> bool:
    """Whether --db names a store to read (a URL, or an SQLite file that is there); a URL
    perflab does not store in, or a name no file system holds, is refused here."""
    from perflab.store import location
    target = location.resolve(ctx.find_root().obj["db"])
    if location.is_url(target) or os.path.lexists(os.path.expanduser(target)):
        return True
    if len(os.path.basename(target).encode()) > 255 or len(target.encode()) >= 4096:
        raise UsageError(f"cannot use the database {shorten(target)}: File name too long")
    folder = os.path.dirname(os.path.abspath(os.path.expanduser(target)))
    if not os.path.isdir(folder) and target != str(location.default_path()):
        raise UsageError(f"no perflab database at {target}: no such directory {folder}", hint="pass another --db")
    return False


class RowId(click.ParamType):
    """A row id argument (a run's, an alert's, a job's): 1..2^63-1, checked before the store."""

    name = "id"

    def __init__(self, what: str = "id"):
        self.what = what

    def convert(self, value, param, ctx) -> int:
        return value if isinstance(value, int) else parse_id(value, self.what)


class Text(click.ParamType):
    """A name the user gives (a label, a benchmark name, who triages): not empty, and for a
    label not a run id, since `show 5` looks ids up first and would never find label 5."""

    name = "text"

    def __init__(self, *, label: bool = False):
        self.label = label

    def convert(self, value, param, ctx) -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail("is empty", param, ctx)
        if self.label and is_id(value):
            self.fail(f"{value!r} reads as a run id: a label needs a character other than a digit", param, ctx)
        return value


LABEL = Text(label=True)
NAME = Text()


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


class Repetitions(click.IntRange):
    """-n/--runs: shown in --help as a count range; read by model.limits.parse_repetitions, whose
    refusal is the one line a suite file and a RunRequest get too (check_repetitions)."""

    def __init__(self) -> None:
        super().__init__(1, MAX_REPETITIONS)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        return check_repetitions(value) if isinstance(value, int) else parse_repetitions(str(value))


REPETITIONS = Repetitions()
SECONDS = Finite(min=0, min_open=True)
RATE = Finite(min=0, max=1, min_open=True, max_open=True)   # a probability: alpha, fdr, confidence
SEED = click.IntRange(0, 2**64 - 1)   # recorded in the run's spec: a JSON number every store keeps


def format_option(formats: FormatRegistry[Any], more: str = "") -> Callable[[Any], Any]:
    """--format FMT: its choices, default and one-line helps from the family's registry;
    ``more`` adds a sentence about the option itself."""
    return click.option("--format", "fmt", type=click.Choice(formats.names), default=formats.default,
                        show_default=True, help=" ".join(text for text in (more, formats.help()) if text))


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
