"""A comparison as one self-contained HTML file: the table, then pictures of every block.

The table shows what ``--format markdown`` shows (centre ± stddev, change with its
interval, p / q, verdict) and carries the exact numbers of ``--format json`` in
``data-*`` attributes, so a program (and the browser test) can check the two agree. The
table and the charts of a metric share its one unit (`compare_common.metric_scales`).
Per block: each side's distribution (a box with every sample as a point: plotly's box
trace draws the quartiles from the raw samples in the browser), the samples in
measurement order (drift shows as a slope), for a sweep the median with its
distribution-free interval per parameter value, and the block's warnings. Then the
environment keys whose values differ between the runs.

Plotly's bundle is embedded, so the file needs no network when viewed. Every user string
is escaped: Jinja2 autoescapes the page, the figures go in as JSON with ``<`` escaped,
and strings plotly draws are HTML-escaped because plotly reads a few tags in its text.
Each chart's figure is a JSON script element; the page draws a chart when it comes near
the viewport (templates/plots.html.j2), so 10 blocks of 3,000 samples open in a moment.
"""

from __future__ import annotations

import functools
import html
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import markupsafe

from perflab.model.records import RunInfo
from perflab.model.report.compare import Block, CompareReport, SideSummary
from perflab.render.compare_common import (
    block_op,
    block_title,
    describe_run,
    metric_scales,
    row_warnings,
    significance_rule,
)
from perflab.render.compare_data import number
from perflab.render.compare_markdown import change_text, p_text, side_text

if TYPE_CHECKING:
    import jinja2

TEMPLATES = Path(__file__).parent / "templates"
# The samples-in-order chart draws a marker per sample up to this many per trace; beyond,
# markers (4 px on a ~1,000 px plot) would merge into the line anyway, and each is an SVG
# node: the line alone is one path, and hovering it still gives every sample.
# (scattergl was measured too: under headless chromium's software WebGL each chart's
# context costs more than the SVG path, and chromium keeps at most 16 contexts a page.)
MARKERS_UP_TO = 250
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


@functools.cache
def environment() -> jinja2.Environment:
    """The page templates, autoescaped (imported lazily: only the HTML formats need Jinja2);
    one per process, so each template is compiled once, not on every page the dashboard serves."""
    import jinja2
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


# Which plotly.js a page embeds. A comparison draws only box and scatter traces: the
# official "cartesian" partial bundle of the same plotly.js version (static/, MIT, from
# npm's plotly.js-cartesian-dist-min) has them in 1.5 MB, where the full bundle of the
# plotly package is 4.8 MB that a browser must parse before the first chart (2.6 s in a
# new headless chromium here). History pages draw long series with WebGL (scattergl),
# which only the full bundle has.
CARTESIAN = "cartesian"
FULL = "full"
STATIC = Path(__file__).parent / "static"


@functools.cache
def plotly_js(bundle: str = CARTESIAN) -> str:
    """plotly.js to embed (no CDN: the file works offline); read once per process."""
    if bundle == CARTESIAN:
        return (STATIC / "plotly-cartesian.min.js").read_text(encoding="utf-8")
    from plotly.offline import get_plotlyjs
    return get_plotlyjs()


def plotly_script(src: str | None = None, bundle: str = CARTESIAN) -> markupsafe.Markup:
    """The page's plotly.js: embedded (a file that opens offline), or from ``src`` (the
    dashboard serves each bundle once, cached, instead of in every page)."""
    if src is not None:
        return markupsafe.Markup('<script src="{}"></script>').format(src)
    return markupsafe.Markup("<script>" + plotly_js(bundle) + "</script>")


