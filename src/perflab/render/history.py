"""``perflab history`` and ``perflab changes`` as text tables and JSON.

Render sits below analysis, so histories and changes are read duck-typed (see
``perflab.analysis.history``: History, Series, HistoryPoint, Change).

History, one block per series:

    nap  -  time (s, lower is better)  e-divisive; first-parent order of /src/app
    ▁▁▁▁▁▁▁▁▇▇▇▇▇▇█▇
      #  commit        describe     n    mean    ±sd  change
      1  2f0c1d3e4a5b  v1.0         3  10.21ms  2.1%
      ...
      9  77ab01c2d3e4  v1.0-8-g77a  3  15.30ms  1.8%  -49.9% regression  [3f2a1b9c0d]

A commit off the first-parent line is marked ``~`` before its number.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Sequence
from typing import Any

from perflab.render.compare_common import finite
from perflab.render.compare_data import number
from perflab.render.texttable import format_table
from perflab.render.units import format_number, scale_for

SPARKS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float]) -> str:
    """One block character per value, its height by value; a space for a gap."""
    present = [v for v in values if finite(v)]
    if not present:
        return ""
    lo, hi = min(present), max(present)
    span = hi - lo
    out = []
    for v in values:
        if not finite(v):
            out.append(" ")
        else:
            out.append(SPARKS[0 if span == 0 else min(len(SPARKS) - 1, int((v - lo) / span * len(SPARKS)))])
    return "".join(out)


def _scaled(value: float, factor: float, unit: str) -> str:
    return f"{format_number(value / factor)}{unit}" if finite(value) else "-"


def _mean_sd(mean: float, sd: float, factor: float, unit: str) -> str:
    if not finite(mean):
        return "-"
    shown = _scaled(mean, factor, unit)
    return f"{shown} ±{format_number(sd / factor, 3)}" if finite(sd) else shown


def _unit_suffix(unit: str) -> str:
    return unit if unit in ("s", "ms", "us", "ns", "B", "KiB", "MiB", "GiB") else (f" {unit}" if unit else "")


def pct(value: float) -> str:
    return f"{value:+.1f}%" if finite(value) else "-"


def p_value(value: float) -> str:
    if not finite(value):
        return "-"
    return f"{value:.2g}" if value >= 1e-4 else f"{value:.1e}"


def when(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def _order_text(history: Any) -> str:
    if history.order == "first-parent":
        return f"first-parent order of {history.repo}"
    return "time order"


def render_history(history: Any) -> str:
    hosts = {s.host for s in history.series}
    blocks = []
    for s in history.series:
        means = s.means()
        shown = [abs(m) for m in means if finite(m) and m != 0]
        reference = float(sorted(shown)[len(shown) // 2]) if shown else 0.0
        factor, unit = scale_for(reference, s.unit)
        unit = _unit_suffix(unit)
        starts = {c.index: c for c in s.changes}
        rows = []
        for i, (point, values) in enumerate(zip(s.points, s.samples)):
            mean = float(values.mean()) if values.size else math.nan
            sd = float(values.std(ddof=1)) if values.size > 1 else math.nan
            cov = f"{100 * sd / mean:.1f}%" if finite(sd) and mean else ""
            change = starts.get(i)
            mark = f"{pct(change.oriented_pct)} {change.kind}  [{change.id}]" if change else ""
            rows.append([("" if point.on_line or history.order != "first-parent" else "~") + str(i + 1),
                         point.short, point.describe or "", str(values.size),
                         _scaled(mean, factor, unit), cov, mark])
        direction = "lower" if s.info.direction.value == "lower" else "higher"
        title = (f"{s.benchmark}  " + (f"{s.point_name}  " if s.params else "") + f"{s.metric} ({s.unit or 'no unit'}, {direction} is better)"
                 f"  {s.method}; {_order_text(history)}" + (f"  [host {s.host}]" if len(hosts) > 1 else ""))
        table = format_table(["#", "commit", "describe", "n", "mean", "±sd", "change"], rows,
                             align="rllrrrl", indent="  ")
        lines = [title, "  " + sparkline(list(means)), table]
        for c in s.changes:
            lines.append(f"  change [{c.id}] at {c.point.short}: "
                         f"{_mean_sd(c.before.mean, c.before.stddev, factor, unit)} (n={c.before.n}) -> "
                         f"{_mean_sd(c.after.mean, c.after.stddev, factor, unit)} (n={c.after.n}), "
                         f"{pct(c.oriented_pct)} {c.kind}, p={p_value(c.p_value)}")
        if not s.changes:
            lines.append("  no change point")
        blocks.append("\n".join(lines))
    footer = ("~ = not on the first-parent line, placed by time; " if history.order == "first-parent" else "")
    footer += ("change % oriented: positive = better; ±sd relative to the mean; "
               "p = Welch t-test of the raw samples of the two segments")
    return "\n\n".join(blocks) + "\n\n" + footer + "\n"


def _point_json(point: Any) -> dict[str, Any]:
    return {"key": point.key, "commit": point.commit, "describe": point.describe,
            "runs": [r.id for r in point.runs], "on_line": point.on_line,
            "started_at": point.started_at}


def change_json(c: Any, subject: str | None = None) -> dict[str, Any]:
    return {
        "id": c.id, "kind": c.kind, "host": c.host, "benchmark": c.benchmark, "params": c.params,
        "metric": c.metric, "unit": c.unit, "direction": c.direction.value, "index": c.index,
        "commit": c.point.commit, "describe": c.point.describe, "subject": subject,
        "runs": [r.id for r in c.point.runs], "previous": _point_json(c.previous),
        "started_at": c.point.started_at,
        "before": {"n": c.before.n, "points": c.before.points, "mean": number(c.before.mean),
                   "stddev": number(c.before.stddev)},
        "after": {"n": c.after.n, "points": c.after.points, "mean": number(c.after.mean),
                  "stddev": number(c.after.stddev)},
        "change_pct": number(c.change_pct), "oriented_pct": number(c.oriented_pct),
        "p_value": number(c.p_value), "detection_p": number(c.detection_p), "method": c.method,
    }


def history_json(history: Any) -> str:
    data = {
        "order": history.order, "repo": history.repo, "warnings": list(history.warnings),
        "series": [{
            "host": s.host, "benchmark": s.benchmark, "params": s.params, "metric": s.metric,
            "unit": s.unit, "direction": s.info.direction.value, "method": s.method,
            "points": [dict(_point_json(p), n=int(x.size),
                            mean=number(float(x.mean())) if x.size else None,
                            stddev=number(float(x.std(ddof=1))) if x.size > 1 else None,
                            values=[float(v) for v in x])
                       for p, x in zip(s.points, s.samples)],
            "changes": [change_json(c) for c in s.changes],
        } for s in history.series],
    }
    return json.dumps(data, indent=2) + "\n"


def render_changes(changes: Sequence[Any], subjects: dict[str, str]) -> str:
    if not changes:
        return "no change point found\n"
    hosts = {c.host for c in changes}
    rows = []
    for c in changes:
        factor, unit = scale_for(c.before.mean if finite(c.before.mean) else 0.0, c.unit)
        unit = _unit_suffix(unit)
        named = subjects.get(c.point.commit or "") or c.point.describe or ""
        rows.append([c.id, when(c.point.started_at).split()[0], c.point.short[:8], named[:40],
                     c.benchmark + (f" @{c.host}" if len(hosts) > 1 else ""), c.point_name, c.metric,
                     _mean_sd(c.before.mean, c.before.stddev, factor, unit),
                     _mean_sd(c.after.mean, c.after.stddev, factor, unit),
                     pct(c.oriented_pct), c.kind, p_value(c.p_value)])
    table = format_table(["id", "when", "commit", "subject", "benchmark", "point", "metric",
                          "before", "after", "change", "kind", "p"], rows, align="llllllllrrlr")
    return (table + "\n\nchange % oriented: positive = better; before/after: mean ±sd of the raw "
            "samples of each segment; 'perflab report change ID' explains one\n")


def changes_json(changes: Sequence[Any], subjects: dict[str, str], warnings: Sequence[str]) -> str:
    return json.dumps({"warnings": list(warnings),
                       "changes": [change_json(c, subjects.get(c.point.commit or "")) for c in changes]},
                      indent=2) + "\n"
