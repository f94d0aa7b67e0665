"""hyperfine's ``--export-json``, ``--export-csv`` and ``--export-markdown`` files, written.

``hyperfine_results(run, rows)`` turns a run's samples into hyperfine's results: each
(benchmark, point) with a wall time is one result. ``times`` are the stored wall times
in repetition order, ``user``/``system`` their means, ``stddev`` the sample standard
deviation (n-1), the markdown's Relative the ratio of means to the fastest with
hyperfine's error propagation. A sample that failed but kept its time (``-i``) has the
exit code of its note; one that failed without a value has no time, so it is left out
(hyperfine itself stops at such a failure). ``EXPORTS`` is the registry of the three
layouts: the run and ab commands' ``--export-NAME`` options and their help come from
it. Reading hyperfine's JSON is ``formats.hyperfine``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from perflab.model.errors import UsageError
from perflab.model.output_formats import FormatRegistry, OutputFormat
from perflab.model.params import format_value, substitute
from perflab.model.records import RunInfo

if TYPE_CHECKING:
    import numpy as np

_EXIT = re.compile(r"exit status (-?\d+)")


@dataclass(frozen=True)
class HyperfineResult:
    """One (command, point): hyperfine's JSON keys, plus the markdown table's Relative."""

    command: str
    mean: float
    stddev: float | None          # None with one time (hyperfine writes null)
    median: float
    user: float                   # means, as hyperfine gives them
    system: float
    min: float
    max: float
    times: tuple[float, ...]
    exit_codes: tuple[int | None, ...]
    memory_usage_byte: tuple[int, ...] | None
    parameters: tuple[tuple[str, str], ...]
    relative: float               # mean / the fastest mean
    relative_stddev: float | None


def hyperfine_results(run: RunInfo, rows: Any) -> list[HyperfineResult]:
    """The results of ``run`` from ``rows``, its samples as the store's SampleRows columns."""
    import numpy as np  # here, not at import: the --export-* options' help needs none of it
    order = run.request.benchmarks
    found: dict[tuple[str, str], dict[str, dict[int, tuple[float, str]]]] = {}
    params: dict[str, dict[str, Any]] = {}
    for i in range(len(rows)):
        metric = rows.metric[i]
        if metric in ("time", "user", "system", "max_rss"):
            key = (rows.benchmark[i], rows.points[i])
            params[rows.points[i]] = rows.params[i]
            found.setdefault(key, {}).setdefault(metric, {})[int(rows.repetition[i])] = (
                float(rows.value[i]), rows.note[i] or "")
    keys = sorted(found, key=lambda k: order.index(k[0]) if k[0] in order else len(order))
    raw = []
    for benchmark, point in keys:
        metrics = found[(benchmark, point)]
        reps = [r for r, (v, _) in sorted(metrics.get("time", {}).items()) if math.isfinite(v)]
        if not reps:
            continue
        times = np.array([metrics["time"][r][0] for r in reps])
        notes = [metrics["time"][r][1] for r in reps]
        peaks = [metrics.get("max_rss", {}).get(r, (math.nan, ""))[0] for r in reps]
        rss = tuple(int(v) for v in peaks) if all(math.isfinite(v) for v in peaks) else None
        raw.append((benchmark, params[point], times, notes,
                    _mean_of(metrics.get("user", {}), reps), _mean_of(metrics.get("system", {}), reps), rss))
    if not raw:
        raise UsageError(f"run {run.id} has no wall times to export in hyperfine's format")
    fastest = min(times.mean() for _, _, times, *_ in raw)
    fastest_sd = next(_sd(t) for _, _, t, *_ in raw if t.mean() == fastest)
    out = []
    for benchmark, point_params, times, notes, user, system, rss in raw:
        mean, sd = float(times.mean()), _sd(times)
        ratio = mean / fastest if fastest > 0 else math.nan
        ratio_sd = (ratio * math.hypot(sd / mean, fastest_sd / fastest)
                    if sd is not None and fastest_sd is not None and mean > 0 and fastest > 0 else None)
        out.append(HyperfineResult(
            command=_command(benchmark, point_params), mean=mean, stddev=sd, median=float(np.median(times)),
            user=user, system=system, min=float(times.min()), max=float(times.max()),
            times=tuple(float(t) for t in times), exit_codes=tuple(_exit_code(n) for n in notes),
            memory_usage_byte=rss,
            parameters=tuple((k, format_value(v)) for k, v in point_params.items()),
            relative=ratio, relative_stddev=ratio_sd))
    return out


