"""hyperfine's ``--export-json``, ``--export-csv`` and ``--export-markdown`` files, written.

``HyperfineResult`` is one entry of those files (analysis.hyperfine_export computes it
from a run's samples); ``EXPORTS`` is the registry of the three layouts: the run and ab
commands' ``--export-NAME`` options and their help come from it. Reading hyperfine's
JSON is ``formats.hyperfine``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perflab.model.output_formats import FormatRegistry, OutputFormat


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
    OutputFormat("json", "hyperfine's JSON (same keys: hyperfine's scripts read it)", to_json),
    OutputFormat("csv", "hyperfine's CSV summary", to_csv),
    OutputFormat("markdown", "hyperfine's markdown table (with its Relative column)", to_markdown),
)
