"""hyperfine ``--export-json`` files.

Each entry of ``results`` is one (benchmark, point). ``time`` comes from ``times``
(seconds, one repetition each) and ``max_rss`` from ``memory_usage_byte`` (hyperfine
>= 1.17) where present. hyperfine exports only the *means* of user and system time, so
no ``user``/``system`` samples are made: inventing per-run values would fake the spread.

Exit codes: a non-zero entry in ``exit_codes`` can only be there because hyperfine ran
with ``--ignore-failure`` (without it hyperfine stops at the first failure and writes no
file). Such a repetition is imported as a *failed* sample that keeps its time, with the
note ``exit status N`` (``killed by a signal`` for a null code), as ``perflab run``
records a failure: a command that failed every time has no ok sample, so nothing
compares it as if it had worked. ``ignore_failure=True`` (``perflab import -i``) keeps
them as ok samples with the same note, exactly as ``perflab run --ignore-failure`` does.

The file is checked against a schema first (pydantic): times and memory are finite,
non-negative and plausible (at most ``MAX_SECONDS`` and ``MAX_BYTES``), exit codes are
integers of the width hyperfine writes, list lengths agree.

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
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from itertools import repeat
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from perflab.formats.common import (
    Bytes,
    ImportedBenchmark,
    ImportedFile,
    Malformed,
    Seconds,
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
from perflab.model.params import coerce
from perflab.model.records import COMMAND_METRICS, UNKNOWN_HOST, Measurement, Point, SampleStatus

NAME = "hyperfine"

_COMMAND_INFO = {info.name: info for info in COMMAND_METRICS}
_MAX_CANDIDATES = 1024  # placements of parameter values tried per hyperfine command

_ExitCode = Annotated[int, Field(strict=True, ge=-(2**31), lt=2**31)]   # hyperfine's i32


_TIMES: TypeAdapter[list[float]] = TypeAdapter(list[Seconds])
_CODES: TypeAdapter[list[int | None]] = TypeAdapter(list[_ExitCode | None])
_MEMORY: TypeAdapter[list[float]] = TypeAdapter(list[Bytes])
# the long arrays of a result: checked a chunk at a time as they are read, never held
_ARRAYS: dict[Pattern, TypeAdapter[Any]] = {("results", None, "times"): _TIMES, ("results", None, "exit_codes"): _CODES,
           ("results", None, "memory_usage_byte"): _MEMORY}


class _Result(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", frozen=True, arbitrary_types_allowed=True)

    command: Annotated[str, Field(min_length=1)]
    times: Annotated[Streamed, streamed_array(min_length=1)]
    exit_codes: Annotated[Streamed, streamed_array()] | None = None
    memory_usage_byte: Annotated[Streamed, streamed_array()] | None = None
    parameters: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _lengths_agree(self) -> _Result:
        for name, values in (("exit codes", self.exit_codes), ("memory values", self.memory_usage_byte)):
            if values is not None and values.count != self.times.count:
                raise PydanticCustomError("length", "has {n} {name} for {times} times",
                                          {"n": values.count, "name": name, "times": self.times.count})
        for name, value in (self.parameters or {}).items():
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                raise PydanticCustomError("parameter", "parameter {name} is {value}, not a value",
                                          {"name": repr(name), "value": show(value)})
        return self


class _File(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    results: Annotated[list[_Result], Field(min_length=1)]
    metadata: Any = None


def parse(path: str | os.PathLike[str], *, ignore_failure: bool = False,
          progress: ReadProgress | None = None) -> ImportedFile:
    """Parse a hyperfine JSON file; a UsageError naming the file and the place if malformed.

    The file is read twice, never held whole: once to check it and recover the scans'
    templates, then again (as the import writes) for its times, exit codes and memory.
    """
    file = JsonFile.of(path, NAME)
    skeleton = Skeleton({})
    skeleton.where = lambda loc: _where(skeleton.root, loc)  # names the command of a result read so far
    skeleton.arrays = {pattern: _checker(adapter, skeleton.where) for pattern, adapter in _ARRAYS.items()}
    try:
        data, digest = skeleton.read(file, progress)
        streams = _Streams(*(ItemStream(file, pattern, skeleton.counted(pattern)) for pattern in _ARRAYS))
        return _hyperfine(data, file, digest, ignore_failure, streams)
    except Malformed as error:
        raise fail(path, NAME, error) from None


def _checker(adapter: TypeAdapter[Any], where: Callable[[JsonPath], str]) -> ChunkCheck:
    def check(path: JsonPath, array: Streamed, offset: int, items: list[Any]) -> None:
        try:
            adapter.validate_python(items)
        except ValidationError as error:
            raise explain_items(error, path, offset, where) from None
    return check


def _hyperfine(data: Any, file: JsonFile, digest: str, ignore_failure: bool, streams: _Streams) -> ImportedFile:
    require_top_level(data, "results", "expected the output of hyperfine --export-json", "benchmarks", "pyperf")
    try:
        parsed_file = _File.model_validate(data)
    except ValidationError as error:
        raise explain(error, lambda loc: _where(data, loc)) from None

    parsed = [_HyperfineResult.of(i, r) for i, r in enumerate(parsed_file.results, start=1)]
    names = _hyperfine_names(parsed)
    seen: dict[tuple[str, str], int] = {}
    benchmarks = []
    for result, name in zip(parsed, names):
        point_params = {k: _finite_or_text(v) for k, v in result.params.items()}
        key = (name, Point(name, point_params).key)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            name = f"{name} #{seen[key]}"
        benchmarks.append(_hyperfine_benchmark(result, Point(name, point_params), ignore_failure, streams))

    environment: dict[str, Any] = {"imported": NAME}
    if isinstance(parsed_file.metadata, dict):  # newer hyperfine: version, start time, platform
        environment["metadata"] = parsed_file.metadata
    return ImportedFile(NAME, str(file.path), digest, UNKNOWN_HOST, environment, benchmarks)


_WORDS = {"results": "result", "times": "time", "exit_codes": "exit code",
          "memory_usage_byte": "memory value"}


def _where(data: Any, loc: tuple[int | str, ...]) -> str:
    """'result 2 ('sleep 1') time 3': a place in the file, the command named when there is one."""
    if len(loc) >= 2 and loc[0] == "results" and isinstance(loc[1], int):
        entries = data.get("results") if isinstance(data, dict) else None
        entry = entries[loc[1]] if isinstance(entries, list) and loc[1] < len(entries) else None
        command = entry.get("command") if isinstance(entry, dict) else None
        head = f"result {loc[1] + 1}" + (f" ({command!r})" if isinstance(command, str) and command else "")
        rest = loc[2:]
        if len(rest) >= 2 and rest[0] == "parameters":
            return f"{head} parameter {rest[1]!r}"
        return f"{head} {location(rest, _WORDS)}".rstrip()
    return location(loc, _WORDS)


class _Streams:
    """The three item streams of a file's results (pass 2), shared by its benchmarks."""

    def __init__(self, times: ItemStream, codes: ItemStream, memory: ItemStream):
        self.times, self.codes, self.memory = times, codes, memory


