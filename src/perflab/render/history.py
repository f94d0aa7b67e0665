"""``perflab history`` and ``perflab changes`` as text tables and JSON: layout of
``perflab.model.report.history`` (History, Series, Change, ChangeList); no statistic is
computed here.

History, one block per series:

    nap  -  time (s, lower is better)  e-divisive; commit-graph order of /src/app
    ▁▁▁▁▁▁▁▁▇▇▇▇▇▇█▇
      #  commit        describe     n   median     mean  ±sd  change
      1  2f0c1d3e4a5b  v1.0         3  10.20ms  10.21ms  2.1%
      ...
      9  77ab01c2d3e4  v1.0-8-g77a  3  15.31ms  15.30ms  1.8%  -49.9% regression  [3f2a1b9c0d]

The sparkline and the change are the per-commit medians detection ran on; a change's %
is between its segments' centres (the mean of their per-commit medians). A commit the
repository's graph does not reach (placed by time) is marked ``~`` before its number.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

from perflab.model.alerts import Alert
from perflab.model.report.history import ORDER_GRAPH, Change, ChangeList, History, HistoryPoint, Segment, Series
from perflab.render.compare_common import finite
from perflab.render.compare_data import number
from perflab.render.texttable import format_table
from perflab.render.units import format_number, scale_for

SPARKS = "▁▂▃▄▅▆▇█"
CENTRE_NOTE = "centre = mean of the per-commit medians detection ran on"


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


def shift(c: Change, digits: int = 1) -> str:
    """What changed: the % step of the level (positive = better), or for a change in the
    noise's spread alone its ratio after/before -- never a % of the level."""
    if c.kind == "spread":
        return f"spread x{c.spread_ratio:.2f}" if finite(c.spread_ratio) else "spread"
    return f"{c.oriented_pct:+.{digits}f}%" if finite(c.oriented_pct) else "-"


def p_value(value: float) -> str:
    if not finite(value):
        return "-"
    return f"{value:.2g}" if value >= 1e-4 else f"{value:.1e}"


