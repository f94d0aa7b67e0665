"""pyperf JSON files (``pyperf ... -o FILE``, ``.gz`` too).

Each benchmark (metadata ``name``) becomes one benchmark with no parameters. Metadata
is layered run > benchmark > suite, as pyperf itself merges it. Runs without
``values`` are calibration runs and are skipped; warm-ups are discarded. Values are
stored as pyperf stored them: pyperf's worker divides each raw timing by
``loops * inner_loops`` before storing it (``_worker.py``: ``value = raw_value /
(self.loops * inner_loops)``), so a value is already the time of one inner loop.
Repetitions are numbered across runs in file order. Units: ``second`` -> metric
``time`` in s, ``byte`` -> ``memory`` in B, ``integer`` -> ``value`` (count), all lower
is better. File format versions 1.0, 6 and 5 (pyperf >= 0.8.3) are read; ``.gz`` is
gunzipped.

The file is checked against a schema first (pydantic): the version is one of those,
metadata are objects whose ``name`` is text and whose ``unit`` is one of pyperf's, values
are finite and positive, as pyperf's own ``Run`` requires, and plausible for their unit
(a time at most ``MAX_SECONDS``, a size at most ``MAX_BYTES``).
"""

from __future__ import annotations

import datetime as _dt
import math
import os
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate
from typing import Annotated, Any, Literal, overload

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, TypeAdapter, ValidationError
from pydantic_core import PydanticCustomError

from perflab.formats.common import (
    MAX_BYTES,
    MAX_SECONDS,
    ImportedBenchmark,
    ImportedFile,
    Malformed,
    explain,
    fail,
    location,
    require_top_level,
    show,
)
from perflab.formats.jsonstream import (
    ChunkCheck,
    ItemStream,
    JsonFile,
    JsonPath,
    Pattern,
    ReadProgress,
    Skeleton,
    Streamed,
    explain_items,
    streamed_array,
)
from perflab.model.records import UNKNOWN_HOST, Direction, Measurement, MetricInfo, Point

NAME = "pyperf"

PYPERF_UNITS = {
    "second": MetricInfo("time", "s", Direction.LOWER, description="pyperf value: time of one inner loop"),
    "byte": MetricInfo("memory", "B", Direction.LOWER, description="pyperf value: peak memory"),
    "integer": MetricInfo("value", "count", Direction.LOWER, description="pyperf value: an integer"),
}
_VERSIONS: dict[str | int, tuple[int, ...]] = {"1.0": (1, 0), 6: (0, 9, 6), 5: (0, 8, 3)}
_VERSION: TypeAdapter[str | int] = TypeAdapter(Literal["1.0", 6, 5], config=ConfigDict(strict=True))
_Unit = Literal["second", "byte", "integer"]


def _values(limit: float) -> TypeAdapter[list[float]]:
    return TypeAdapter(list[Annotated[float, Field(strict=True, gt=0, le=limit, allow_inf_nan=False)]])


# pyperf's own Run refuses values <= 0; the upper bound is what the unit can plausibly be
_VALUES = {"second": _values(MAX_SECONDS), "byte": _values(MAX_BYTES), "integer": _values(float(2**63))}


class _Metadata(BaseModel):
    """The keys perflab reads; any other key is kept as pyperf wrote it."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    name: str | None = None
    unit: _Unit | None = None
    hostname: str | None = None


class _Run(BaseModel):
    """One run as written; checked as soon as it is read, then kept in a :class:`_RunTable`."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True, arbitrary_types_allowed=True)

    metadata: _Metadata | None = None
    values: Annotated[Streamed, streamed_array()] | None = None    # versions 1.0 and 6
    samples: Annotated[Streamed, streamed_array()] | None = None   # version 5


_UNITS = (None, "second", "byte", "integer")
_KEPT = "a run recorded in its benchmark's _RunTable"   # what the document holds in its place


class _RunTable:
    """A benchmark's runs as read, a few numbers each and no object per run (a file of
    2,000,000 values may hold 100,000 runs). A run's own date: NaN when it has none (its
    benchmark's applies), -inf when it has one that cannot be read."""

    def __init__(self) -> None:
        self.units = bytearray()
        self.dates = array("d")
        # per key: (start in the key's item stream, count or -1 when the run has no such list)
        self.where = {key: (array("q"), array("q")) for key in ("values", "samples")}
        self.notes: dict[tuple[str, int], dict[Any, Any]] = {}

    def __len__(self) -> int:
        return len(self.units)

    def add(self, run: _Run) -> None:
        own = _metadata(run.metadata)
        self.units.append(_UNITS.index(own.get("unit")))
        stamp = _date(own["date"]) if "date" in own else math.nan
        self.dates.append(-math.inf if stamp is None else stamp)
        for key, streamed in (("values", run.values), ("samples", run.samples)):
            starts, counts = self.where[key]
            starts.append(streamed.start if streamed is not None else 0)
            counts.append(streamed.count if streamed is not None else -1)
            if streamed is not None and streamed.notes:
                self.notes[(key, len(self.units) - 1)] = streamed.notes

    def date(self, r: int, fallback: Any) -> float | None:
        own = self.dates[r]
        return _date(fallback) if math.isnan(own) else None if own == -math.inf else own


