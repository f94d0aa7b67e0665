"""Generated inputs for every reader of user files, and the one property they must keep.

Shared by the property tests (tests/test_readers_property.py) and the fuzz script
(bench/fuzz_readers.py). Each reader has a hypothesis strategy of inputs: structures
shaped like the real format whose fields are sometimes replaced by any JSON/TOML value,
real files (tests/data/import, suites/) with parts replaced, and raw bytes. ``outcome``
feeds one input to the reader's parse function, in-process, and says "parsed" or
"rejected" (a one-line UsageError, exit 2); anything else is raised: a crash.
"""

from __future__ import annotations

import copy
import gzip
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from perflab.model.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent
IMPORT_DATA = ROOT / "tests" / "data" / "import"
SUITES = ROOT / "suites"

HUGE = "\x00HUGE\x00"           # stands for a number of 5,000 digits (json.dumps cannot write one)
_HUGE_JSON = json.dumps(HUGE)


def dumps(value: Any) -> bytes:
    return json.dumps(value).replace(_HUGE_JSON, "9" * 5000).encode()


_SPECIAL_NUMBERS = st.sampled_from([-1.0, -0.0, 0, 1e308, 1e-320, float("inf"), float("-inf"), float("nan"),
                                    1e7 + 1, 2**64, -(2**63), 2**31, HUGE])
SCALARS = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8)
           | _SPECIAL_NUMBERS)
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=10)


