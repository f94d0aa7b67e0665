"""What perflab accepts before any work: row ids, counts of repetitions, finite numbers.

Every check here runs where an argument enters (the CLI's option types, the dashboard's
path ids, a RunRequest), so a typo ends as one line and exit 2 instead of an overflow in
the database driver or a plan that fills memory. docs/limits.md lists the limits.
"""

from __future__ import annotations

import math

from perflab.model.errors import UsageError

MAX_ID = 2**63 - 1   # the largest id SQLite's and PostgreSQL's 64-bit integer keys hold

# Repetitions (-n, --runs, -M/--max-runs, --min-runs, --warmup) per point. A million
# samples of even 1 ms is 17 minutes per point: a larger count is far likelier a typo
# than a plan, and the sample table of one run stays within what `compare` reads at once.
MAX_REPETITIONS = 1_000_000
# Separate runs of one thing (calibrate's -k): each is a whole run with its own start-up.
MAX_SEPARATE_RUNS = 10_000


_ID_DIGITS = len(str(MAX_ID))


def _digits_value(text: str) -> int | None:
    """ASCII digits as a number, None for anything else; more digits than any id has read as
    MAX_ID + 1, never through int() (Python refuses to convert over 4,300 digits)."""
    text = text.strip()
    if not (text.isascii() and text.isdigit()):
        return None
    significant = text.lstrip("0")
    return int(significant or "0") if len(significant) <= _ID_DIGITS else MAX_ID + 1


def is_id(text: str) -> bool:
    """Whether ``text`` is a row id: ASCII digits naming 1..MAX_ID ('0012' is 12)."""
    value = _digits_value(text)
    return value is not None and 0 < value <= MAX_ID


def parse_id(text: str | int, what: str = "id") -> int:
    """``text`` as a row id (1..MAX_ID), else UsageError in one line naming ``what``."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    elif isinstance(text, str) and (digits := _digits_value(text)) is not None:
        if not 0 < digits <= MAX_ID:
            raise UsageError(f"bad {what} {shorten(text.strip())}: expected a whole number from 1 to {MAX_ID}")
        value = digits
    else:
        shown = str(text)
        raise UsageError(f"bad {what} {shorten(shown)!r}: expected a whole number from 1 to {MAX_ID}")
    if not 0 < value <= MAX_ID:
        raise UsageError(f"bad {what} {shorten(str(value))}: expected a whole number from 1 to {MAX_ID}")
    return value


def check_count(value: int, option: str, *, least: int = 1, most: int = MAX_REPETITIONS) -> int:
    """A count option within [least, most], else UsageError naming the option and the range."""
    if not least <= value <= most:
        raise UsageError(f"{option} must be from {least:,} to {most:,}, got {shorten(str(value))}")
    return value


REPETITIONS = "repetitions (-n)"   # the option and the suite key, as every refusal names them


def check_repetitions(value: object) -> int:
    """The one check of a repetition count (a suite file's ``repetitions``, a RunRequest's,
    -n's text through parse_repetitions): an int in [1, MAX_REPETITIONS], else the one
    UsageError line every path shows."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad_repetitions(shorten(repr(value)))
    if not 1 <= value <= MAX_REPETITIONS:
        raise _bad_repetitions(shorten(str(value)))
    return value


def parse_repetitions(text: str) -> int:
    """-n/--runs as typed: what int() reads ("+3", "1_000"), then check_repetitions."""
    text = text.strip()
    if text.isascii() and text.isdigit() and len(text) > len(str(MAX_REPETITIONS)):
        raise _bad_repetitions(shorten(text))   # a number, out of range: int() refuses past 4,300 digits
    try:
        number = int(text)
    except ValueError:
        raise _bad_repetitions(shorten(repr(text))) from None
    if not 1 <= number <= MAX_REPETITIONS:
        raise _bad_repetitions(shorten(text))
    return number


def _bad_repetitions(shown: str) -> UsageError:
    return UsageError(f"{REPETITIONS} must be a whole number from 1 to {MAX_REPETITIONS:,}, got {shown}")


def check_number(value: float, option: str, *, least: float | None = None, most: float | None = None,
                 open_low: bool = False, open_high: bool = False) -> float:
    """A finite number within the bounds (open or closed), else UsageError in one line."""
    low_ok = least is None or (value > least if open_low else value >= least)
    high_ok = most is None or (value < most if open_high else value <= most)
    if not math.isfinite(value) or not low_ok or not high_ok:
        raise UsageError(f"{option} must be {describe_range(least, most, open_low, open_high)}, "
                         f"got {shorten(repr(value) if not math.isfinite(value) else f'{value:g}')}")
    return value


def describe_range(least: float | None, most: float | None, open_low: bool = False,
                   open_high: bool = False) -> str:
    """'a finite number >= 0', 'in (0, 1)', ...: the words of check_number's refusal."""
    if least is not None and most is not None:
        return f"in {'(' if open_low else '['}{least:g}, {most:g}{')' if open_high else ']'}"
    if least is not None:
        return f"a finite number {'>' if open_low else '>='} {least:g}"
    if most is not None:
        return f"a finite number {'<' if open_high else '<='} {most:g}"
    return "a finite number"


def shorten(text: str, width: int = 40) -> str:
    """A value as echoed in an error: a 10,000-digit typo does not fill the terminal."""
    return text if len(text) <= width else f"{text[:20]}...({len(text)} characters)"