def _kept(value: Any) -> Any:
    if value is not _KEPT:
        raise PydanticCustomError("model_type", "Input should be an object")
    return value


class _Benchmark(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    metadata: _Metadata | None = None
    common_metadata: _Metadata | None = None   # version 5
    runs: list[Annotated[Any, PlainValidator(_kept)]]


class _File(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    metadata: _Metadata | None = None
    benchmarks: Annotated[list[_Benchmark], Field(min_length=1)]


_WORDS = {"benchmarks": "benchmark", "runs": "run", "values": "value", "samples": "value"}
_RUNS: Pattern = ("benchmarks", None, "runs", None)
_ARRAYS: tuple[Pattern, Pattern] = ((*_RUNS, "values"), (*_RUNS, "samples"))
_LOOSEST = _values(math.inf)                       # checked as read, before the unit is known
_LIMITS = (MAX_SECONDS, float(2**63), MAX_BYTES)   # the units' upper limits, checked once it is


def parse(path: str | os.PathLike[str], *, ignore_failure: bool = False,
          progress: ReadProgress | None = None) -> ImportedFile:
    """Parse a pyperf JSON file; a UsageError naming the file and the place if malformed.

    The file is read twice, never held whole: once to check it (each run as it is read),
    then again, as the import writes, for the values. ``ignore_failure`` is accepted for
    the importers' common signature: pyperf records no failed runs, so it changes nothing.
    """
    file = JsonFile.of(path, NAME)
    skeleton = Skeleton({})
    skeleton.where = lambda loc: _where(skeleton.root, loc)
    skeleton.arrays = dict.fromkeys(_ARRAYS, _checker(skeleton.where))
    tables: dict[int, _RunTable] = {}
    skeleton.reducers = {_RUNS: lambda path, value: _reduce_run(path, value, tables)}
    try:
        data, digest = skeleton.read(file, progress)
        return _pyperf(data, file, digest, tables, skeleton)
    except Malformed as error:
        raise fail(path, NAME, error) from None


def _checker(where: Callable[[JsonPath], str]) -> ChunkCheck:
    """Values are positive finite numbers; notes the first above each unit's lower limit."""
    def check(path: JsonPath, array: Streamed, offset: int, items: list[Any]) -> None:
        try:
            _LOOSEST.validate_python(items)
        except ValidationError as error:
            raise explain_items(error, path, offset, where) from None
        for limit in _LIMITS:
            if limit not in array.notes and max(items) > limit:
                k = next(k for k, v in enumerate(items) if v > limit)
                array.notes[limit] = (offset + k, items[k])
    return check


def _reduce_run(path: JsonPath, value: Any, tables: dict[int, _RunTable]) -> Any:
    try:
        run = _Run.model_validate(value)
    except ValidationError as error:
        raise explain(error, lambda loc: location((*path, *loc), _WORDS)) from None
    tables.setdefault(int(path[1]), _RunTable()).add(run)
    return _KEPT


def _where(data: Any, loc: JsonPath) -> str:
    """'benchmark 1 ('b') run 2 value 3', the benchmark named where its name was read already."""
    if len(loc) >= 2 and loc[0] == "benchmarks" and isinstance(loc[1], int) and isinstance(data, dict):
        names = [_name_in(data.get("metadata"))]
        entries = data.get("benchmarks")
        if isinstance(entries, list) and loc[1] < len(entries) and isinstance(entries[loc[1]], dict):
            entry = entries[loc[1]]
            names += [_name_in(entry.get("metadata")), _name_in(entry.get("common_metadata"))]
        name = next((n for n in reversed(names) if n), None)
        rest = location(loc[2:], _WORDS)
        return f"benchmark {loc[1] + 1}" + (f" ({name!r})" if name else "") + (f" {rest}" if rest else "")
    return location(loc, _WORDS)


def _name_in(metadata: Any) -> str | None:
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) and name.strip() else None


def _metadata(value: _Metadata | None) -> dict[str, Any]:
    if value is None:
        return {}
    # as written (extra keys too); a declared key given as null counts as absent
    fields = {k: v for k, v in value.model_dump(exclude_unset=True).items()
              if not (v is None and k in _Metadata.model_fields)}
    return {k: v.strip() if isinstance(v, str) else v for k, v in fields.items()}


def _pyperf(data: Any, file: JsonFile, digest: str, tables: dict[int, _RunTable], skeleton: Skeleton) -> ImportedFile:
    require_top_level(data, "benchmarks", "expected a file written by pyperf -o", "results", "hyperfine")
    version = data.get("version")
    try:
        version = _VERSION.validate_python(version)
    except ValidationError:
        raise Malformed(f"unknown file format version {show(version)}",
                        hint="perflab reads versions 1.0, 6 and 5 (pyperf 0.8.3 and later)") from None
    old = _VERSIONS[version] < (0, 9, 6)
    try:
        parsed = _File.model_validate(data)
    except ValidationError as error:
        raise explain(error, lambda loc: location(loc, _WORDS)) from None

    pattern = _ARRAYS[1] if old else _ARRAYS[0]
    values = ItemStream(file, pattern, skeleton.counted(pattern))
    suite = {} if old else _metadata(parsed.metadata)
    benchmarks: list[ImportedBenchmark] = []
    per_benchmark: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(parsed.benchmarks, start=1):
        own = _metadata(entry.common_metadata if old else entry.metadata)
        merged = {**suite, **own}
        name = merged.get("name")
        if not isinstance(name, str) or not name:
            raise Malformed(f'benchmark {index} has no "name" in its metadata')
        if name in per_benchmark:
            raise Malformed(f"benchmark {name!r} appears twice")
        table = tables.get(index - 1, _RunTable())
        benchmarks.append(_benchmark(f"benchmark {index} ({name!r})", name, merged, table, old, values))
        per_benchmark[name] = own
    return ImportedFile(NAME, str(file.path), digest, *_host_environment(suite, per_benchmark), benchmarks)


def _benchmark(where: str, name: str, merged: dict[str, Any], table: _RunTable, old: bool,
               stream: ItemStream) -> ImportedBenchmark:
    """A benchmark's runs with values (calibration runs have none), checked against their unit."""
    key = "samples" if old else "values"
    all_starts, all_counts = table.where[key]
    unit: str | None = None
    starts, counts, stamps = array("q"), array("q"), array("d")
    for r in range(len(table)):
        if all_counts[r] <= 0:
            continue  # a calibration run: warm-ups only
        run_unit = _UNITS[table.units[r]] or merged.get("unit", "second")
        if unit is not None and run_unit != unit:
            raise Malformed(f"{where} mixes units {unit!r} and {run_unit!r}")
        unit = run_unit
        for k, value in table.notes.get((key, r), {}).values():
            try:
                _VALUES[run_unit].validate_python([value])
            except ValidationError as error:
                raise explain(error, _at(f"{where} run {r + 1} value {k + 1}")) from None
        stamp = table.date(r, merged.get("date"))
        starts.append(all_starts[r])
        counts.append(all_counts[r])
        stamps.append(math.nan if stamp is None else stamp)
    if unit is None:
        raise Malformed(f"{where} has no values (only calibration or empty runs)")
    info = PYPERF_UNITS[unit]
    return ImportedBenchmark(Point(name, {}), [info], _Values(starts, counts, info, stream), _RunStamps(counts, stamps))


def _host_environment(suite: dict[str, Any], per_benchmark: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    host = suite.get("hostname")
    if not host:
        hosts = {md.get("hostname") for md in per_benchmark.values()}
        host = hosts.pop() if len(hosts) == 1 else None
    environment: dict[str, Any] = {"imported": NAME}
    if host:
        environment["hostname"] = host
    cpu = {k: v for k, v in (("model", suite.get("cpu_model_name")),
                              ("online_count", suite.get("cpu_count"))) if v is not None}
    if cpu:
        environment["cpu"] = cpu
    environment["metadata"] = suite
    environment["benchmark_metadata"] = per_benchmark
    return host or UNKNOWN_HOST, environment


class _Values:
    """A benchmark's values, one repetition each, read from the file again as they are written."""

    def __init__(self, starts: array[int], counts: array[int], info: MetricInfo, stream: ItemStream):
        self._starts, self._counts, self._info, self._stream = starts, counts, info, stream

    def __len__(self) -> int:
        return sum(self._counts)

    def __iter__(self) -> Iterator[list[Measurement]]:
        name, unit = self._info.name, self._info.unit
        for start, count in zip(self._starts, self._counts):
            for value in self._stream.take(start, count):
                yield [Measurement(name, float(value), unit)]


class _RunStamps(Sequence[float | None]):
    """Each repetition's date (its run's; NaN: none), without a list as long as the values."""

    def __init__(self, counts: array[int], stamps: array[float]):
        self._ends = array("q", accumulate(counts))
        self._stamps = stamps

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    @overload
    def __getitem__(self, i: int) -> float | None: ...
    @overload
    def __getitem__(self, i: slice) -> list[float | None]: ...

    def __getitem__(self, i: int | slice) -> float | None | list[float | None]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if not 0 <= i < len(self):
            raise IndexError(i)
        stamp = self._stamps[bisect_right(self._ends, i)]
        return None if math.isnan(stamp) else stamp


def _at(place: str) -> Callable[[JsonPath], str]:
    return lambda loc: place


def _date(value: Any) -> float | None:
    """pyperf's run date ("2024-01-31 12:00:00.123456", local time) as Unix time, if readable."""
    if not isinstance(value, str):
        return None
    try:
        return _dt.datetime.fromisoformat(value).timestamp()
    except (ValueError, OverflowError, OSError):
        return None