def maybe(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a valid value, sometimes any JSON value in its place."""
    return st.one_of(valid, valid, valid, JSON_VALUES)


def _json_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _json_paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value[:6]):
            out += _json_paths(item, (*path, i))
    return out


@st.composite
def mutated_json(draw: st.DrawFn, seeds: list[Any]) -> Any:
    """A real file with one to three of its parts replaced, or deleted from their object."""
    doc = copy.deepcopy(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_json_paths(doc)))
        if not path:
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(JSON_VALUES)
    return doc


def _load_seeds(prefix: str) -> list[Any]:
    seeds = []
    for file in sorted(IMPORT_DATA.glob(prefix + "*")):
        raw = file.read_bytes()
        seeds.append(json.loads(gzip.decompress(raw) if file.suffix == ".gz" else raw))
    return seeds


# -- hyperfine -------------------------------------------------------------------------
_times = st.lists(maybe(st.floats(0, 10) | st.integers(0, 5) | _SPECIAL_NUMBERS), max_size=4)
_hyperfine_result = st.fixed_dictionaries(
    {"command": maybe(st.text(max_size=12)), "times": maybe(_times)},
    optional={"exit_codes": maybe(st.lists(maybe(st.integers(-3, 300) | st.none()), max_size=4)),
              "memory_usage_byte": maybe(st.lists(maybe(st.integers(0, 2**40) | _SPECIAL_NUMBERS), max_size=4)),
              "parameters": maybe(st.dictionaries(st.text(max_size=3),
                                                  maybe(st.text(max_size=4) | st.integers(0, 20)), max_size=2)),
              "mean": JSON_VALUES})
HYPERFINE_DOCS = st.fixed_dictionaries({"results": maybe(st.lists(maybe(_hyperfine_result), max_size=4))},
                                       optional={"metadata": JSON_VALUES, "benchmarks": JSON_VALUES})

# -- pyperf ----------------------------------------------------------------------------
_values = st.lists(maybe(st.floats(1e-9, 10) | _SPECIAL_NUMBERS), max_size=4)
_metadata = maybe(st.fixed_dictionaries({}, optional={
    "name": maybe(st.text(max_size=6)),
    "unit": maybe(st.sampled_from(["second", "byte", "integer", "meter"])),
    "hostname": maybe(st.text(max_size=5)),
    "date": maybe(st.sampled_from(["2024-01-31 12:00:00.123456", "bad", "9999-12-31 23:59:59", "0001-01-01"])),
    "loops": JSON_VALUES}))
_pyperf_run = st.fixed_dictionaries({}, optional={"values": maybe(_values), "samples": maybe(_values),
                                                  "warmups": JSON_VALUES, "metadata": _metadata})
_pyperf_bench = st.fixed_dictionaries({"runs": maybe(st.lists(maybe(_pyperf_run), max_size=3))},
                                      optional={"metadata": _metadata, "common_metadata": _metadata})
PYPERF_DOCS = st.fixed_dictionaries(
    {"version": maybe(st.sampled_from(["1.0", 6, 5])),
     "benchmarks": maybe(st.lists(maybe(_pyperf_bench), max_size=3))},
    optional={"metadata": _metadata, "results": JSON_VALUES})


def _files(docs: st.SearchStrategy[Any], seeds: list[Any]) -> st.SearchStrategy[bytes]:
    encoded = st.one_of(docs, mutated_json(seeds), JSON_VALUES).map(dumps)
    return st.one_of(encoded, encoded, encoded, encoded.map(gzip.compress), st.binary(max_size=40))


# -- series CSV and JSON ---------------------------------------------------------------
_numeric_cells = st.floats(-1e6, 1e6).map(repr) | st.integers(-100, 100).map(str)
_cells = st.one_of(
    *[_numeric_cells] * 12,
    st.sampled_from(["1e999", "", "nan", "NA", "-", "x", "c1", "1,5", '"q"', "9" * 400, "0x10", "inf", " 7 ",
                     '"a\nb"', "\x00"]),
    st.text(max_size=5))
_some_names = st.sampled_from(["time", "commit", "value", "cpu", "time", "value", "", "a b", "1", "Date", '"x\ny"'])
_names = _some_names | _some_names | _some_names | st.text(max_size=5)


@st.composite
def csv_text(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 9)) == 7:
        return draw(st.binary(max_size=60))
    delimiter = draw(st.sampled_from([",", ";", "\t"]))
    width = draw(st.integers(1, 4))
    header = draw(st.lists(_names, min_size=width, max_size=width, unique=draw(st.booleans())))
    ragged = draw(st.integers(0, 4)) == 3  # mostly rows of the header's width
    rows = draw(st.lists(st.lists(_cells, min_size=width - ragged, max_size=width + ragged), max_size=12))
    lines = [delimiter.join(header)] + [delimiter.join(row) for row in rows]
    if draw(st.integers(0, 30)) == 17:
        lines.append("x" * 140_000)  # beyond the csv module's field limit
    return "\n".join(lines).encode()


_series_number = st.floats() | st.integers(-(2**70), 2**70) | st.none() | _SPECIAL_NUMBERS | \
    st.sampled_from(["1.5", "x", "nan", ""])
_series_item = st.one_of(
    _series_number, st.lists(_series_number, max_size=3),
    st.dictionaries(_names, maybe(_series_number | st.lists(_series_number, max_size=3)), max_size=3))
SERIES_JSON_DOCS = st.one_of(st.lists(maybe(_series_item), max_size=8), JSON_VALUES)


@st.composite
def series_json_text(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 9)) == 7:
        return draw(st.binary(max_size=60))
    return dumps(draw(SERIES_JSON_DOCS))


# -- parameter syntax ------------------------------------------------------------------
_small = st.integers(0, 200).map(str) | st.sampled_from(["0.5", "-1", "1e999", "ncpus", "2*ncpus", "ncpus/0",
                                                         "1/0", "nope", "1..", "(", "1e-1", "9" * 30, "",
                                                         "1e308*10", "ncpus//0", "-ncpus", "1.5"])
_expr = st.one_of(_small, st.tuples(_small, st.sampled_from(["+", "-", "*", "/", "//", "**", "%", " "]), _small)
                  .map("".join))
_range = st.tuples(_expr, _expr, st.none() | st.sampled_from(["1", "2", "0", "-1", "0.5", "x", "ncpus", "1/0"])) \
    .map(lambda t: f"{t[0]}..{t[1]}" + (f":{t[2]}" if t[2] is not None else ""))
_listed = st.lists(_small | st.text(max_size=4), min_size=1, max_size=4).map(",".join)
PARAM_VALUES = st.one_of(_range, _listed, st.text(max_size=10))
PARAM_SPECS = st.tuples(st.sampled_from(["n", "size", "x-y", "_a", "1n", "", "a b"]) | st.text(max_size=3),
                        st.sampled_from(["=", "=", "", "=="]), PARAM_VALUES).map("".join)


# -- suite TOML ------------------------------------------------------------------------
def toml_value(value: Any) -> str:
    """A TOML literal of a str, int, float, bool, list or table (inline)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(value)


_toml_scalar = (st.integers(-3, 50) | st.floats(-1, 10) | st.sampled_from([float("nan"), float("inf")]) | st.booleans()
                | st.text(max_size=6) | PARAM_VALUES)
_toml_any = st.recursive(_toml_scalar, lambda inner: st.lists(inner, max_size=3)
                         | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=6)
_WORKLOADS = ["command", "hackbench", "sched-pipe", "wis", "cgroup-switch", "breakpoint-thread",
              "breakpoint-enable", "netstream", "tbench", "nope"]
_suite_entry = st.fixed_dictionaries({"workload": st.one_of(
    st.sampled_from(_WORKLOADS), st.sampled_from(_WORKLOADS), _toml_any)}, optional={
    "params": st.one_of(st.dictionaries(st.sampled_from(["groups", "mode", "n", "loops", "test", "tasks",
                                                          "duration", "x"]), _toml_any, max_size=3), _toml_any),
    "repetitions": _toml_any, "warmup": _toml_any, "metrics": _toml_any, "duration": _toml_any,
    "command": st.one_of(st.sampled_from(["true", "seq {n}", ["true"], [], "echo {x}"]), _toml_any),
    "name": _toml_any, "timeout": _toml_any, "bogus": _toml_any})


@st.composite
def suite_text(draw: st.DrawFn) -> bytes:
    choice = draw(st.integers(0, 9))
    if choice == 9:  # any text (valid UTF-8: a non-UTF-8 suite is the separate known defect)
        return draw(st.text(max_size=80)).encode()
    if choice >= 7:  # a shipped suite with lines dropped, doubled or changed
        lines = draw(st.sampled_from(sorted(SUITES.glob("*.toml")))).read_text().splitlines()
        for _ in range(draw(st.integers(1, 3))):
            if not lines:
                break
            i = draw(st.integers(0, len(lines) - 1))
            action = draw(st.integers(0, 2))
            if action == 0:
                del lines[i]
            elif action == 1:
                lines.insert(i, lines[i])
            else:
                lines[i] = re.sub(r"=\s*(.*)$", lambda _: "= " + toml_value(draw(_toml_any)), lines[i])
        return "\n".join(lines).encode()
    header = draw(st.fixed_dictionaries({}, optional={"description": _toml_any, "repetitions": _toml_any,
                                                      "warmup": _toml_any, "other": _toml_any}))
    entries = draw(st.lists(_suite_entry, max_size=3))
    out = []
    if header or draw(st.booleans()):
        out.append("[suite]")
        out += [f"{k} = {toml_value(v)}" for k, v in header.items()]
    for entry in entries:
        out.append("[[benchmark]]")
        out += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in entry.items()]
    return "\n".join(out).encode()


