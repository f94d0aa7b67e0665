"""A run's raw samples as JSON or CSV (long format: one row per value)."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable
from typing import Any

from perflab.model.output_formats import FormatRegistry, OutputFormat
from perflab.model.records import RunInfo


def _value(v: float) -> float | None:
    return None if v is None or not math.isfinite(v) else float(v)


def _run_header(run: RunInfo) -> dict[str, Any]:
    return {"id": run.id, "label": run.label, "commit": run.commit,
            "commit_describe": run.commit_describe, "host": run.host,
            "started_at": run.started_at, "finished_at": run.finished_at,
            "status": run.status.value, "spec": run.request.to_json(), "environment": run.environment}


def export_json(run: RunInfo, rows: Any) -> str:
    samples = [{"benchmark": rows.benchmark[i], "params": rows.params[i],
                "repetition": int(rows.repetition[i]), "metric": rows.metric[i],
                "value": _value(rows.value[i]), "unit": rows.unit[i], "status": rows.status[i],
                "note": rows.note[i], "measured_at": float(rows.measured_at[i])}
               for i in range(len(rows))]
    return json.dumps({"run": _run_header(run), "samples": samples}, indent=1) + "\n"


def export_csv(run: RunInfo, rows: Any) -> str:
    """One column per parameter (``param_NAME``), so spreadsheets and pandas can group."""
    params = rows.params
    names = list(dict.fromkeys(name for p in params for name in p))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["run_id", "label", "commit", "benchmark", *(f"param_{n}" for n in names),
                     "repetition", "metric", "value", "unit", "status", "note", "measured_at"])
    for i in range(len(rows)):
        value = _value(rows.value[i])
        writer.writerow([run.id, run.label, run.commit or "", rows.benchmark[i],
                         *(params[i].get(n, "") for n in names), int(rows.repetition[i]),
                         rows.metric[i], "" if value is None else repr(value), rows.unit[i],
                         rows.status[i], rows.note[i], f"{rows.measured_at[i]:.6f}"])
    return out.getvalue()


EXPORT_FORMATS: FormatRegistry[OutputFormat[Callable[[RunInfo, Any], str]]] = FormatRegistry(
    OutputFormat(name="json", help="the run (its spec and environment) and every sample, stable keys",
                 render=export_json),
    OutputFormat(name="csv", help="one line per value, one column per parameter (param_NAME)", render=export_csv),
)
