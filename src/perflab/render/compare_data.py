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
                   "verdict", "significant", "method", "interval", "noise_floor",
                   "rule": null | {"name", "changed", "detail"},
                   "warnings": [{"code", "message"}]}}]}],
     "profile": [{"name", "benchmark", "params", "event", "kind", "symbol",
                  "sides": [{"label", "mean_pct", "stddev_pct", "n", "change_points",
                             "comparison": {"change_points", "ci_low", "ci_high", "p_value",
                                            "q_value", "verdict", "significant", "rule"}}]}]
                                 (only with profile data; largest change first)
     "profile_method": {"key", "name", "fdr", "fdr_comparisons", "noise_floor_points",
                        "unit", "warnings"},
     "counters": [rows as above, of the monitor metrics]}

    SIDE = {"label", "run_id", "present", "n", "failures", "centre", "median", "stddev",
            "cov", "min", "max", "warnings": [{"code", "message"}]}

CSV: one line per (row, candidate), parameters in ``param_NAME`` columns, the baseline's
and the candidate's numbers side by side, then the comparison; warnings joined by
`` | ``. Report-level warnings exist only in JSON.
"""

from __future__ import annotations

from perflab.model.verdicts import WarningSide

import csv
import io
import json
from typing import Any

from perflab.render.compare_common import finite, kind, summaries, tested

SUMMARY_FIELDS = ("n", "centre", "median", "stddev", "cov", "min", "max")


def number(value: Any) -> float | int | None:
    """A finite number rounded to 10 significant digits (stable across platforms), else None."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value
    value = float(value)
    if not finite(value):
        return None
    return float(f"{value:.10g}")


def _warnings(items: Any) -> list[dict[str, str]]:
    return [{"kind": w.kind, "side": w.side.value if w.side else None, "message": w.message} for w in items]


def _side(label: str, run: Any, summary: Any, failures: int) -> dict[str, Any]:
    out: dict[str, Any] = {"label": label, "run_id": run.id, "present": summary is not None}
    for field in SUMMARY_FIELDS:
        out[field] = (summary.n if field == "n" else number(getattr(summary, field))) if summary is not None else (
            0 if field == "n" else None)
    out["failures"] = int(failures)
    out["warnings"] = _warnings(summary.warnings) if summary is not None else []
    return out


def _comparison(d: Any) -> dict[str, Any] | None:
    if d is None:
        return None
    rule = getattr(d, "rule", None)
    return {
        "change_pct": number(d.change_pct), "ci_low": number(d.ci_low), "ci_high": number(d.ci_high),
        "confidence": number(d.confidence), "p_value": number(d.p_value), "q_value": number(d.q_value),
        "verdict": kind(d.verdict), "significant": bool(d.significant), "method": d.method,
        "interval": d.interval, "noise_floor": number(d.noise_floor),
        "rule": None if rule is None else {"name": rule.rule, "changed": bool(rule.changed), "detail": rule.detail},
        "warnings": _warnings(d.warnings),
    }


def comparison_data(comparison: Any, profile: Any = None) -> dict[str, Any]:
    runs, labels = comparison.runs, comparison.labels
    rows = []
    for row in comparison.rows:
        sides = summaries(row)
        rows.append({
            "benchmark": row.benchmark, "params": row.params, "point": row.point, "metric": row.metric,
            "unit": row.unit, "direction": kind(row.info.direction), "mean": kind(row.info.mean),
            "noise_floor": number(row.info.noise_floor),
            "base": _side(labels[0], runs[0], sides[0], row.base_failures),
            "candidates": [{**_side(labels[i + 1], runs[i + 1], sides[i + 1], cell.failures),
                            "comparison": _comparison(cell.difference)}
                           for i, cell in enumerate(row.cells)],
        })
    data: dict[str, Any] = {
        "perflab_compare": 1,
        "method": {"key": comparison.method, "name": comparison.method_name, "fdr": number(comparison.q),
                   "confidence": number(comparison.confidence), "fdr_comparisons": tested(comparison),
                   "rule": comparison.method in ("mmtests", "lkp")},
        "runs": [{"id": r.id, "label": r.label, "commit": r.commit, "commit_describe": r.commit_describe,
                  "host": r.host, "role": "base" if i == 0 else "candidate"} for i, r in enumerate(runs)],
        "warnings": list(comparison.warnings),
        "rows": rows,
    }
    if profile is not None:
        from perflab.render.compare_profile import profile_json, profile_method_json
        data["profile"] = profile_json(profile, labels, number)
        method = profile_method_json(profile, number)
        if method is not None:
            data["profile_method"] = method
        counters = getattr(profile, "counters", None)
        if counters is not None:
            data["counters"] = comparison_data(counters)["rows"]
    return data


def render_json(comparison: Any, profile: Any = None) -> str:
    return json.dumps(comparison_data(comparison, profile), indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def _csv_number(value: Any) -> str:
    value = number(value)
    return "" if value is None else repr(value)


def render_csv(comparison: Any) -> str:
    labels, runs = comparison.labels, comparison.runs
    names = list(dict.fromkeys(name for row in comparison.rows for name in row.params))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    side_fields = ["n", "failures", "centre", "median", "stddev", "cov", "min", "max"]
    writer.writerow(["benchmark", *(f"param_{n}" for n in names), "metric", "unit", "direction", "mean",
                     "base_label", "base_run_id", *(f"base_{f}" for f in side_fields),
                     "label", "run_id", *side_fields,
                     "change_pct", "ci_low", "ci_high", "confidence", "p_value", "q_value",
                     "verdict", "significant", "method", "warnings"])

    def side(summary: Any, failures: int) -> list[str]:
        if summary is None:
            return ["0", str(failures), *([""] * 6)]
        return [str(summary.n), str(failures),
                *(_csv_number(getattr(summary, f)) for f in side_fields[2:])]

    for row in comparison.rows:
        sides = summaries(row)
        fixed = [row.benchmark, *(str(row.params.get(n, "")) for n in names), row.metric, row.unit,
                 kind(row.info.direction), kind(row.info.mean), labels[0], str(runs[0].id),
                 *side(sides[0], row.base_failures)]
        for i, cell in enumerate(row.cells):
            d = cell.difference
            messages = [f"{labels[0]}: {w.message}" for w in (sides[0].warnings if sides[0] else ())]
            messages += [f"{labels[i + 1]}: {w.message}" for w in (sides[i + 1].warnings if sides[i + 1] else ())]
            if d is not None:
                messages += [f"{labels[i + 1]} vs {labels[0]}: {w.message}" for w in d.warnings
                             if w.side is WarningSide.PAIR]
            compared = (["", "", "", "", "", "", "", "", comparison.method_name] if d is None else
                        [_csv_number(d.change_pct), _csv_number(d.ci_low), _csv_number(d.ci_high),
                         _csv_number(d.confidence), _csv_number(d.p_value), _csv_number(d.q_value),
                         kind(d.verdict), "true" if d.significant else "false", d.method])
            writer.writerow([*fixed, labels[i + 1], str(runs[i + 1].id), *side(sides[i + 1], cell.failures),
                             *compared, " | ".join(dict.fromkeys(messages))])
    return out.getvalue()