class _HyperfineResult:
    """One checked entry of ``results``: its parameters as hyperfine wrote them (text), where
    its arrays are in the file."""

    def __init__(self, index: int, command: str, params: dict[str, str], times: Streamed,
                 exit_codes: Streamed | None, memory: Streamed | None):
        self.index, self.command, self.params = index, command, params
        self.times, self.exit_codes, self.memory = times, exit_codes, memory

    @classmethod
    def of(cls, index: int, result: _Result) -> _HyperfineResult:
        params = {name: value if isinstance(value, str) else _plain(value)
                  for name, value in (result.parameters or {}).items()}
        return cls(index, result.command, params, result.times, result.exit_codes, result.memory_usage_byte)


# hyperfine subtracts its shell's start-up from each time and writes 0 where the command took
# less: no measurement, only "shorter than the shell"
_CLAMPED = "0 s: shorter than hyperfine's shell start-up, which it subtracts (not a measurement)"


def _finite_or_text(text: str) -> Any:
    """A parameter as a number, as -p reads it; "1e400" or "inf" stays the text it was (JSON
    has no Infinity to export)."""
    value = coerce(text)
    return value if not isinstance(value, float) or math.isfinite(value) else text


def _plain(value: int | float) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


class _Repetitions:
    """A result's repetitions, each made as the file is read again: a 2,000,000-time file is
    never in memory (the import inserts them a batch at a time)."""

    def __init__(self, result: _HyperfineResult, ignore_failure: bool, streams: _Streams):
        self._result, self._ignore_failure, self._streams = result, ignore_failure, streams

    def __len__(self) -> int:
        return self._result.times.count

    def __iter__(self) -> Iterator[list[Measurement]]:
        result, n = self._result, self._result.times.count
        times = self._streams.times.take(result.times.start, n)
        codes: Iterator[Any] = repeat(0, n) if result.exit_codes is None \
            else self._streams.codes.take(result.exit_codes.start, n)
        memory: Iterator[Any] = repeat(None, n) if result.memory is None \
            else self._streams.memory.take(result.memory.start, n)
        for time, code, rss in zip(times, codes, memory):
            note = "" if code == 0 else "killed by a signal" if code is None else f"exit status {code}"
            status = SampleStatus.OK if code == 0 or self._ignore_failure else SampleStatus.FAILED
            if time == 0 and status is SampleStatus.OK:   # kept, as the raw record, but never as a value
                status, note = SampleStatus.INVALID, _CLAMPED
            values = [Measurement("time", float(time), "s", status, note)]
            if rss is not None:
                values.append(Measurement("max_rss", float(rss), "B", status, note))
            yield values


def _hyperfine_benchmark(result: _HyperfineResult, point: Point, ignore_failure: bool,
                         streams: _Streams) -> ImportedBenchmark:
    metrics = [_COMMAND_INFO["time"]] + ([_COMMAND_INFO["max_rss"]] if result.memory is not None else [])
    return ImportedBenchmark(point, metrics, _Repetitions(result, ignore_failure, streams))


# -- recovering the template of a parameter scan -----------------------------------------
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

        def explains(t: _Template, r: _HyperfineResult,
                     known: dict[int, set[_Template] | None] = known) -> bool:
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
                walk(end, (*chosen, (start, end, name)), k + 1)

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