def script_json(value: Any) -> str:
    """JSON safe inside a <script> element: no ``</script>`` or ``<!--`` can close it."""
    return (json.dumps(value, ensure_ascii=False, allow_nan=False)
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def plot_text(text: str) -> str:
    """A string plotly draws (trace name, axis title): plotly turns <b>, <br> ... into
    markup and decodes entities, so escaping shows the text as written."""
    return html.escape(str(text), quote=True)


def _values(side: SideSummary | None, factor: float = 1.0) -> list[float]:
    """The side's finite samples, divided by ``factor`` (the metric's unit in the page)."""
    return [v / factor for v in (number(x) for x in side.values) if v is not None] if side is not None else []


def _side_data(side: SideSummary | None) -> dict[str, Any]:
    if side is None:
        return {"n": 0}
    return {"n": side.n, "centre": number(side.centre), "median": number(side.median),
            "stddev": number(side.stddev), "min": number(side.min), "max": number(side.max)}


def _table_rows(report: CompareReport, scales: dict[tuple[str, str], tuple[float, str]]) -> list[dict[str, Any]]:
    rows = []
    for row in report.rows:
        scale = scales[(row.metric, row.unit)]
        cells = []
        for cell in row.cells:
            d = cell.change
            cells.append({
                "side": side_text(cell.side, scale), "side_data": _side_data(cell.side),
                "change": change_text(d), "pq": "-" if d is None else f"{p_text(d.p_value)} / {p_text(d.q_value)}",
                "verdict": "-" if d is None else d.verdict.value, "significant": bool(d and d.significant),
                "change_data": {} if d is None else {
                    "change_pct": number(d.pct), "ci_low": number(d.ci.low), "ci_high": number(d.ci.high),
                    "p_value": number(d.p_value), "q_value": number(d.q_value), "verdict": d.verdict.value},
            })
        own = [cell.benchmark for cell in row.cells if cell.benchmark]   # the changed side's own name
        rows.append({"benchmark": " vs ".join([row.benchmark, *own]), "point": row.point, "metric": row.metric,
                     "unit": scale[1],
                     "base": side_text(row.base, scale), "base_data": _side_data(row.base),
                     "cells": cells})
    return rows


def _layout(title: str, xtitle: str, ytitle: str, **extra: Any) -> dict[str, Any]:
    return {"title": {"text": plot_text(title)}, "xaxis": {"title": {"text": plot_text(xtitle)}},
            "yaxis": {"title": {"text": plot_text(ytitle)}}, "margin": {"t": 40, "b": 50, "l": 70, "r": 20},
            "height": 360, **extra}


def _figures(block: Block, labels: list[str], scale: tuple[float, str]) -> list[dict[str, Any]]:
    """The block's figures as plotly {data, layout} dicts; the numbers are the model's, in
    ``scale`` (divisor, unit): the table's unit for the metric."""
    ops = [block_op(block, row) or row.metric for row in block.rows]
    factor = scale[0]
    unit = f"{block.metric} ({scale[1]})" if scale[1] else block.metric
    name = block_title(block)
    boxes, orders = [], []
    for s, label in enumerate(labels):
        colour = COLOURS[s % len(COLOURS)]
        xs: list[str] = []
        ys: list[float] = []
        for op, row in zip(ops, block.rows):
            values = _values(row.sides[s], factor)
            xs += [plot_text(op)] * len(values)
            ys += values
            if values:
                orders.append({"type": "scatter", "mode": "lines+markers" if len(values) <= MARKERS_UP_TO else "lines",
                               "name": plot_text(f"{label} {op}".strip()), "legendgroup": plot_text(label),
                               "x": list(range(1, len(values) + 1)), "y": values,
                               "line": {"color": colour, "width": 1}, "marker": {"size": 4, "color": colour}})
        boxes.append({"type": "box", "name": plot_text(label), "x": xs, "y": ys, "boxpoints": "all",
                      "jitter": 0.4, "pointpos": 0, "marker": {"size": 3, "color": colour},
                      "line": {"color": colour}})
    figures = [
        {"kind": "distribution", "data": boxes,
         "layout": _layout(f"{name}: distribution per side", block.row_param or "", unit, boxmode="group")},
        {"kind": "order", "data": orders,
         "layout": _layout(f"{name}: samples in measurement order", "repetition", unit)},
    ]
    if block.row_param and len(block.rows) > 1:
        sweep = []
        for s, label in enumerate(labels):
            xs, ys, plus, minus = [], [], [], []
            for op, row in zip(ops, block.rows):
                side = row.sides[s]
                median = number(side.median / factor) if side is not None else None
                if side is None or median is None:
                    continue
                low, high = number(side.median_ci.low / factor), number(side.median_ci.high / factor)
                xs.append(plot_text(op))
                ys.append(median)
                plus.append(0 if high is None else max(high - median, 0))
                minus.append(0 if low is None else max(median - low, 0))
            sweep.append({"type": "scatter", "mode": "lines+markers", "name": plot_text(label), "x": xs, "y": ys,
                          "error_y": {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus},
                          "line": {"color": COLOURS[s % len(COLOURS)]}})
        figures.append({"kind": "sweep", "data": sweep,
                        "layout": _layout(f"{name}: median and its interval per {block.row_param}",
                                          block.row_param, unit)})
    return figures


def _flatten(value: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, str) else value
    return {prefix: text if len(text) <= 200 else text[:199] + "…"}


def environment_differences(runs: tuple[RunInfo, ...]) -> list[dict[str, Any]]:
    """The environment keys (flattened, dotted) whose value is not the same in every run."""
    flat = [_flatten({"host": r.host, **(r.environment or {})}) for r in runs]
    keys = list(dict.fromkeys(k for f in flat for k in f))
    return [{"key": k, "values": [f.get(k, "-") for f in flat]} for k in keys
            if len({f.get(k) for f in flat}) > 1]


def render_html(report: CompareReport, *, plotly_src: str | None = None) -> str:
    """The page; plotly.js embedded, or from ``plotly_src`` (see `plotly_script`)."""
    labels = report.labels
    blocks = []
    scales = metric_scales(report.blocks)
    for b, block in enumerate(report.blocks):
        scale = scales[(block.metric, block.unit)]
        figures = _figures(block, labels, scale)
        blocks.append({"title": block_title(block), "metric": block.metric, "unit": scale[1],
                       "direction": block.direction.value,
                       "warnings": [f"{row.title}: " + "; ".join(found) for row in block.rows
                                    if (found := row_warnings(row, labels))],
                       "figures": [{"id": f"fig-{b}-{i}", "kind": f["kind"], "height": f["layout"]["height"],
                                    "spec": script_json({"data": f["data"], "layout": f["layout"]})}
                                   for i, f in enumerate(figures)]})
    intervals = sorted({change.interval for _, _, change in report.changes()})
    page = environment().get_template("compare.html.j2").render(
        title="perflab compare: " + " vs ".join(labels),
        runs=[{"role": "baseline" if i == 0 else "candidate", "text": describe_run(r)}
              for i, r in enumerate(report.runs)],
        labels=labels, rows=_table_rows(report, scales), blocks=blocks, report_warnings=list(report.warnings),
        significance=significance_rule(report), confidence=f"{100 * report.confidence:g}%",
        intervals="; ".join(intervals), environment=environment_differences(report.runs),
        env_labels=labels, plotly=plotly_script(plotly_src), script_json=script_json)
    return page if page.endswith("\n") else page + "\n"
