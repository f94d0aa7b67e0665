"""A comparison as JSON or CSV, for programs: every number, interval, test and warning.

JSON (stable keys; NaN and infinities are written as null; numbers keep 10
significant digits)::

    {"perflab_compare": 1,
     "method": {"key", "name", "fdr", "confidence", "fdr_comparisons", "rule"},
     "runs": [{"id", "label", "commit", "commit_describe", "host", "role"}],
     "warnings": [report warnings],
     "rows": [{"benchmark", "params", "point", "metric", "unit", "direction", "mean",
               "noise_floor",
               "base": SIDE,
               "candidates": [{**SIDE, "comparison": null | {
                   "change_pct", "ci_low", "ci_high", "confidence", "p_value", "q_value",
                   "min_p", "verdict", "significant", "method", "interval", "noise_floor",
                   "rule": null | {"name", "changed", "detail"},
                   "run_to_run": null | {"source", "d0", "d", "spread_pct", "runs_needed"},
                                 (separate runs tested with a prior of run-to-run variance)
                   "warnings": [WARNING]}}]}],
     "profile": [{"name", "benchmark", "params", "event", "kind", "symbol",
                  "sides": [{"label", "mean_pct", "stddev_pct", "n", "change_points",
                             "comparison": {"change_points", "ci_low", "ci_high", "p_value",
                                            "q_value", "verdict", "significant", "rule"}}]}]
                                 (only with profile data; largest change first)
     "profile_method": {"key", "name", "fdr", "fdr_comparisons", "noise_floor_points",
                        "unit", "warnings"},
     "counters": [rows as above, of the monitor metrics]}

    SIDE = {"label", "run_id", "present", "n", "failures", "centre", "median", "stddev",
            "cov", "min", "max", "warnings": [WARNING]}
    WARNING = {"kind", "side": "base" | "candidate" | "pair", "message"}
    verdict: "improvement" | "regression" | "no change" | "undecided"

CSV: one line per (row, candidate), parameters in ``param_NAME`` columns, the baseline's
and the candidate's numbers side by side, then the comparison; warnings joined by
`` | ``. Report-level warnings exist only in JSON.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from typing import Any

from perflab.model.records import RunInfo
from perflab.model.report.compare import Change, CompareReport, SideSummary
from perflab.model.verdicts import StatWarning

SUMMARY_FIELDS = ("n", "centre", "median", "stddev", "cov", "min", "max")


def number(value: Any) -> float | int | None:
    """A finite number rounded to 10 significant digits (stable across platforms), else None."""
    if value is None:
        return None
    if isinstance(value, (bool, int)):
        return value
    value = float(value)
    if not math.isfinite(value):
        return None
    return float(f"{value:.10g}")


def _warnings(items: Sequence[StatWarning]) -> list[dict[str, str | None]]:
    return [{"kind": w.kind, "side": w.side.value if w.side else None, "message": w.message} for w in items]


def _side(label: str, run: RunInfo, summary: SideSummary | None) -> dict[str, Any]:
    out: dict[str, Any] = {"label": label, "run_id": run.id, "present": summary is not None}
    for field in SUMMARY_FIELDS:
        out[field] = (summary.n if field == "n" else number(getattr(summary, field))) if summary is not None else (
            0 if field == "n" else None)
    out["failures"] = summary.failures if summary is not None else 0
    out["warnings"] = _warnings(summary.warnings) if summary is not None else []
    return out


def _comparison(d: Change | None, side_warnings: Sequence[StatWarning]) -> dict[str, Any] | None:
    if d is None:
        return None
    rule = d.rule
    return {
        "change_pct": number(d.pct), "ci_low": number(d.ci.low), "ci_high": number(d.ci.high),
        "confidence": number(d.ci.confidence), "p_value": number(d.p_value), "q_value": number(d.q_value),
        "min_p": number(d.min_p), "verdict": d.verdict.value, "significant": d.significant, "method": d.test,
        "interval": d.interval, "noise_floor": number(d.noise_floor),
        "rule": None if rule is None else {"name": rule.name, "changed": rule.changed, "detail": rule.detail},
        "run_to_run": None if d.run_to_run is None else {
            "source": d.run_to_run.source, "d0": number(d.run_to_run.d0), "d": number(d.run_to_run.d),
            "spread_pct": number(d.run_to_run.spread_pct), "runs_needed": d.run_to_run.runs_needed},
        "warnings": _warnings(side_warnings),
    }


def comparison_data(report: CompareReport) -> dict[str, Any]:
    runs, labels = report.runs, report.labels
    rows = []
    for row in report.rows:
        base_warnings = row.base.warnings if row.base else ()
        rows.append({
            "benchmark": row.benchmark, "params": row.params, "point": row.point, "metric": row.metric,
            "unit": row.unit, "direction": row.direction.value, "mean": row.mean_kind.value,
            "noise_floor": number(row.noise_floor),
            "base": _side(labels[0], runs[0], row.base),
            "candidates": [{**_side(labels[i + 1], runs[i + 1], cell.side),
                            "comparison": _comparison(cell.change, (*base_warnings,
                                                                    *(cell.side.warnings if cell.side else ()),
                                                                    *cell.warnings))}
                           for i, cell in enumerate(row.cells)],
        })
    data: dict[str, Any] = {
        "perflab_compare": 1,
        "method": {"key": report.method, "name": report.method_name, "fdr": number(report.q),
                   "confidence": number(report.confidence), "fdr_comparisons": report.tested,
                   "rule": report.is_rule},
        "runs": [{"id": r.id, "label": r.label, "commit": r.commit, "commit_describe": r.commit_describe,
                  "host": r.host, "role": "base" if i == 0 else "candidate"} for i, r in enumerate(runs)],
        "warnings": list(report.warnings),
        "rows": rows,
    }
    profile = report.profile
    if profile is not None:
        from perflab.render.compare_profile import profile_json, profile_method_json
        data["profile"] = profile_json(profile, labels, number)
        data["profile_method"] = profile_method_json(profile, number)
        if profile.counters is not None:
            data["counters"] = comparison_data(profile.counters)["rows"]
    return data


def render_json(report: CompareReport) -> str:
    return json.dumps(comparison_data(report), indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def _csv_number(value: Any) -> str:
    value = number(value)
    return "" if value is None else repr(value)


def render_csv(report: CompareReport) -> str:
    labels, runs = report.labels, report.runs
    names = list(dict.fromkeys(name for row in report.rows for name in row.params))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    side_fields = ["n", "failures", "centre", "median", "stddev", "cov", "min", "max"]
    writer.writerow(["benchmark", *(f"param_{n}" for n in names), "metric", "unit", "direction", "mean",
                     "base_label", "base_run_id", *(f"base_{f}" for f in side_fields),
                     "label", "run_id", *side_fields,
                     "change_pct", "ci_low", "ci_high", "confidence", "p_value", "q_value",
                     "verdict", "significant", "method", "warnings"])

    def side(summary: SideSummary | None) -> list[str]:
        if summary is None:
            return ["0", "0", *([""] * 6)]
        return [str(summary.n), str(summary.failures),
                *(_csv_number(getattr(summary, f)) for f in side_fields[2:])]

    for row in report.rows:
        fixed = [row.benchmark, *(str(row.params.get(n, "")) for n in names), row.metric, row.unit,
                 row.direction.value, row.mean_kind.value, labels[0], str(runs[0].id), *side(row.base)]
        for i, cell in enumerate(row.cells):
            d = cell.change
            messages = [f"{labels[0]}: {w.message}" for w in (row.base.warnings if row.base else ())]
            messages += [f"{labels[i + 1]}: {w.message}" for w in (cell.side.warnings if cell.side else ())]
            messages += [f"{labels[i + 1]} vs {labels[0]}: {w.message}" for w in cell.warnings]
            compared = (["", "", "", "", "", "", "", "", report.method_name] if d is None else
                        [_csv_number(d.pct), _csv_number(d.ci.low), _csv_number(d.ci.high),
                         _csv_number(d.ci.confidence), _csv_number(d.p_value), _csv_number(d.q_value),
                         d.verdict.value, "true" if d.significant else "false", d.test])
            writer.writerow([*fixed, labels[i + 1], str(runs[i + 1].id), *side(cell.side),
                             *compared, " | ".join(dict.fromkeys(messages))])
    return out.getvalue()
