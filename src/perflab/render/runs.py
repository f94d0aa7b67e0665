"""Text for `perflab runs`, `perflab show` and the summary after `perflab run`.

Render sits below analysis, so it takes summaries duck-typed: objects with benchmark,
params, metric, unit, mean_kind, summary (n, centre, median, stddev, min, max), failures
and failure_note.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Sequence
from typing import Any

from perflab.model.params import format_value
from perflab.model.records import RunInfo
from perflab.model.run_request import PlanRecord
from perflab.render.machine import render_machine
from perflab.render.texttable import format_table
from perflab.render.units import format_number, metric_scale

_MEAN_NAMES = {"amean": "Amean", "hmean": "Hmean", "gmean": "Gmean"}


def when(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    return dt.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M:%S")


def render_runs(runs: Sequence[RunInfo]) -> str:
    if not runs:
        return ""  # nothing recorded: an empty listing (exit 0), as `ls` prints nothing
    rows = [[str(r.id), r.label, (r.commit_describe or r.commit or "-")[:20], r.host,
             when(r.started_at), r.status.value, str(r.benchmarks), str(r.samples)] for r in runs]
    return format_table(["id", "label", "commit", "host", "started", "status", "benchmarks", "samples"],
                        rows, align="rlllllrr")


DEFAULT_WIDTH = 120   # a mailing-list post's table; wider only on request or a wider terminal


def render_point_summaries(summaries: Iterable[Any], width: int = DEFAULT_WIDTH) -> str:
    """Per benchmark, a heading with the parameters all its points share, then one row per
    point and metric: n, mean (tagged Amean/Hmean), median, stddev, cov, min, max, unit,
    failures. One unit per metric of a benchmark; a point longer than the room left
    under ``width`` moves to a line of its own above its row."""
    grouped: dict[str, list[Any]] = {}
    for s in summaries:
        grouped.setdefault(s.benchmark, []).append(s)
    if not grouped:
        return "no samples"
    return "\n\n".join(_benchmark_table(name, members, width) for name, members in grouped.items())


def _benchmark_table(benchmark: str, members: list[Any], width: int) -> str:
    names = list(dict.fromkeys(k for s in members for k in s.params))
    values = {k: {format_value(s.params.get(k)) for s in members} for k in names}
    shared = [k for k in names if len(values[k]) == 1 and all(k in s.params for s in members)]
    heading = " ".join([benchmark, *(f"{k}={format_value(members[0].params[k])}" for k in shared)])
    centres: dict[tuple[str, str], list[float]] = {}
    for s in members:
        centres.setdefault((s.metric, s.unit), []).append(s.summary.centre)
    scales = {key: metric_scale(found, key[1]) for key, found in centres.items()}   # as compare scales them
    rows = []
    for s in members:
        stats = s.summary
        factor, unit = scales[(s.metric, s.unit)]
        cells = [format_number(v / factor) if math.isfinite(v) else "-"
                 for v in (stats.centre, stats.median, stats.stddev, stats.min, stats.max)]
        point = " ".join(f"{k}={format_value(v)}" for k, v in s.params.items() if k not in shared) or "-"
        cov = f"{stats.cov:.2f}%" if math.isfinite(stats.cov) else "-"
        failures = str(s.failures) + (f" ({s.failure_note})" if s.failures else "")
        rows.append([point, s.metric, str(stats.n), _MEAN_NAMES.get(s.mean_kind.value, s.mean_kind.value),
                     cells[0], cells[1], cells[2], cov, cells[3], cells[4], unit, failures])
    headers = ["point", "metric", "n", "mean", "", "median", "stddev", "cov", "min", "max", "unit", "failures"]
    table = format_table(headers, rows, align="llrlrrrrrrll")
    if max(map(len, table.splitlines())) > width:   # the points on lines of their own
        table = _points_above(headers, rows)
    return heading + "\n" + table


def _points_above(headers: list[str], rows: list[list[str]]) -> str:
    """The table without its point column, each point on a line of its own where it changes."""
    lines = format_table(headers[1:], [row[1:] for row in rows], align="lrlrrrrrrll", indent="  ").splitlines()
    out = lines[:2]
    previous = None
    for row, line in zip(rows, lines[2:]):
        if row[0] != previous:
            out.append(row[0])
            previous = row[0]
        out.append(line)
    return "\n".join(out)


def render_show(run: RunInfo, summaries: Sequence[Any], notes: Sequence[str] = (),
                width: int = DEFAULT_WIDTH) -> str:
    """The run's plans, machine and per-point summaries, then ``notes`` (a line each:
    the competing load, what was left out)."""
    commit = run.commit_describe or run.commit
    request = run.request
    head = [f"run {run.id}  label {run.label}" + (f"  commit {commit}" if commit else ""),
            f"  status {run.status.value}, started {when(run.started_at)}, finished {when(run.finished_at)}"]
    plans = request.plans
    if request.interleaved and len(plans) > 1:
        head.append(f"  {len(plans)} commands interleaved: every round runs each once")
    for plan in plans:
        head.append("  " + _describe_plan(plan))
        for name, overhead in plan.monitor_overhead.items():
            head.append(f"    monitor {name}: {overhead}")
    stopped = request.stopped
    if stopped:
        head.append(f"  stopped after {stopped.rounds} rounds ({format_number(stopped.elapsed_s)} s): "
                    f"{stopped.reason}")
    decision = request.ab.decision if request.ab else None
    if decision:
        low, high = decision.ci_pct
        head.append(f"  ab: {decision.verdict or 'undecided'}, {decision.estimate_pct:+.2f}% (+ = better; "
                    f"{100 * (1 - decision.alpha):g}% CI {low:+.2f}%..{high:+.2f}%, n = {decision.n} pairs): "
                    f"{decision.reason}")
    return "\n".join(head + ["", render_machine(run.environment, width), "",
                             render_point_summaries(summaries, width), "", *notes]).rstrip()


def _describe_plan(plan: PlanRecord) -> str:
    """How one benchmark of the run was sampled, in one line."""
    options = plan.options
    order = f"shuffled (seed {options.seed})" if options.shuffle else "round-robin"
    parts = [f"{plan.benchmark}: repetitions {options.repetitions}", f"warm-up {options.warmup}",
             f"order {order}"]
    if options.cpus:
        parts.append(f"cpus {list(options.cpus)}")
    if options.monitors:
        parts.append("monitors " + ",".join(options.monitors))
    if options.timeout:
        parts.append(f"timeout {format_number(options.timeout)} s")
    if plan.shell_overhead:
        parts.append(f"shell start-up subtracted {format_number(plan.shell_overhead[0] * 1e3)} ms")
    return ", ".join(parts)
