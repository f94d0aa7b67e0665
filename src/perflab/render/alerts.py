"""Alerts as text tables and JSON: layout of model/alerts.py; nothing is computed here
(a summary's state is the model's rule)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from perflab.model.alerts import Alert, AlertDetail, AlertEvent, AlertSummary, point_commit, short_point
from perflab.model.output_formats import FormatRegistry, OutputFormat
from perflab.render.change_report import render_change_report
from perflab.render.compare_data import number
from perflab.render.history import p_value, pct, state_text
from perflab.render.texttable import format_table

ALERT_HEADERS = ["id", "state", "status", "recovered", "series", "commits", "change", "p"]
LEGEND = ("change % oriented (positive = better) between the centres of the segments before and after; "
          "p: Welch t-test of the per-commit medians; status: confirmed, or suspect (the newest one or two "
          "commits out of line, the level not yet held: rerun them); 'perflab alert ID' shows one")


def stamp(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def commits_text(alert: Alert | AlertSummary) -> str:
    return f"{short_point(alert.last_good)}..{short_point(alert.first_bad)}"


def alert_cells(alert: Alert) -> list[str]:
    """One alert as the cells of ALERT_HEADERS (the text table and the dashboard's)."""
    return [str(alert.id), state_text(alert), alert.status, "yes" if alert.recovered else "", alert.series_name,
            commits_text(alert), f"{pct(alert.oriented_pct)} {alert.kind}", p_value(alert.p_value)]


def render_alerts(alerts: Sequence[Alert]) -> str:
    if not alerts:
        return "no alerts\n"
    return format_table(ALERT_HEADERS, [alert_cells(a) for a in alerts], align="rlllllrr") + f"\n\n{LEGEND}\n"


def render_summaries(summaries: Sequence[AlertSummary]) -> str:
    if not summaries:
        return "no alerts\n"
    blocks = []
    for s in summaries:
        head = (f"summary {s.id}  {s.state}  commits {commits_text(s)}  {len(s.alerts)} alert(s)"
                + (f"  bisected: {s.culprit.named}" if s.culprit else ""))
        body = format_table(ALERT_HEADERS, [alert_cells(a) for a in s.alerts], align="rlllllrr", indent="  ")
        blocks.append(head + "\n" + body)
    return "\n\n".join(blocks) + f"\n\nsummary state: from its alerts (model/alerts.py SUMMARY_PRECEDENCE)\n{LEGEND}\n"


def alert_json(alert: Alert) -> dict[str, Any]:
    return {"id": alert.id, "summary": alert.summary_id, "change": alert.change_id, "state": alert.state,
            "status": alert.status,
            "duplicate_of": alert.duplicate_of, "recovered": alert.recovered, "recovered_by": alert.recovered_by,
            "host": alert.host, "benchmark": alert.benchmark, "params": alert.params, "metric": alert.metric,
            "unit": alert.unit, "direction": alert.direction, "kind": alert.kind,
            "last_good": point_commit(alert.last_good) or alert.last_good,
            "first_bad": point_commit(alert.first_bad) or alert.first_bad,
            "before": number(alert.before), "after": number(alert.after),
            "change_pct": number(alert.oriented_pct), "oriented_pct": number(alert.oriented_pct),  # SIGN
            "raw_change_pct": number(alert.change_pct),
            # the change's p, under the key history and changes give it too
            "p_value": number(alert.p_value), "detection_p": number(alert.p_value), "method": alert.method,
            "created_at": alert.created_at, "updated_at": alert.updated_at,
            "assignee": alert.assignee, "bug_url": alert.bug_url}


def event_json(event: AlertEvent) -> dict[str, Any]:
    return {"at": event.at, "who": event.who, "action": event.action, "from": event.from_state,
            "to": event.to_state, "note": event.note, "run": event.run_id}


def alerts_json(alerts: Sequence[Alert]) -> str:
    return json.dumps({"alerts": [alert_json(a) for a in alerts]}, indent=2) + "\n"


def summaries_json(summaries: Sequence[AlertSummary]) -> str:
    return json.dumps({"summaries": [
        {"id": s.id, "state": s.state, "last_good": s.last_good, "first_bad": s.first_bad, "repo": s.repo,
         "culprit": s.culprit.commit if s.culprit else None,
         "alerts": [alert_json(a) for a in s.alerts]} for s in summaries]}, indent=2) + "\n"


def event_cells(event: AlertEvent) -> list[str]:
    move = (f"{event.from_state or ''} -> {event.to_state}" if event.from_state != event.to_state
            else "")
    evidence = f"run {event.run_id}" if event.run_id is not None else ""
    return [stamp(event.at), event.who, event.action, move, " ".join(x for x in (evidence, event.note) if x)]


def render_alert_detail(detail: AlertDetail) -> str:
    a = detail.alert
    others = [x for x in detail.summary.alerts if x.id != a.id]
    culprit = detail.culprit
    out = [f"alert {a.id}: {a.kind} of {a.benchmark}.{a.metric} {pct(a.oriented_pct)}"
           + (f" at commit {culprit.named}" if culprit else "") + f"  [{state_text(a)}"
           + (f", recovered by change {a.recovered_by}" if a.recovered else "") + "]",
           f"series: {a.series_name}",
           *([f"culprit: {culprit.commit}, {culprit.answer}"] if culprit else []),
           f"commits: {point_commit(a.last_good) or a.last_good} (last good) .. "
           f"{point_commit(a.first_bad) or a.first_bad} (first bad)",
           f"change: {a.change_id} ({a.method}), p = {p_value(a.p_value)}",
           f"summary {detail.summary.id}: {detail.summary.state}, {len(detail.summary.alerts)} alert(s)"
           + (": " + ", ".join(f"{x.id} {x.benchmark}.{x.metric} @{x.host} {pct(x.oriented_pct)} {x.state}"
                             for x in others) if others else ""),
           "", "history:",
           format_table(["when", "who", "action", "state", "note"], [event_cells(e) for e in detail.events],
                        indent="  "),
           ""]
    if detail.report is not None:
        out.append(render_change_report(detail.report).rstrip("\n"))
    else:
        out.append(detail.report_missing or "no report")
    return "\n".join(out) + "\n"


def detail_json(detail: AlertDetail) -> str:
    return json.dumps({"alert": alert_json(detail.alert), "summary": {"id": detail.summary.id,
                       "state": detail.summary.state, "alerts": [a.id for a in detail.summary.alerts]},
                       "events": [event_json(e) for e in detail.events],
                       "culprit": None if detail.culprit is None else {
                           "commit": detail.culprit.commit, "subject": detail.culprit.subject,
                           "author": detail.culprit.author, "answer": detail.culprit.answer,
                           "host": detail.culprit.host}}, indent=2) + "\n"



@dataclass(frozen=True)
class AlertLayouts:
    """One format's layout of each thing ``alerts`` and ``alert`` show."""

    alerts: Callable[[Sequence[Alert]], str]
    summaries: Callable[[Sequence[AlertSummary]], str]
    detail: Callable[[AlertDetail], str]


ALERT_FORMATS: FormatRegistry[OutputFormat[AlertLayouts]] = FormatRegistry(
    OutputFormat(name="text", help="tables (an alert: its events and its 'report change')",
                 render=AlertLayouts(render_alerts, render_summaries, render_alert_detail)),
    OutputFormat(name="json", help="every field, stable keys", render=AlertLayouts(alerts_json, summaries_json,
                                                                                   detail_json)),
)