def _sd(times: np.ndarray) -> float | None:
    return float(times.std(ddof=1)) if times.size > 1 else None


def _mean_of(values: dict[int, tuple[float, str]], reps: list[int]) -> float:
    import numpy as np
    found = [values[r][0] for r in reps if r in values and math.isfinite(values[r][0])]
    return float(np.mean(found)) if found else 0.0


def _exit_code(note: str) -> int | None:
    """0 for a success; the code of ``exit status N``; None (hyperfine's null) for a signal."""
    if not note:
        return 0
    match = _EXIT.search(note)
    return int(match[1]) if match else None


def _command(benchmark: str, params: dict[str, Any]) -> str:
    """The command with its point's values in, as hyperfine writes a parameter scan."""
    try:
        return substitute(benchmark, params)
    except UsageError:
        return benchmark


def to_json(results: list[HyperfineResult]) -> str:
    out = []
    for r in results:
        entry: dict[str, Any] = {"command": r.command, "mean": r.mean, "stddev": r.stddev, "median": r.median,
                                 "user": r.user, "system": r.system, "min": r.min, "max": r.max,
                                 "times": list(r.times)}
        if r.memory_usage_byte is not None:
            entry["memory_usage_byte"] = list(r.memory_usage_byte)
        entry["exit_codes"] = list(r.exit_codes)
        if r.parameters:
            entry["parameters"] = dict(r.parameters)
        out.append(entry)
    return json.dumps({"results": out}, indent=2) + "\n"


def to_csv(results: list[HyperfineResult]) -> str:
    names = list(dict.fromkeys(k for r in results for k, _ in r.parameters))
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["command", "mean", "stddev", "median", "user", "system", "min", "max",
                     *(f"parameter_{n}" for n in names)])
    for r in results:
        values = dict(r.parameters)
        writer.writerow([r.command, r.mean, "" if r.stddev is None else r.stddev, r.median, r.user, r.system,
                         r.min, r.max, *(values.get(n, "") for n in names)])
    return text.getvalue()


def to_markdown(results: list[HyperfineResult]) -> str:
    seconds = min(r.mean for r in results) >= 1.0
    unit, scale = ("s", 1.0) if seconds else ("ms", 1e3)
    lines = [f"| Command | Mean [{unit}] | Min [{unit}] | Max [{unit}] | Relative |", "|:---|---:|---:|---:|---:|"]
    for r in results:
        mean = f"{r.mean * scale:.1f}" + ("" if r.stddev is None else f" ± {r.stddev * scale:.1f}")
        relative = (f"{r.relative:.2f}" if r.relative_stddev is None or r.relative == 1.0
                    else f"{r.relative:.2f} ± {r.relative_stddev:.2f}")
        command = r.command.replace("|", "\\|")
        lines.append(f"| `{command}` | {mean} | {r.min * scale:.1f} | {r.max * scale:.1f} | {relative} |")
    return "\n".join(lines) + "\n"


EXPORTS: FormatRegistry[OutputFormat[Callable[[list[HyperfineResult]], str]]] = FormatRegistry(
    OutputFormat(name="json", help="hyperfine's JSON (same keys: hyperfine's scripts read it)", render=to_json),
    OutputFormat(name="csv", help="hyperfine's CSV summary", render=to_csv),
    OutputFormat(name="markdown", help="hyperfine's markdown table (with its Relative column)", render=to_markdown),
)