# -- the readers ------------------------------------------------------------------------
@dataclass(frozen=True)
class Reader:
    name: str
    inputs: st.SearchStrategy[Any]
    suffix: str                            # of the file written for it ("" : the input is a -p spec)
    parse: Callable[[Any], Any]            # the in-process entry point the CLI calls
    cli: Callable[[str, str], list[str]]   # (path or spec, db) -> perflab's arguments


def _parse_import(kind: str) -> Callable[[Path], Any]:
    def parse(path: Path) -> Any:
        from perflab.formats.importers import parse_file
        parsed = parse_file(kind, path)
        _check_imported(parsed)
        return parsed
    return parse


def _check_imported(parsed: Any) -> None:
    """What an accepted file may contain: finite, non-negative, plausible values."""
    from perflab.formats.common import MAX_BYTES
    for bench in parsed.benchmarks:
        assert bench.repetitions
        for repetition in bench.repetitions:
            for m in repetition:
                assert m.value is not None and math.isfinite(m.value) and 0 <= m.value <= MAX_BYTES, m


def _parse_series(path: Path) -> Any:
    from perflab.formats.series import read_series_file
    return read_series_file(str(path))


def _parse_suite(path: Path) -> Any:
    from perflab.workloads.suite import load_suite
    return load_suite(path)


def _parse_params(spec: str) -> Any:
    from perflab.model.params import parse_assignment
    from perflab.workloads.suite import machine_variables
    return parse_assignment(spec, machine_variables())


def _import_cli(kind: str) -> Callable[[str, str], list[str]]:
    return lambda path, db: ["--db", db, "import", kind, path, "--label", "fuzz"]


READERS = {r.name: r for r in (
    Reader("hyperfine", _files(HYPERFINE_DOCS, _load_seeds("hyperfine")), ".json", _parse_import("hyperfine"),
           _import_cli("hyperfine")),
    Reader("pyperf", _files(PYPERF_DOCS, _load_seeds("pyperf")), ".json", _parse_import("pyperf"),
           _import_cli("pyperf")),
    Reader("series-csv", csv_text(), ".csv", _parse_series, lambda path, db: ["changepoints", path]),
    Reader("series-json", series_json_text(), ".json", _parse_series, lambda path, db: ["changepoints", path]),
    # a valid suite or -p stops at the database, which cannot be created (exit 3): nothing runs
    Reader("suite", suite_text(), ".toml", _parse_suite, lambda path, db: ["--db", db, "run", "-q", path]),
    Reader("params", PARAM_SPECS, "", _parse_params,
           lambda spec, db: ["--db", db, "run", "-q", "-n", "1", "-p", spec, "--", "true"]),
)}


def outcome(reader: Reader, data: Any, workdir: Path) -> str:
    """"parsed" or "rejected" (one-line UsageError); any other exception propagates: a crash."""
    if reader.suffix:
        path = workdir / f"input{reader.suffix}"
        path.write_bytes(data)
        argument: Any = path
    else:
        argument = data
    try:
        reader.parse(argument)
    except UsageError as error:
        text = str(error)
        if "\n" in text or "\r" in text:
            raise AssertionError(f"a message of more than one line: {text!r}") from error
        return "rejected"
    return "parsed"
