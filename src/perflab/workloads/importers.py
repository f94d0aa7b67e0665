"""Reading other tools' result files: hyperfine ``--export-json`` and pyperf JSON.

Pure parsing: a file becomes an :class:`ImportedFile` (benchmarks, their points, metric
metadata and per-repetition values); nothing here touches the database. Any problem
with the file is a :class:`UsageError` naming the file and what is wrong, raised before
anything is written.

hyperfine
  Each entry of ``results`` is one (benchmark, point). ``time`` comes from ``times``
  (seconds, one repetition each) and ``max_rss`` from ``memory_usage_byte`` (hyperfine
  >= 1.17) where present. hyperfine exports only the *means* of user and system time, so
  no ``user``/``system`` samples are made: inventing per-run values would fake the spread.
  A non-zero entry in ``exit_codes`` can only be there because hyperfine ran with
  ``--ignore-failure`` (without it hyperfine stops at the first failure and writes no
  file), so such a repetition keeps its value as an ok sample with the note
  ``exit status N`` (``killed by a signal`` for a null code), exactly as perflab's own
  ``run --ignore-failure`` records it.

  Parameter scans: hyperfine writes the *expanded* command (and ``--command-name``) into
  ``command`` and the values into ``parameters``. The template is recovered by putting
  ``{name}`` back where the values occur, choosing among the possible placements the one
  that explains the most results of the scan (``-P n 1 3 'sleep 0.00{n}'`` gives one
  benchmark ``sleep 0.00{n}`` with points n=1, n=2, n=3). Literal braces in a recovered
  template are doubled, as in perflab's own templates; parameter values that look like
  numbers become numbers, as ``-p`` does, so an import and ``perflab run`` of the same
  scan name the same points. Results without parameters keep their command verbatim,
  which is also what ``perflab run -- CMD`` names its benchmark. A (benchmark, point)
  given twice (``hyperfine 'cmd' 'cmd'``) becomes ``cmd #2``.

pyperf
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
"""

from __future__ import annotations

import datetime as _dt
import gzip
import hashlib
import json
import math
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab.model.errors import UsageError
from perflab.model.params import coerce
from perflab.model.records import Direction, Measurement, MetricInfo, Point
from perflab.workloads.command import METRICS as COMMAND_METRICS

KINDS = ("hyperfine", "pyperf")

_COMMAND_INFO = {info.name: info for info in COMMAND_METRICS}
PYPERF_UNITS = {
    "second": MetricInfo("time", "s", Direction.LOWER, description="pyperf value: time of one inner loop"),
    "byte": MetricInfo("memory", "B", Direction.LOWER, description="pyperf value: peak memory"),
    "integer": MetricInfo("value", "count", Direction.LOWER, description="pyperf value: an integer"),
}
_GZIP_MAGIC = b"\x1f\x8b"
_MAX_CANDIDATES = 1024  # placements of parameter values tried per hyperfine command


@dataclass(frozen=True)
class ImportedBenchmark:
    """One (benchmark, point) of the file with its values, one list per repetition."""

    point: Point
    metrics: list[MetricInfo]
    repetitions: list[list[Measurement]]
    measured_at: list[float | None] = field(default_factory=list)  # per repetition, if known

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
    def spec(self) -> dict[str, Any]:
        return {"imported": self.kind, "file": self.path, "sha256": self.sha256}


def parse_file(kind: str, path: str | os.PathLike[str]) -> ImportedFile:
    """Parse a ``kind`` ("hyperfine" or "pyperf") result file; UsageError if malformed."""
    if kind == "hyperfine":
        return parse_hyperfine(path)
    if kind == "pyperf":
        return parse_pyperf(path)
    raise UsageError(f"unknown import kind {kind!r}", hint=f"choose one of {', '.join(KINDS)}")


