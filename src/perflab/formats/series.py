"""Series files for `perflab changepoints`: CSV or JSON into named numeric columns.

CSV (Otava's input shape): a header naming the columns, then one row per point. A column
named like a time or commit (time, timestamp, date, commit, sha, hash, revision, version,
label, run, build) labels the points; other all-text columns are attributes and ignored;
every other column is a metric. An empty cell or nan/null/none/na is a missing value.
Consecutive rows with the same label are several samples of one point (one commit).

JSON: a list of numbers (one column, "value"); a list of lists (several samples per
point); or a list of objects whose numeric (or list-of-numbers) fields are metrics and
whose time/commit-like field labels the points (consecutive equal labels: one point,
as in CSV). null is a missing value.

Every malformed input raises one UsageError line naming the file and, where there is one,
the line or item: no header, a non-numeric value in a metric, rows of the wrong width,
an empty file, bad JSON.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab.formats.jsontext import parse_json
from perflab.model.errors import UsageError

#: Column names that label points rather than measure them (compared lower-case).
LABEL_NAMES = ("time", "timestamp", "date", "datetime", "commit", "sha", "hash", "revision",
               "rev", "version", "label", "run", "build", "id")
_MISSING = {"", "nan", "null", "none", "na", "n/a", "-"}
#: Larger magnitudes are dropped (counted in SeriesFile.dropped): the detectors sum squares,
#: and 1e150² over 1e8 points is still below float's 1.8e308 (1e300 or inf would overflow).
MAX_MAGNITUDE = 1e150


@dataclass(frozen=True)
class SeriesFile:
    """Named metric columns over the same points, each point a tuple of samples.

    ``columns[name][i]`` holds the samples of point i (empty = missing); ``labels[i]`` is
    its time/commit label, or None when the file has no label column.
    """

    path: str
    label_column: str | None
    labels: list[str] | None
    columns: dict[str, list[tuple[float, ...]]]
    dropped: dict[str, int] = field(default_factory=dict)   # column -> values inf or beyond MAX_MAGNITUDE

    @property
    def points(self) -> int:
        return len(next(iter(self.columns.values()), []))


def read_series_file(path: str) -> SeriesFile:
    """Read a CSV or JSON series (by extension, else by its first character); '-' is stdin."""
    if path == "-":
        text, name = sys.stdin.read(), "<stdin>"
    else:
        file = Path(path)
        if not file.is_file():
            raise UsageError(f"{path}: no such file")
        try:
            text = file.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as error:
            raise UsageError(f"{path}: cannot read: {error}") from None
        name = path
    if not text.strip():
        raise UsageError(f"{name}: the file is empty")
    suffix = Path(path).suffix.lower()
    if suffix == ".json" or (suffix not in (".csv", ".tsv", ".txt") and text.lstrip()[0] in "[{"):
        return _read_json(name, text)
    return _read_csv(name, text)


def _number(cell: str) -> float | None:
    """The cell as a float (NaN when missing), None when it is not a number."""
    s = cell.strip()
    if s.lower() in _MISSING:
        return math.nan
    try:
        return float(s)
    except ValueError:
        return None


def _one_line(text: str) -> str:
    """Names from the file as they are, but a quoted line break cannot split the message."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _is_label_name(name: str) -> bool:
    return name.strip().lower() in LABEL_NAMES


# --------------------------------------------------------------------------- CSV

def _read_csv(name: str, text: str) -> SeriesFile:
    first = text.lstrip("\n").split("\n", 1)[0]
    delimiter = "\t" if "\t" in first and "," not in first else ("," if "," in first else
                                                                 ";" if ";" in first else ",")
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    except csv.Error as error:  # a field beyond csv's size limit, a NUL byte
        raise UsageError(f"{name}: not readable as CSV: {error}") from None
    numbered = [(i, [c.strip() for c in row]) for i, row in enumerate(rows, start=1)
                if any(c.strip() for c in row)]
    if not numbered:
        raise UsageError(f"{name}: no header and no data, only separators")
    header_line, header = numbered[0]
    if any(c and _number(c) is not None for c in header):
        raise UsageError(f"{name} line {header_line}: expected a header naming the columns, "
                         f"found data ({_one_line(','.join(header[:3]))}...)",
                         "add a first line such as: time,value")
    for position, column in enumerate(header, start=1):
        if not column:
            raise UsageError(f"{name} line {header_line}: column {position} has no name")
    duplicates = sorted({c for c in header if header.count(c) > 1})
    if duplicates:
        raise UsageError(f"{name} line {header_line}: column {duplicates[0]!r} appears twice")
    data = numbered[1:]
    if not data:
        raise UsageError(f"{name}: a header but no data rows")
    for line, row in data:
        if len(row) != len(header):
            raise UsageError(f"{name} line {line}: {len(row)} fields, the header has {len(header)}")

    label_column = next((c for c in header if _is_label_name(c)), None)
    metrics: dict[str, list[tuple[float, ...]]] = {}
    dropped: dict[str, int] = {}
    for k, column in enumerate(header):
        if column == label_column:
            continue
        values = [_number(row[k]) for _, row in data]
        bad = [i for i, v in enumerate(values) if v is None]
        if len(bad) == len(values):
            continue  # an all-text column: an attribute (branch, host...), not a metric
        if bad:
            line, row = data[bad[0]]
            raise UsageError(f"{name} line {line}: column {column!r} has {row[k]!r}, not a number")
        metrics[column] = [(v,) if v is not None and _usable(v) else () for v in values]
        dropped[column] = sum(1 for v in values if v is not None and not math.isnan(v) and not _usable(v))
    if not metrics:
        raise UsageError(f"{name}: no numeric column", f"columns: {_one_line(', '.join(header))}")

    labels = [row[header.index(label_column)] for _, row in data] if label_column else None
    return _grouped(name, label_column, labels, metrics, dropped)


