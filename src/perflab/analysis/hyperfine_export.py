"""A run's samples as hyperfine's results: the numbers of its JSON, CSV and markdown exports.

Each (benchmark, point) with a wall time is one result. ``times`` are the stored wall
times in repetition order, ``user``/``system`` their means, ``stddev`` the sample
standard deviation (n-1), the markdown's Relative the ratio of means to the fastest with
hyperfine's error propagation. A sample that failed but kept its time (``-i``) has the
exit code of its note; one that failed without a value has no time, so it is left out
(hyperfine itself stops at such a failure).
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from perflab.formats.hyperfine_export import HyperfineResult
from perflab.model.errors import UsageError
from perflab.model.params import format_value, substitute
from perflab.model.records import RunInfo
from perflab.store import Store

_EXIT = re.compile(r"exit status (-?\d+)")


def hyperfine_results(store: Store, run: RunInfo) -> list[HyperfineResult]:
    rows = store.sample_rows(run.id)
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
