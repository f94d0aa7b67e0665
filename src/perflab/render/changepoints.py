"""Change points of series as a plain-text table (people) or JSON (scripts).

Input is one `ColumnChanges` per metric column. Indices are 0-based positions, the first
of the new regime. With a direction the % change is oriented (positive = better) and
each point says better or worse; without one the % is the raw change of the mean.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from perflab.model.records import Direction
from perflab.render.compare_data import number
from perflab.render.texttable import format_table
from perflab.stats.changepoints import ChangePoint, oriented


class ColumnChanges(NamedTuple):
    column: str
    points: int                      # positions in the series (commits, rows)
    labels: Sequence[str] | None     # time/commit label per position, if the file has them
    change_points: list[ChangePoint]


def _change(cp: ChangePoint, direction: Direction | None) -> tuple[float, str | None]:
    if direction is None or not math.isfinite(cp.change_pct):
        return cp.change_pct, None
    pct = oriented(cp.change_pct, direction)
    return pct, "better" if pct > 0 else "worse"


def render_json(source: str, method: str, parameters: dict[str, Any],
                direction: Direction | None, results: Sequence[ColumnChanges]) -> str:
    columns = []
    for r in results:
        points = []
        for cp in r.change_points:
            pct, verdict = _change(cp, direction)
            points.append({
                "index": cp.index,
                "label": r.labels[cp.index] if r.labels else None,
                "mean_before": number(cp.mean_before), "stddev_before": number(cp.stddev_before),
                "mean_after": number(cp.mean_after), "stddev_after": number(cp.stddev_after),
                "change_pct": number(cp.change_pct),
                "oriented_change_pct": number(pct) if verdict else None,
                "verdict": verdict,
                "p_value": number(cp.p_value),
            })
        columns.append({"column": r.column, "points": r.points,
                        "indices": [cp.index for cp in r.change_points], "change_points": points})
    data = {"source": source, "method": method, "parameters": parameters,
            "direction": direction.value if direction else None, "columns": columns}
    return json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def _mean_sd(mean: float, sd: float) -> str:
    return f"{mean:.6g}" if not math.isfinite(sd) else f"{mean:.6g} ±{sd:.3g}"


def _p(p: float) -> str:
    return "-" if not math.isfinite(p) else f"{p:.2g}" if p >= 1e-300 else "<1e-300"


def render_table(source: str, method: str, parameters: dict[str, Any],
                 direction: Direction | None, results: Sequence[ColumnChanges]) -> str:
    settings = ", ".join(f"{k} {v}" for k, v in parameters.items())
    pct_head = "%change(+ = better)" if direction else "%change"
    blocks = []
    for r in results:
        n = len(r.change_points)
        title = (f"{source}: {r.column}, {r.points} points, {n} change point{'s' * (n != 1)} "
                 f"({method}: {settings})")
        if not r.change_points:
            blocks.append(title)
            continue
        rows = []
        for cp in r.change_points:
            pct, verdict = _change(cp, direction)
            rows.append([str(cp.index), *([r.labels[cp.index]] if r.labels else []),
                         _mean_sd(cp.mean_before, cp.stddev_before),
                         _mean_sd(cp.mean_after, cp.stddev_after),
                         "-" if not math.isfinite(pct) else f"{pct:+.2f}%",
                         *([verdict or "-"] if direction else []), _p(cp.p_value)])
        headers = ["index", *(["label"] if r.labels else []), "before", "after", pct_head,
                   *(["verdict"] if direction else []), "p-value"]
        align = "r" + "l" * bool(r.labels) + "rrr" + "l" * bool(direction) + "r"
        blocks.append(title + "\n" + format_table(headers, rows, align, indent="  "))
    return "\n\n".join(blocks) + "\n"
