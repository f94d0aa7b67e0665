"""Suite files: several workloads with their sweeps in one TOML file, like an mmtests config.

    [suite]
    description = "scheduler wake-up paths"
    repetitions = 5            # defaults for every benchmark below
    warmup = 1

    [[benchmark]]
    workload = "hackbench"
    repetitions = 10
    metrics = ["time"]         # keep only these
    params = { groups = "1..2*ncpus", mode = ["process", "thread"] }

    [[benchmark]]
    workload = "command"
    command = "seq 100000 | sort -n > /dev/null"   # a string runs through the shell; a list does not
    name = "sort"

A parameter value is a list, a single value, or a string in the ``-p`` syntax
(``"a,b"``, ``"1..4"``, ``"1..2*ncpus"``). Everything is checked before anything runs;
an error names the file and line.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.model.errors import PerflabError, UsageError
from perflab.model.limits import check_repetitions
from perflab.model.params import parse_values
from perflab.workloads.base import Workload
from perflab.workloads.command import CommandWorkload
from perflab.workloads.registry import builtin

SUITE_KEYS = {"description", "repetitions", "warmup"}
ENTRY_KEYS = {"workload", "params", "repetitions", "warmup", "metrics", "duration", "command",
              "name", "timeout", "title", "row"}


def machine_variables() -> dict[str, int]:
    """Names a sweep may use: ``ncpus`` is the CPUs perflab may run on."""
    return {"ncpus": len(os.sched_getaffinity(0))}


@dataclass
class SuiteEntry:
    workload: Workload
    sweep: dict[str, list[Any]]
    repetitions: int | None
    warmup: int | None
    metrics: list[str] | None
    timeout: float | None
    line: int


@dataclass
class Suite:
    path: str
    description: str
    entries: list[SuiteEntry]


def load_suite(path: str | Path, variables: dict[str, int] | None = None) -> Suite:
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as error:
        raise UsageError(f"cannot read suite {path}: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise UsageError(f"cannot read suite {path}: not UTF-8 text (byte 0x{error.object[error.start]:02x} "
                         f"at offset {error.start})", hint="TOML files are UTF-8") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"{path}: not valid TOML: {error}") from None
    except RecursionError:   # arrays or inline tables nested past the interpreter's stack: no suite
        raise UsageError(f"{path}: not a suite: values nested too deeply") from None
    variables = machine_variables() if variables is None else variables
    locate = _Locator(text)

    def fail(message: str, entry: int | None = None, key: str | None = None) -> UsageError:
        return UsageError(f"{path}:{locate.line(entry, key)}: {message}")

    header = data.get("suite", {})
    if not isinstance(header, dict):
        raise fail("suite must be a table: [suite]", key="suite")
    unknown = set(data) - {"suite", "benchmark"}
    if unknown:
        raise fail(f"unknown table {sorted(unknown)[0]!r} (expected [suite] and [[benchmark]])")
    for key in set(header) - SUITE_KEYS:
        raise fail(f"unknown key {key!r} in [suite] (known: {', '.join(sorted(SUITE_KEYS))})",
                   key=key)
    entries_data = data.get("benchmark", [])
    if not isinstance(entries_data, list) or not entries_data:
        raise fail("no [[benchmark]] entries")
    if not all(isinstance(raw, dict) for raw in entries_data):
        raise fail("each benchmark must be a table: [[benchmark]]", key="benchmark")
    entries = []
    for index, raw in enumerate(entries_data):
        try:
            entries.append(_entry(raw, header, variables, index, locate))
        except _EntryError as error:
            raise fail(str(error), index, error.key) from None
    return Suite(str(path), str(header.get("description", "")), entries)


class _EntryError(Exception):
    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.key = key


def _entry(raw: dict[str, Any], header: dict[str, Any], variables: dict[str, int],
           index: int, locate: _Locator) -> SuiteEntry:
    for key in raw:
        if key not in ENTRY_KEYS:
            raise _EntryError(f"unknown key {key!r} (known: {', '.join(sorted(ENTRY_KEYS))})", key)
    name = raw.get("workload")
    if not isinstance(name, str):
        raise _EntryError("every [[benchmark]] needs workload = \"NAME\"")
    try:
        workload = _workload(name, raw)
    except PerflabError as error:
        raise _EntryError(str(error), "workload" if "command" not in raw else "command") from None
    params = raw.get("params", {})
    if not isinstance(params, dict):
        raise _EntryError("params must be a table of name = values", "params")
    sweep: dict[str, list[Any]] = {}
    for key, value in params.items():
        if not key.strip():
            raise _EntryError("a parameter needs a name: \"\" = ... names none", "params")
        try:
            sweep[key] = _values(value, variables)
        except UsageError as error:
            raise _EntryError(f"parameter {key}: {error}", key) from None
    if "duration" in raw:
        sweep["duration"] = [_number(raw["duration"], "duration")]
    try:
        workload.validate(sweep)
    except UsageError as error:
        bad = next((k for k in [*sweep, "command"] if k in str(error)), None)
        raise _EntryError(str(error), bad) from None
    for key in ("title", "row"):  # how compare lays out this entry's rows
        if key in raw and not (isinstance(raw[key], str) and raw[key].strip()):
            raise _EntryError(f"{key} must be a non-empty string", key)
    if "row" in raw and raw["row"] not in sweep:
        raise _EntryError(f"row {raw['row']!r} is not a parameter of this entry ({', '.join(sweep) or 'none'})",
                          "row")
    if "title" in raw:
        workload.report_title = raw["title"]
    if "row" in raw:
        workload.report_row = raw["row"]
    metrics = raw.get("metrics")
    if metrics is not None:
        known = {m.name for m in workload.metrics}
        if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
            raise _EntryError("metrics must be a list of names", "metrics")
        for metric in metrics:
            if metric not in known:
                raise _EntryError(f"{name} has no metric {metric!r} (it has: {', '.join(sorted(known))})",
                                  "metrics")
    return SuiteEntry(
        workload=workload, sweep=sweep,
        repetitions=_repetitions(raw.get("repetitions", header.get("repetitions"))),
        warmup=_count(raw.get("warmup", header.get("warmup")), "warmup", 0),
        metrics=metrics,
        timeout=_number(raw["timeout"], "timeout") if "timeout" in raw else None,
        line=locate.line(index, None))


def _workload(name: str, raw: dict[str, Any]) -> Workload:
    if "name" in raw and not (isinstance(raw["name"], str) and raw["name"].strip()):
        raise UsageError("name must be a non-empty string")
    if name != CommandWorkload.name:
        if "command" in raw or "name" in raw:
            raise UsageError("command and name belong to workload = \"command\"")
        return builtin(name)
    command = raw.get("command")
    if isinstance(command, str):
        return CommandWorkload([command], shell=True, benchmark=raw.get("name"))
    if isinstance(command, list) and command and all(isinstance(w, str) for w in command):
        return CommandWorkload(command, benchmark=raw.get("name"))
    raise UsageError("workload \"command\" needs command = \"shell line\" or [\"argv\", ...]")


def _values(value: Any, variables: dict[str, int]) -> list[Any]:
    if isinstance(value, str):
        return parse_values(value, variables)
    if isinstance(value, bool):
        raise UsageError("booleans are not parameter values")
    if isinstance(value, float) and not math.isfinite(value):
        raise UsageError(f"{value!r} is not a finite number")
    if isinstance(value, (int, float)):
        return [value]
    if isinstance(value, list) and value:
        out: list[Any] = []
        for item in value:
            out.extend(_values(item, variables))
        return out
    raise UsageError(f"bad value {value!r}")


def _count(value: Any, key: str, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _EntryError(f"{key} must be an integer >= {minimum}, got {value!r}", key)
    return value


def _repetitions(value: object) -> int | None:
    try:
        return None if value is None else check_repetitions(value)
    except UsageError as error:
        raise _EntryError(str(error), "repetitions") from None


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise _EntryError(f"{key} must be a positive number of seconds, got {value!r}", key)
    return value


class _Locator:
    """Line numbers for errors (tomllib keeps none): the n-th [[benchmark]] and a key in it."""

    _HEADER = re.compile(r"^\s*\[\[\s*benchmark\s*\]\]")

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.headers = [i for i, line in enumerate(self.lines) if self._HEADER.match(line)]

    def line(self, entry: int | None, key: str | None) -> int:
        if entry is None or entry >= len(self.headers):
            start, end = 0, (self.headers[0] if self.headers else len(self.lines))
        else:
            start = self.headers[entry]
            end = self.headers[entry + 1] if entry + 1 < len(self.headers) else len(self.lines)
        if key is not None:
            pattern = re.compile(rf"(^|[{{,\s]){re.escape(key)}\s*=")
            for i in range(start, end):
                if pattern.search(self.lines[i].split("#", 1)[0]):
                    return i + 1
        return start + 1