def when(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def _off_graph(history: History) -> int:
    """Points of the history the repository's graph does not reach (placed by time)."""
    if history.order != ORDER_GRAPH:
        return 0
    return len({sp.point.key for s in history.series for sp in s.points if not sp.point.on_line})


def _order_text(history: History, series: Series) -> str:
    if history.order == ORDER_GRAPH:
        off = sum(not sp.point.on_line for sp in series.points)
        by_time = f", {off} not in it placed by time (~)" if off else ""
        return f"commit-graph order of {history.repo}{by_time}"
    return "time order"


def change_line(c: Change, factor: float, unit: str) -> str:
    """The change in two lines: the centres and % detection compared, then the raw samples
    (and the detector's p); a third naming each commit's share when it is spread over several."""
    line = (f"  change [{c.id}] at {c.point.short}: {_scaled(c.before.centre, factor, unit)} -> "
            f"{_scaled(c.after.centre, factor, unit)}, {shift(c)} {c.verdict.value} "
            f"(centres of {c.before.points} and {c.after.points} commits, p={p_value(c.detection_p)})\n"
            f"    samples: {_mean_sd(c.before.mean, c.before.stddev, factor, unit)} (n={c.before.n}) -> "
            f"{_mean_sd(c.after.mean, c.after.stddev, factor, unit)} (n={c.after.n}), p={p_value(c.p_value)}")
    return line + (f"\n    {spread_text(c)}" if c.parts else "")


def spread_text(c: Change) -> str:
    """A change spread over commits: "spread over 3 commits (a..c): a 36%, b 33%, c 31%"."""
    named = ", ".join(f"{p.point.short[:8]} {100 * p.share:.0f}%" for p in c.parts)
    return (f"spread over {len(c.parts)} commits ({c.parts[0].point.short[:8]}..{c.parts[-1].point.short[:8]}): "
            + named)


def _series_block(history: History, s: Series, hosts: int) -> str:
    factor, unit = scale_for(s.typical, s.unit)
    unit = _unit_suffix(unit)
    starts = {c.index: c for c in (*s.changes, *((s.tip,) if s.tip else ()))}
    rows = []
    for i, sp in enumerate(s.points):
        m = sp.summary
        change = starts.get(i)
        mark = (f"{shift(change)} {change.verdict.value}{' (suspect)' if change.suspect else ''}  [{change.id}]"
                if change else "")
        rows.append([("" if sp.point.on_line or history.order != ORDER_GRAPH else "~") + str(i + 1),
                     sp.point.short, sp.point.describe or "", str(m.n), _scaled(m.median, factor, unit),
                     _scaled(m.mean, factor, unit), f"{m.cov_pct:.1f}%" if finite(m.cov_pct) else "", mark])
    direction = "lower" if s.info.direction.value == "lower" else "higher"
    title = (f"{s.benchmark}  " + (f"{s.point_name}  " if s.params else "")
             + f"{s.metric} ({s.unit or 'no unit'}, {direction} is better)"
             f"  {s.method}; {_order_text(history, s)}" + (f"  [host {s.host}]" if hosts > 1 else ""))
    table = format_table(["#", "commit", "describe", "n", "median", "mean", "±sd", "change"], rows,
                         align="rllrrrrl", indent="  ")
    lines = [title, "  " + sparkline(s.medians()), table]
    lines += [change_line(c, factor, unit) for c in s.changes]
    if not s.changes:
        lines.append("  no change point")
    if s.tip:
        lines.append(f"  newest commits (tip detector): {s.tip.status}\n" + change_line(s.tip, factor, unit))
    return "\n".join(lines)


def render_history(history: History) -> str:
    hosts = len({s.host for s in history.series})
    blocks = [_series_block(history, s, hosts) for s in history.series]
    footer = ("order: the commit graph (first-parent spine, a merged branch's commits just before its merge)"
              + ("; ~ = not reached from the newest commit, placed by time" if _off_graph(history) else "")
              + "\n" if history.order == ORDER_GRAPH else "")
    footer += ("sparkline: per-commit medians; ±sd: relative to the mean\n"
               f"change % oriented (positive = better) between the segments' centres ({CENTRE_NOTE}); "
               "its p: Welch t-test of those medians\n"
               "samples: mean ±sd of the raw samples of each segment; p: the detector's (on commits Welch's "
               "t-test of the commits' medians, a spread change's commits left out: docs/change-detection.md)")
    return "\n\n".join(blocks) + "\n\n" + footer + "\n"


def _point_json(point: HistoryPoint) -> dict[str, Any]:
    return {"key": point.key, "commit": point.commit, "describe": point.describe,
            "runs": [r.id for r in point.runs], "on_line": point.on_line,
            "started_at": point.started_at}


def _segment_json(s: Segment) -> dict[str, Any]:
    return {"n": s.n, "points": s.points, "centre": number(s.centre), "centre_stddev": number(s.centre_sd),
            "mean": number(s.mean), "stddev": number(s.stddev)}


def change_json(c: Change, subject: str | None = None) -> dict[str, Any]:
    return {
        "id": c.id, "kind": c.verdict.value, "verdict": c.verdict.value, "host": c.host,
        "benchmark": c.benchmark, "params": c.params,
        "metric": c.metric, "unit": c.unit, "direction": c.direction.value, "index": c.index,
        "commit": c.point.commit, "describe": c.point.describe, "subject": subject,
        "runs": [r.id for r in c.point.runs], "previous": _point_json(c.previous),
        "started_at": c.point.started_at,
        "before": _segment_json(c.before), "after": _segment_json(c.after),
        "change_pct": number(c.oriented_pct), "oriented_pct": number(c.oriented_pct),  # SIGN: + = better
        "raw_change_pct": number(c.change_pct),
        "p_value": number(c.p_value), "detection_p": number(c.detection_p), "method": c.method,
        # "kind" above is the verdict (kept for scripts); what changed is "change_kind"
        "change_kind": c.kind, "spread_ratio": number(c.spread_ratio),
        # "suspect": the tip detector saw one or two commits out of line, not yet a level that holds
        "status": c.status,
        # a change spread over several commits: each one's share of the whole (sums to 1)
        "parts": [{"index": p.index, "commit": p.point.commit, "key": p.point.key, "share": number(p.share)}
                  for p in c.parts],
    }


def history_json(history: History) -> str:
    data = {
        "order": history.order, "repo": history.repo, "warnings": [w.message for w in history.warnings],
        "series": [{
            "host": s.host, "benchmark": s.benchmark, "params": s.params, "metric": s.metric,
            "unit": s.unit, "direction": s.info.direction.value, "method": s.method,
            "points": [dict(_point_json(p.point), n=p.summary.n, median=number(p.summary.median),
                            mean=number(p.summary.mean), stddev=number(p.summary.stddev),
                            values=list(p.values))
                       for p in s.points],
            "changes": [change_json(c) for c in s.changes],
            # the tip detector's finding on the newest commits (suspect or confirmed), or null
            "tip": change_json(s.tip) if s.tip else None,
        } for s in history.series],
    }
    return json.dumps(data, indent=2) + "\n"


SUSPECT_NOTE = ("; (suspect): the newest one or two commits are out of line, the new level not yet "
                "confirmed (the tip detector: docs/change-detection.md)")


CHANGE_HEADERS = ["id", "when", "commit", "subject", "benchmark", "point", "metric",
                  "before", "after", "change", "verdict", "p", "detector p"]
CHANGES_LEGEND = (f"before/after: the centres of the segments ({CENTRE_NOTE}); change % oriented: "
                  "positive = better; p: Welch t-test of the per-commit medians, detector p: the detector's own (on "
                  "commits the same test, a spread change's commits left out); "
                  "'perflab report change ID' explains one")


def change_cells(listing: ChangeList) -> tuple[list[str], list[list[str]]]:
    """The headers and one row of cells per listed change: the text table's and the dashboard's."""
    hosts = {item.change.host for item in listing.changes}
    alerted = any(item.alert is not None for item in listing.changes)
    rows = []
    for item in listing.changes:
        c = item.change
        factor, unit = scale_for(c.before.centre if finite(c.before.centre) else 0.0, c.unit)
        unit = _unit_suffix(unit)
        named = item.subject or c.point.describe or ""
        rows.append([c.id, when(c.point.started_at).split()[0], c.point.short[:8], named[:40],
                     c.benchmark + (f" @{c.host}" if len(hosts) > 1 else ""), c.point_name, c.metric,
                     _scaled(c.before.centre, factor, unit), _scaled(c.after.centre, factor, unit),
                     shift(c), c.verdict.value + (" (suspect)" if c.suspect else "")
                     + (f" (over {len(c.parts)} commits)" if c.parts else ""),
                     p_value(c.detection_p), p_value(c.p_value)]
                    + ([alert_mark(item.alert)] if alerted else []))
    return CHANGE_HEADERS + (["alert"] if alerted else []), rows


def render_changes(listing: ChangeList) -> str:
    if not listing.changes:
        return "no change point found\n"
    headers, rows = change_cells(listing)
    table = format_table(headers, rows, align="lllllllrrrlrrl")
    return (table + f"\n\n{CHANGES_LEGEND}"
            + (SUSPECT_NOTE if any(i.change.suspect for i in listing.changes) else "") + "\n")


def state_text(alert: Alert) -> str:
    return f"duplicate of {alert.duplicate_of}" if alert.duplicate_of is not None else alert.state


def alert_mark(alert: Alert | None) -> str:
    """An alert as `changes` names it."""
    if alert is None:
        return ""
    return (f"alert {alert.id} {state_text(alert)}" + (" suspect" if alert.status == "suspect" else "")
            + (" recovered" if alert.recovered else ""))


def _alert_json(alert: Alert | None) -> dict[str, Any] | None:
    if alert is None:
        return None
    return {"id": alert.id, "state": alert.state, "recovered": alert.recovered, "summary": alert.summary_id}


def changes_json(listing: ChangeList) -> str:
    return json.dumps({"warnings": [w.message for w in listing.warnings],
                       "changes": [dict(change_json(item.change, item.subject), alert=_alert_json(item.alert))
                                   for item in listing.changes]},
                      indent=2) + "\n"

