"""Change points of series as a plain-text table (people) or JSON (scripts).

Layout of ``perflab.model.report.history.FileChanges``: one ColumnChanges per metric
column. Indices are 0-based positions, the first of the new regime. In the one sign
convention (model.verdicts.SIGN): with a direction the table's % and JSON's ``change_pct``
are + = better and each point has its verdict (improvement or regression); without one
the table's % is the raw change of the mean, said in its header, and ``change_pct`` is
null. JSON's ``raw_change_pct`` is always 100·(after/before − 1).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from perflab.model.output_formats import FormatRegistry, OutputFormat
from perflab.model.report.history import FileChangePoint, FileChanges
from perflab.model.verdicts import SIGN
from perflab.render.compare_common import finite
from perflab.render.compare_data import number
from perflab.render.texttable import format_table


def render_json(changes: FileChanges) -> str:
    columns = []
    for r in changes.columns:
        points = [{
            "index": cp.index,
            "label": cp.label,
            "mean_before": number(cp.mean_before), "stddev_before": number(cp.stddev_before),
            "mean_after": number(cp.mean_after), "stddev_after": number(cp.stddev_after),
            # the one convention (model.verdicts.SIGN): change_pct + = better, known only with
            # a direction (else null); raw_change_pct is 100·(after/before − 1), always
            "change_pct": number(cp.oriented_pct) if cp.verdict and cp.oriented_pct is not None else None,
            "raw_change_pct": number(cp.change_pct),
            "verdict": cp.verdict.value if cp.verdict else None,
            "p_value": number(cp.p_value),
            "kind": cp.kind, "spread_ratio": number(cp.spread_ratio),
            # the tip detector's look at the newest commits: "suspect" or "confirmed"
            "status": cp.status, "method": cp.method or changes.method,
            # a change spread over several commits: each one's share of the whole
            "parts": [{"index": i, "label": label, "share": number(share)} for i, label, share in cp.parts],
        } for cp in r.change_points]
        columns.append({"column": r.column, "points": r.points, "commits": r.commits,
                        "indices": [cp.index for cp in r.change_points], "change_points": points})
    data = {"source": changes.source, "sign": SIGN + "; raw_* = after/before - 1", "method": changes.method,
            "parameters": changes.parameters,
            "direction": changes.direction.value if changes.direction else None, "columns": columns}
    return json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def _mean_sd(mean: float, sd: float) -> str:
    return f"{mean:.6g}" if not finite(sd) else f"{mean:.6g} ±{sd:.3g}"


def _p(p: float) -> str:
    return "-" if not finite(p) else f"{p:.2g}" if p >= 1e-300 else "<1e-300"


def render_table(changes: FileChanges) -> str:
    settings = ", ".join(f"{k} {v}" for k, v in changes.parameters.items())
    # a method with no parameters shown (a DetectorParams method, or auto taking several) is named alone
    named = f"{changes.method}: {settings}" if settings else changes.method
    directed = changes.direction is not None
    pct_head = f"%change ({SIGN})" if directed else "%change (raw: after/before-1)"
    blocks = []
    for r in changes.columns:
        n = len(r.change_points)
        title = (f"{changes.source}: {r.column}, {r.points} points, {n} change point{'s' * (n != 1)} "
                 f"({named})" + (", points read as commits" if r.commits else ""))
        if not r.change_points:
            blocks.append(title)
            continue
        rows = []
        for cp in r.change_points:
            pct = cp.oriented_pct if directed and cp.oriented_pct is not None else cp.change_pct
            rows.append([str(cp.index), *([cp.label or ""] if r.has_labels else []),
                         _mean_sd(cp.mean_before, cp.stddev_before),
                         _mean_sd(cp.mean_after, cp.stddev_after),
                         (f"spread x{cp.spread_ratio:.2f}" if cp.kind == "spread"
                          else f"{pct:+.2f}%" if finite(pct) else "-"),
                         *([cp.verdict.value if cp.verdict else "-"] if directed else []), _p(cp.p_value)])
        headers = ["index", *(["label"] if r.has_labels else []), "before", "after", pct_head,
                   *(["verdict"] if directed else []), "p-value"]
        align = "r" + "l" * r.has_labels + "rrr" + "l" * directed + "r"
        blocks.append(title + "\n" + format_table(headers, rows, align, indent="  ") + _notes(r.change_points))
    return "\n\n".join(blocks) + "\n"


def parts_text(parts: list[tuple[str, float]]) -> str:
    """A spread change's commits: "3 commits carry it: c15 36%, c16 33%, c17 31%"."""
    return f"{len(parts)} commits carry it: " + ", ".join(f"{name} {100 * share:.0f}%" for name, share in parts)


def _notes(points: tuple[FileChangePoint, ...]) -> str:
    """A line under the table for each change spread over commits and for a tip finding."""
    lines = []
    for cp in points:
        if cp.parts:
            lines.append(f"  index {cp.index}: spread over commits {cp.parts[0][0]}..{cp.parts[-1][0]}; "
                         + parts_text([(label or str(i), share) for i, label, share in cp.parts]))
        if cp.method == "tip":
            lines.append(f"  index {cp.index}: the newest commits (tip detector), {cp.status}"
                         + (": one or two commits out of line, the level not yet held" if cp.status == "suspect"
                            else ": a new level that holds"))
    return "".join("\n" + line for line in lines)


CHANGEPOINT_FORMATS: FormatRegistry[OutputFormat[Callable[[FileChanges], str]]] = FormatRegistry(
    OutputFormat(name="table", help="one line per change point: index, mean ±sd before and after, % change, p-value",
                 render=render_table),
    OutputFormat(name="json", help="every column's change points, stable keys", render=render_json),
)
