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

from perflab.model.records import RunInfo
from perflab.render.machine import render_machine
from perflab.render.texttable import format_table
from perflab.render.units import format_number, format_scaled

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


def render_point_summaries(summaries: Iterable[Any]) -> str:
    """One row per point and metric: n, centre, median, stddev, min, max, failures."""
    rows = []
    for s in summaries:
        stats = s.summary
        cells, unit = format_scaled([stats.centre, stats.median, stats.stddev, stats.min, stats.max],
                                    s.unit, reference=stats.centre)
        point = " ".join(f"{k}={v}" for k, v in s.params.items()) or "-"
        cov = f"{stats.cov:.2f}%" if math.isfinite(stats.cov) else "-"
        failures = str(s.failures) + (f" ({s.failure_note})" if s.failures else "")
        rows.append([s.benchmark, point, s.metric, str(stats.n),
                     f"{_MEAN_NAMES.get(s.mean_kind.value, s.mean_kind.value)} {cells[0]}",
                     cells[1], cells[2], cov, cells[3], cells[4], unit, failures])
    if not rows:
        return "no samples"
    return format_table(["benchmark", "point", "metric", "n", "mean", "median", "stddev", "cov",
                         "min", "max", "unit", "failures"], rows, align="lllrrrrrrrll")


def render_show(run: RunInfo, summaries: Sequence[Any], warnings: Sequence[str] = ()) -> str:
    commit = run.commit_describe or run.commit
    spec = run.spec or {}
    head = [f"run {run.id}  label {run.label}" + (f"  commit {commit}" if commit else ""),
            f"  status {run.status.value}, started {when(run.started_at)}, finished {when(run.finished_at)}"]
    plans = spec.get("plans", [])
    if spec.get("interleaved") and len(plans) > 1:
        head.append(f"  {len(plans)} commands interleaved: every round runs each once")
    for plan in plans:
        head.append("  " + _describe_plan(plan))
        for name, overhead in (plan.get("monitor_overhead") or {}).items():
            head.append(f"    monitor {name}: {overhead}")
    stopped = spec.get("stopped")
    if stopped:
        head.append(f"  stopped after {stopped.get('rounds')} rounds ({format_number(stopped.get('elapsed_s', 0))} s): "
                    f"{stopped.get('reason')}")
    decision = (spec.get("ab") or {}).get("decision")
    if decision:
        low, high = decision["ci_pct"]
        head.append(f"  ab: {decision['verdict'] or 'undecided'}, {decision['estimate_pct']:+.2f}% "
                    f"({100 * (1 - decision['alpha']):g}% CI {low:+.2f}%..{high:+.2f}%, n = {decision['n']} pairs): "
                    f"{decision['reason']}")
    tail = [f"warning: {w}" for w in warnings]
    return "\n".join(head + ["", render_machine(run.environment), "",
                             render_point_summaries(summaries), *tail])


def _describe_plan(plan: dict[str, Any]) -> str:
    """How one benchmark of the run was sampled, in one line."""
    workload = plan.get("workload") or {}
    options = plan.get("options") or {}
    what = workload.get("benchmark") or workload.get("workload", "?")
    order = f"shuffled (seed {options.get('seed')})" if options.get("shuffle") else "round-robin"
    parts = [f"{what}: repetitions {options.get('repetitions')}", f"warm-up {options.get('warmup')}",
             f"order {order}"]
    if options.get("cpus"):
        parts.append(f"cpus {options['cpus']}")
    if options.get("monitors"):
        parts.append("monitors " + ",".join(options["monitors"]))
    if options.get("timeout"):
        parts.append(f"timeout {format_number(options['timeout'])} s")
    if plan.get("shell_overhead"):
        parts.append(f"shell start-up subtracted {format_number(plan['shell_overhead'][0] * 1e3)} ms")
    return ", ".join(parts)