# -- reading ------------------------------------------------------------------------------
class _Malformed(Exception):
    """Internal: what is wrong, turned into one UsageError line naming the file."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


def _load_json(path: str | os.PathLike[str], kind: str) -> tuple[Any, str, str]:
    """(data, absolute path, sha256) of a JSON file, gzip-compressed or not."""
    shown = os.fspath(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise UsageError(f"cannot import {shown}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"cannot import {shown}: it is a directory, not a {kind} JSON file") from None
    except PermissionError:
        raise UsageError(f"cannot import {shown}: permission denied") from None
    except OSError as error:
        raise UsageError(f"cannot import {shown}: {error.strerror or error}") from None
    digest = hashlib.sha256(raw).hexdigest()
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as error:
            raise UsageError(f"cannot import {shown}: broken gzip data ({error})") from None
    elif shown.endswith(".gz"):
        raise UsageError(f"cannot import {shown}: named .gz but not gzip-compressed")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"cannot import {shown}: not UTF-8 text, so not a {kind} JSON file") from None
    if not text.strip():
        raise UsageError(f"cannot import {shown}: the file is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"cannot import {shown}: not JSON ({error.msg} at line {error.lineno} "
                         f"column {error.colno})") from None
    except RecursionError:
        raise UsageError(f"cannot import {shown}: JSON nested too deeply") from None
    return data, str(Path(path).resolve()), digest


def _fail(path: str | os.PathLike[str], kind: str, error: _Malformed) -> UsageError:
    return UsageError(f"cannot import {os.fspath(path)} as {kind} JSON: {error}", hint=error.hint)


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Malformed(f"{where} is {_show(value)}, not a number")
    if not math.isfinite(value):
        raise _Malformed(f"{where} is {value}, not a finite number")
    return float(value)


def _show(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _typed(value: Any, kind: type | tuple[type, ...], where: str, what: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise _Malformed(f"{where} is {_show(value)}, not {what}")
    return value


# -- hyperfine ----------------------------------------------------------------------------
def parse_hyperfine(path: str | os.PathLike[str]) -> ImportedFile:
    data, absolute, digest = _load_json(path, "hyperfine")
    try:
        return _hyperfine(data, absolute, digest)
    except _Malformed as error:
        raise _fail(path, "hyperfine", error) from None


@dataclass
class _HyperfineResult:
    index: int
    command: str
    params: dict[str, str]           # as written in the file (hyperfine writes strings)
    times: list[float]
    exit_codes: list[int | None]
    memory: list[float] | None


def _hyperfine(data: Any, path: str, digest: str) -> ImportedFile:
    if not isinstance(data, dict):
        raise _Malformed(f"the top level is {type(data).__name__}, not an object with \"results\"",
                         hint="expected the output of hyperfine --export-json")
    if "results" not in data:
        hint = ("this looks like a pyperf file: use 'perflab import pyperf'"
                if "benchmarks" in data else "expected the output of hyperfine --export-json")
        raise _Malformed('no "results" key', hint=hint)
    results = _typed(data["results"], list, '"results"', "a list")
    if not results:
        raise _Malformed('"results" is empty: no benchmark to import')
    parsed = [_hyperfine_result(i, r) for i, r in enumerate(results, start=1)]

    names = _hyperfine_names(parsed)
    seen: dict[tuple[str, str], int] = {}
    benchmarks = []
    for result, name in zip(parsed, names):
        point_params = {k: coerce(v) for k, v in result.params.items()}
        key = (name, Point(name, point_params).key)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            name = f"{name} #{seen[key]}"
        benchmarks.append(_hyperfine_benchmark(result, Point(name, point_params)))

    environment: dict[str, Any] = {"imported": "hyperfine"}
    metadata = data.get("metadata")
    if isinstance(metadata, dict):  # newer hyperfine: version, start time, platform
        environment["metadata"] = metadata
    return ImportedFile("hyperfine", path, digest, "imported", environment, benchmarks)


def _hyperfine_result(index: int, entry: Any) -> _HyperfineResult:
    where = f"result {index}"
    if not isinstance(entry, dict):
        raise _Malformed(f"{where} is {_show(entry)}, not an object")
    for key in ("command", "times"):
        if key not in entry:
            raise _Malformed(f'{where} has no "{key}"')
    command = _typed(entry["command"], str, f'{where} "command"', "a string")
    if not command:
        raise _Malformed(f'{where} has an empty "command"')
    where = f"result {index} ({command!r})"
    times_raw = _typed(entry["times"], list, f'{where} "times"', "a list")
    if not times_raw:
        raise _Malformed(f'{where} has no times')
    times = [_number(t, f"{where} time {i}") for i, t in enumerate(times_raw, start=1)]

    exit_codes: list[int | None] = [0] * len(times)
    if entry.get("exit_codes") is not None:
        codes = _typed(entry["exit_codes"], list, f'{where} "exit_codes"', "a list")
        if len(codes) != len(times):
            raise _Malformed(f"{where} has {len(codes)} exit codes for {len(times)} times")
        for i, code in enumerate(codes, start=1):
            if code is not None and (isinstance(code, bool) or not isinstance(code, int)):
                raise _Malformed(f"{where} exit code {i} is {_show(code)}, not an integer")
        exit_codes = codes

    memory = None
    if entry.get("memory_usage_byte") is not None:
        used = _typed(entry["memory_usage_byte"], list, f'{where} "memory_usage_byte"', "a list")
        if len(used) != len(times):
            raise _Malformed(f"{where} has {len(used)} memory values for {len(times)} times")
        memory = [_number(m, f"{where} memory value {i}") for i, m in enumerate(used, start=1)]

    params: dict[str, str] = {}
    if entry.get("parameters") is not None:
        raw_params = _typed(entry["parameters"], dict, f'{where} "parameters"', "an object")
        for name, value in raw_params.items():
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                raise _Malformed(f"{where} parameter {name!r} is {_show(value)}, not a value")
            params[name] = value if isinstance(value, str) else _plain(value)
    return _HyperfineResult(index, command, params, times, exit_codes, memory)


def _plain(value: int | float) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _hyperfine_benchmark(result: _HyperfineResult, point: Point) -> ImportedBenchmark:
    repetitions = []
    for i, wall in enumerate(result.times):
        code = result.exit_codes[i]
        note = "" if code == 0 else "killed by a signal" if code is None else f"exit status {code}"
        values = [Measurement("time", wall, "s", note=note)]
        if result.memory is not None:
            values.append(Measurement("max_rss", result.memory[i], "B", note=note))
        repetitions.append(values)
    metrics = [_COMMAND_INFO["time"]] + ([_COMMAND_INFO["max_rss"]] if result.memory is not None else [])
    return ImportedBenchmark(point, metrics, repetitions, [None] * len(repetitions))


# A template is a tuple of pieces: a literal str, or (name,) for a placeholder.
_Template = tuple[Any, ...]


def _hyperfine_names(results: list[_HyperfineResult]) -> list[str]:
    """The benchmark name of each result: its command, or the recovered scan template."""
    names = [r.command for r in results]
    groups: dict[frozenset[str], list[_HyperfineResult]] = {}
    for r in results:
        if r.params:
            groups.setdefault(frozenset(r.params), []).append(r)
    for members in groups.values():
        candidates: dict[_Template, None] = {}
        known: dict[int, set[_Template] | None] = {}  # every placement of a result, if all were listed
        for r in members:
            found, complete = _placements(r.command, r.params)
            candidates.update(dict.fromkeys(found))
            known[r.index] = set(found) if complete and all(r.params.values()) else None

        def explains(t: _Template, r: _HyperfineResult) -> bool:
            listed = known[r.index]
            return t in listed if listed is not None else _render_values(t, r.params) == r.command

        cover = {t: {r.index for r in members if explains(t, r)} for t in candidates}
        left = {r.index for r in members}
        while left:
            # explains the most results; then the most placeholders; then by text, for determinism
            best = min(cover, key=lambda t: (-len(cover[t] & left),
                                             -sum(isinstance(p, tuple) for p in t), _render_template(t)))
            for index in cover[best] & left:
                names[index - 1] = _render_template(best)
            left -= cover[best]
    return names


def _placements(command: str, params: dict[str, str]) -> tuple[list[_Template], bool]:
    """Every way of reading occurrences of the parameter values in ``command`` as placeholders.

    Also whether the list is complete (a command with very many occurrences gets two).
    """
    occurrences = sorted(
        ((start, start + len(value), name)
         for name, value in params.items() if value
         for start in _find_all(command, value)),
        key=lambda o: (o[0], -(o[1] - o[0]), o[2]))
    out: list[_Template] = []

    def walk(position: int, chosen: tuple[tuple[int, int, str], ...], first: int) -> None:
        if len(out) >= _MAX_CANDIDATES:
            return
        out.append(_pieces(command, chosen))
        for k in range(first, len(occurrences)):
            start, end, name = occurrences[k]
            if start >= position:
                walk(end, chosen + ((start, end, name),), k + 1)

    walk(0, (), 0)
    if len(out) >= _MAX_CANDIDATES:  # too many to try: every leftmost-longest occurrence, or none
        greedy, position = [], 0
        for start, end, name in occurrences:
            if start >= position:
                greedy.append((start, end, name))
                position = end
        return [_pieces(command, ()), _pieces(command, tuple(greedy))], False
    return out, True


def _find_all(text: str, value: str) -> list[int]:
    found, start = [], text.find(value)
    while start != -1:
        found.append(start)
        start = text.find(value, start + 1)
    return found


def _pieces(command: str, chosen: tuple[tuple[int, int, str], ...]) -> _Template:
    pieces: list[Any] = []
    position = 0
    for start, end, name in chosen:
        if start > position:
            pieces.append(command[position:start])
        pieces.append((name,))
        position = end
    if position < len(command):
        pieces.append(command[position:])
    return tuple(pieces)


def _render_values(template: _Template, params: dict[str, str]) -> str:
    return "".join(params.get(p[0], "\0") if isinstance(p, tuple) else p for p in template)


def _render_template(template: _Template) -> str:
    """perflab's template syntax: ``{name}``, literal braces doubled."""
    return "".join("{" + p[0] + "}" if isinstance(p, tuple)
                   else p.replace("{", "{{").replace("}", "}}") for p in template)