def _usable(value: float) -> bool:
    """A value the detectors can compute with: finite and within ±MAX_MAGNITUDE."""
    return abs(value) <= MAX_MAGNITUDE


def _grouped(name: str, label_column: str | None, labels: list[str] | None,
             rows: dict[str, list[tuple[float, ...]]], dropped: dict[str, int]) -> SeriesFile:
    """One point per row, or per run of consecutive rows with the same label."""
    dropped = {column: n for column, n in dropped.items() if n and column in rows}
    if labels is None:
        return SeriesFile(name, None, None, rows, dropped)
    starts = [i for i in range(len(labels)) if i == 0 or labels[i] != labels[i - 1]]
    bounds = [*starts, len(labels)]
    columns = {c: [sum(samples[a:b], ()) for a, b in zip(bounds, bounds[1:])]
               for c, samples in rows.items()}
    return SeriesFile(name, label_column, [labels[i] for i in starts], columns, dropped)


# --------------------------------------------------------------------------- JSON

def _json_samples(name: str, where: str, value: Any, dropped: list[int]) -> tuple[float, ...]:
    """A JSON value as the samples of one point: a number, null, or a list of those;
    ``dropped[0]`` counts the values too large to use (inf, or beyond MAX_MAGNITUDE)."""
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if item is None:
            continue
        if isinstance(item, bool) or not isinstance(item, (int, float, str)):
            raise UsageError(f"{name} {where}: {json.dumps(item)[:40]} is not a number")
        try:
            number = _number(item) if isinstance(item, str) else float(item)
        except OverflowError:  # an integer beyond float's range
            raise UsageError(f"{name} {where}: {json.dumps(item)[:40]}... is too large a number") from None
        if number is None:
            raise UsageError(f"{name} {where}: {item!r} is not a number")
        if _usable(number):
            out.append(number)
        elif not math.isnan(number):
            dropped[0] += 1
    return tuple(out)


def _read_json(name: str, text: str) -> SeriesFile:
    data = parse_json(text, name)
    if not isinstance(data, list):
        raise UsageError(f"{name}: expected a JSON list of numbers or of objects, "
                         f"found {type(data).__name__}")
    if not data:
        raise UsageError(f"{name}: the list is empty")
    if not any(isinstance(item, dict) for item in data):
        count = [0]
        values = [_json_samples(name, f"item {i}", item, count) for i, item in enumerate(data)]
        return _grouped(name, None, None, {"value": values}, {"value": count[0]})
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise UsageError(f"{name} item {i}: expected an object like the others, "
                             f"found {json.dumps(item)[:40]}")
    keys = list(dict.fromkeys(k for item in data for k in item))
    label_column = next((k for k in keys if _is_label_name(k)), None)
    columns: dict[str, list[tuple[float, ...]]] = {}
    dropped: dict[str, int] = {}
    for key in keys:
        if key == label_column:
            continue
        cells = [item.get(key) for item in data]
        if all(isinstance(c, str) for c in cells if c is not None) and any(
                isinstance(c, str) and _number(c) is None for c in cells):
            continue  # a text field: an attribute, not a metric
        count = [0]
        columns[key] = [_json_samples(name, f"item {i} field {key!r}", c, count) for i, c in enumerate(cells)]
        dropped[key] = count[0]
    if not columns:
        raise UsageError(f"{name}: no numeric field in the objects", f"fields: {_one_line(', '.join(keys))}")
    labels = None
    if label_column:
        labels = ["" if item.get(label_column) is None else str(item[label_column]) for item in data]
    return _grouped(name, label_column, labels, columns, dropped)
