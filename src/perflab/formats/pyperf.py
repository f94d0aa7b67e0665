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
import os
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from perflab.formats.common import (
    MAX_BYTES,
    MAX_SECONDS,
    ImportedBenchmark,
    ImportedFile,
    Malformed,
    explain,
    fail,
    load_json,
    location,
    require_top_level,
    show,
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
    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    metadata: _Metadata | None = None
    values: list[Any] | None = None    # versions 1.0 and 6
    samples: list[Any] | None = None   # version 5


class _Benchmark(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    metadata: _Metadata | None = None
    common_metadata: _Metadata | None = None   # version 5
    runs: list[_Run]


class _File(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    metadata: _Metadata | None = None
    benchmarks: Annotated[list[_Benchmark], Field(min_length=1)]


_WORDS = {"benchmarks": "benchmark", "runs": "run", "values": "value", "samples": "value"}


def parse(path: str | os.PathLike[str], *, ignore_failure: bool = False) -> ImportedFile:
    """Parse a pyperf JSON file; a UsageError naming the file and the place if malformed.

    ``ignore_failure`` is accepted for the importers' common signature: pyperf records
    no failed runs, so it changes nothing.
    """
    data, absolute, digest = load_json(path, NAME)
    try:
        return _pyperf(data, absolute, digest)
    except Malformed as error:
        raise fail(path, NAME, error) from None


def _metadata(value: _Metadata | None) -> dict[str, Any]:
    if value is None:
        return {}
    # as written (extra keys too); a declared key given as null counts as absent
    fields = {k: v for k, v in value.model_dump(exclude_unset=True).items()
              if not (v is None and k in _Metadata.model_fields)}
    return {k: v.strip() if isinstance(v, str) else v for k, v in fields.items()}


def _pyperf(data: Any, path: str, digest: str) -> ImportedFile:
    require_top_level(data, "benchmarks", "expected a file written by pyperf -o", "results", "hyperfine")
    version = data.get("version")
    try:
        version = _VERSION.validate_python(version)
    except ValidationError:
        raise Malformed(f"unknown file format version {show(version)}",
                        hint="perflab reads versions 1.0, 6 and 5 (pyperf 0.8.3 and later)") from None
    old = _VERSIONS[version] < (0, 9, 6)
    try:
        file = _File.model_validate(data)
    except ValidationError as error:
        raise explain(error, lambda loc: location(loc, _WORDS)) from None

    suite = {} if old else _metadata(file.metadata)
    benchmarks: list[ImportedBenchmark] = []
    per_benchmark: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(file.benchmarks, start=1):
        where = f"benchmark {index}"
        own = _metadata(entry.common_metadata if old else entry.metadata)
        merged = {**suite, **own}
        name = merged.get("name")
        if not isinstance(name, str) or not name:
            raise Malformed(f'{where} has no "name" in its metadata')
        where = f"benchmark {index} ({name!r})"
        if name in per_benchmark:
            raise Malformed(f"benchmark {name!r} appears twice")

        unit: str | None = None
        repetitions: list[list[Measurement]] = []
        stamps: list[float | None] = []
        for r, run in enumerate(entry.runs, start=1):
            run_where = f"{where} run {r}"
            run_md = {**merged, **_metadata(run.metadata)}
            raw = run.samples if old else run.values
            if not raw:
                continue  # a calibration run: warm-ups only
            run_unit = run_md.get("unit", "second")
            if unit is not None and run_unit != unit:
                raise Malformed(f"{where} mixes units {unit!r} and {run_unit!r}")
            unit = run_unit
            try:
                values = _VALUES[run_unit].validate_python(raw)
            except ValidationError as error:
                raise explain(error, _value_place(run_where)) from None
            info = PYPERF_UNITS[run_unit]
            stamp = _date(run_md.get("date"))
            for value in values:
                repetitions.append([Measurement(info.name, value, info.unit)])
                stamps.append(stamp)
        if unit is None:
            raise Malformed(f"{where} has no values (only calibration or empty runs)")
        benchmarks.append(ImportedBenchmark(Point(name, {}), [PYPERF_UNITS[unit]], repetitions, stamps))
        per_benchmark[name] = own

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
    return ImportedFile(NAME, path, digest, host or UNKNOWN_HOST, environment, benchmarks)


def _value_place(run: str) -> Callable[[tuple[int | str, ...]], str]:
    """Names an item of a run's values list: 'benchmark 1 ('b') run 2 value 3'."""
    def where(loc: tuple[int | str, ...]) -> str:
        return f"{run} value {int(loc[0]) + 1}" if loc else run
    return where


def _date(value: Any) -> float | None:
    """pyperf's run date ("2024-01-31 12:00:00.123456", local time) as Unix time, if readable."""
    if not isinstance(value, str):
        return None
    try:
        return _dt.datetime.fromisoformat(value).timestamp()
    except (ValueError, OverflowError, OSError):
        return None