# -- pyperf -------------------------------------------------------------------------------
_PYPERF_VERSIONS = {"1.0": (1, 0), 6: (0, 9, 6), 5: (0, 8, 3)}


def parse_pyperf(path: str | os.PathLike[str]) -> ImportedFile:
    data, absolute, digest = _load_json(path, "pyperf")
    try:
        return _pyperf(data, absolute, digest)
    except _Malformed as error:
        raise _fail(path, "pyperf", error) from None


def _pyperf(data: Any, path: str, digest: str) -> ImportedFile:
    if not isinstance(data, dict):
        raise _Malformed(f"the top level is {type(data).__name__}, not an object with \"benchmarks\"",
                         hint="expected a file written by pyperf -o")
    if "benchmarks" not in data:
        hint = ("this looks like a hyperfine file: use 'perflab import hyperfine'"
                if "results" in data else "expected a file written by pyperf -o")
        raise _Malformed('no "benchmarks" key', hint=hint)
    version = data.get("version")
    if isinstance(version, bool) or version not in _PYPERF_VERSIONS:
        raise _Malformed(f"unknown file format version {_show(version)}",
                         hint="perflab reads versions 1.0, 6 and 5 (pyperf 0.8.3 and later)")
    old = _PYPERF_VERSIONS[version] < (0, 9, 6)
    suite = {} if old else _metadata(data.get("metadata"), "the suite metadata")
    entries = _typed(data["benchmarks"], list, '"benchmarks"', "a list")
    if not entries:
        raise _Malformed('"benchmarks" is empty: no benchmark to import')

    benchmarks: list[ImportedBenchmark] = []
    per_benchmark: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(entries, start=1):
        where = f"benchmark {index}"
        if not isinstance(entry, dict):
            raise _Malformed(f"{where} is {_show(entry)}, not an object")
        own = _metadata(entry.get("common_metadata" if old else "metadata"), f"{where} metadata")
        merged = {**suite, **own}
        name = merged.get("name")
        if not isinstance(name, str) or not name.strip():
            raise _Malformed(f'{where} has no "name" in its metadata')
        name = name.strip()
        where = f"benchmark {index} ({name!r})"
        if name in per_benchmark:
            raise _Malformed(f"benchmark {name!r} appears twice")
        if "runs" not in entry:
            raise _Malformed(f'{where} has no "runs"')
        runs = _typed(entry["runs"], list, f'{where} "runs"', "a list")

        unit: str | None = None
        repetitions: list[list[Measurement]] = []
        stamps: list[float | None] = []
        for r, run in enumerate(runs, start=1):
            run_where = f"{where} run {r}"
            if not isinstance(run, dict):
                raise _Malformed(f"{run_where} is {_show(run)}, not an object")
            run_md = {**merged, **_metadata(run.get("metadata"), f"{run_where} metadata")}
            key = "samples" if old else "values"
            values = run.get(key)
            if values is None or values == []:
                continue  # a calibration run: warm-ups only
            values = _typed(values, list, f'{run_where} "{key}"', "a list")
            run_unit = run_md.get("unit", "second")
            if run_unit not in PYPERF_UNITS:
                raise _Malformed(f"{where} has unit {_show(run_unit)}",
                                 hint=f"pyperf units are {', '.join(PYPERF_UNITS)}")
            if unit is not None and run_unit != unit:
                raise _Malformed(f"{where} mixes units {unit!r} and {run_unit!r}")
            unit = run_unit
            info = PYPERF_UNITS[unit]
            stamp = _date(run_md.get("date"))
            for v, value in enumerate(values, start=1):
                number = _number(value, f"{run_where} value {v}")
                repetitions.append([Measurement(info.name, number, info.unit)])
                stamps.append(stamp)
        if not repetitions:
            raise _Malformed(f"{where} has no values (only calibration or empty runs)")
        assert unit is not None
        benchmarks.append(ImportedBenchmark(Point(name, {}), [PYPERF_UNITS[unit]], repetitions, stamps))
        per_benchmark[name] = own

    host = suite.get("hostname")
    if not isinstance(host, str) or not host:
        hosts = {md.get("hostname") for md in per_benchmark.values()}
        host = hosts.pop() if len(hosts) == 1 and isinstance(next(iter(hosts)), str) else None
    environment: dict[str, Any] = {"imported": "pyperf"}
    if host:
        environment["hostname"] = host
    cpu = {k: v for k, v in (("model", suite.get("cpu_model_name")),
                              ("online_count", suite.get("cpu_count"))) if v is not None}
    if cpu:
        environment["cpu"] = cpu
    environment["metadata"] = suite
    environment["benchmark_metadata"] = per_benchmark
    return ImportedFile("pyperf", path, digest, host or "imported", environment, benchmarks)


def _metadata(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Malformed(f"{where} is {_show(value)}, not an object")
    return {k: v.strip() if isinstance(v, str) else v for k, v in value.items()}


def _date(value: Any) -> float | None:
    """pyperf's run date ("2024-01-31 12:00:00.123456", local time) as Unix time, if readable."""
    if not isinstance(value, str):
        return None
    try:
        return _dt.datetime.fromisoformat(value).timestamp()
    except (ValueError, OverflowError, OSError):
        return None


__all__ = ["KINDS", "ImportedBenchmark", "ImportedFile", "PYPERF_UNITS", "parse_file",
           "parse_hyperfine", "parse_pyperf"]
