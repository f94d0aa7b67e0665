"""What the result-file importers share: the parsed-file model and turning a
schema violation (pydantic) into one line that names the place in the file.

Pure parsing: nothing here touches the database. Any problem with a file is a
:class:`UsageError` naming the file and what is wrong, raised before anything is written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol

from pydantic import Field, ValidationError
from pydantic_core import ErrorDetails

from perflab.model.errors import UsageError
from perflab.model.records import Measurement, MetricInfo, Point
from perflab.model.run_request import Imported, RunRequest

_GZIP_MAGIC = b"\x1f\x8b"

#: Bounds of a plausible value: no benchmark repetition lasts 115 days, no process uses
#: more than 2**64 bytes. Larger values are corruption, not measurements.
MAX_SECONDS = 1e7
MAX_BYTES = float(2**64)

# A measured time or size: a finite number (bool and text refused) within those bounds.
Seconds = Annotated[float, Field(strict=True, ge=0, le=MAX_SECONDS, allow_inf_nan=False)]
Bytes = Annotated[float, Field(strict=True, ge=0, le=MAX_BYTES, allow_inf_nan=False)]


class Repetitions(Protocol):
    """A benchmark's repetitions, each a list of values: a list, or made as the file is read."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Sequence[Measurement]]: ...


@dataclass(frozen=True)
class ImportedBenchmark:
    """One (benchmark, point) of the file with its values, one list per repetition."""

    point: Point
    metrics: list[MetricInfo]
    repetitions: Repetitions
    measured_at: Sequence[float | None] = field(default_factory=list)  # per repetition, if known

    @property
    def n(self) -> int:
        return len(self.repetitions)


@dataclass(frozen=True)
class ImportedFile:
    """A parsed result file, ready to be written as one run."""

    kind: str
    path: str                   # absolute
    sha256: str                 # of the file as read (compressed bytes for .gz)
    host: str
    environment: dict[str, Any]
    benchmarks: list[ImportedBenchmark]

    @property
    def request(self) -> RunRequest:
        return RunRequest(imported=Imported(kind=self.kind, file=self.path, sha256=self.sha256))


class Malformed(Exception):
    """What is wrong with a file, turned into one UsageError line naming the file."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


def require_top_level(data: Any, key: str, expected: str, other_key: str, other_tool: str) -> None:
    """The file is an object with ``key`` (the tool's results); a file of the other tool
    (it has ``other_key``) is named as such."""
    if not isinstance(data, dict):
        raise Malformed(f"the top level is {type(data).__name__}, not an object with \"{key}\"", hint=expected)
    if key not in data:
        hint = f"this looks like a {other_tool} file: use 'perflab import {other_tool}'" if other_key in data \
            else expected
        raise Malformed(f'no "{key}" key', hint=hint)


def fail(path: str | os.PathLike[str], kind: str, error: Malformed) -> UsageError:
    return UsageError(f"cannot import {os.fspath(path)} as {kind} JSON: {error}", hint=error.hint)


def show(value: Any) -> str:
    """A value of the file, short enough for one line."""
    try:
        text = json.dumps(value) if not isinstance(value, float) else repr(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# -- schema errors as one line -------------------------------------------------------------
# Why a value is refused, by pydantic's error type; the message reads "WHERE is VALUE, WHY".
_REASONS = {
    "float_type": "not a number", "float_parsing": "not a number",
    "int_type": "not an integer", "int_parsing": "not an integer", "int_from_float": "not an integer",
    "finite_number": "not a finite number",
    "string_type": "not a string", "list_type": "not a list",
    "dict_type": "not an object", "model_type": "not an object", "model_attributes_type": "not an object",
}


def explain(error: ValidationError, where: Callable[[tuple[int | str, ...]], str]) -> Malformed:
    """The first schema violation as one line; ``where`` names a location in the file's terms."""
    detail: ErrorDetails = error.errors(include_url=False)[0]
    loc, kind, value = tuple(detail["loc"]), detail["type"], detail.get("input")
    ctx = detail.get("ctx") or {}
    place = where(loc)
    if kind == "missing":
        return Malformed(f'{where(loc[:-1])} has no "{loc[-1]}"'.lstrip())
    if kind == "too_short":
        return Malformed(f"{place} is empty")
    if kind in ("greater_than_equal", "greater_than"):
        limit = ctx.get("ge", ctx.get("gt"))
        below = "negative" if limit == 0 and kind == "greater_than_equal" else f"not above {limit:g}" \
            if kind == "greater_than" else f"below {limit:g}"
        return Malformed(f"{place} is {show(value)}: {below}, an impossible value")
    if kind in ("less_than_equal", "less_than"):
        limit = ctx.get("le", ctx.get("lt"))
        return Malformed(f"{place} is {show(value)}: more than {limit:g}, an impossible value")
    if kind == "literal_error":
        return Malformed(f"{place} is {show(value)}, not {ctx.get('expected', 'a known value')}")
    if kind in _REASONS:
        return Malformed(f"{place} is {show(value)}, {_REASONS[kind]}")
    # our own checks (PydanticCustomError) say what is wrong in a whole phrase
    return Malformed(f"{place} {detail['msg']}")


def quoted(key: str) -> str:
    """A key of the file in double quotes, a control character in it escaped (one line)."""
    return json.dumps(key, ensure_ascii=False)


def location(loc: tuple[int | str, ...], words: dict[str, str]) -> str:
    """('results', 0, 'times', 1) -> 'result 1 time 2': an item of a list is counted from 1
    under its singular name; a key is quoted."""
    parts: list[str] = []
    i = 0
    while i < len(loc):
        item = loc[i]
        if isinstance(item, str) and i + 1 < len(loc) and isinstance(loc[i + 1], int) and item in words:
            parts.append(f"{words[item]} {int(loc[i + 1]) + 1}")
            i += 2
            continue
        parts.append(quoted(item) if isinstance(item, str) else f"item {item + 1}")
        i += 1
    return " ".join(parts)
