"""`perflab history --format html`: every series as one interactive chart, self-contained.

Per series: every sample (a dot per sample at its commit's position), each commit's
median (the value detection runs on), the centre of every segment between change points
(flat lines, as the detector saw the levels) and each change point as a dashed line, the
tip detector's finding on the newest commits among them (`drawn`).
Hovering a commit shows its commit, describe, subject, n, median and its segment's
centre. A page of more than SAMPLE_BUDGET samples draws each commit as its median with a bar
from its lowest to its highest sample instead of its dots, and says so above the charts
(``every_sample``: the dots however many). A diamond at the top of each change point's
line opens the change's report when clicked (the dashboard's page of it, or the report
text embedded in the file). Numbers come from the History model; subjects are passed in
by the caller (the CLI asks the repository). A series without change points has no
segments to draw: it says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from math import isfinite
from typing import Any

from perflab.model.report.history import Change, History, Segment, Series, SeriesPoint
from perflab.render.compare_data import number
from perflab.render.compare_html import FULL, environment, plot_text, plotly_script, script_json
from perflab.render.history import shift
from perflab.render.units import decimals_for, format_number

SAMPLES_WEBGL = 5000   # above this many samples a series draws with WebGL (scattergl)
#: the sample dots a page draws: above it (unless every sample is asked for), each commit of a
#: series is its median with its range, min to max (the why: docs/dashboard.md, "How many dots")
SAMPLE_BUDGET = 20_000


def drawn(series: Series) -> tuple[Change, ...]:
    """The changes a series' chart draws: its change list and the tip detector's finding on
    its newest commits (a level of the last few commits, suspect or confirmed, is a level)."""
    return (*series.changes, *((series.tip,) if series.tip is not None else ()))


def _segments(series: Series) -> list[Segment]:
    changes = drawn(series)
    if not changes:
        return []
    return [changes[0].before, *(c.after for c in changes)]


def _centre_lines(segments: list[Segment], unit: str) -> dict[int, str]:
    """Position -> its segment's hover line, formatted once a segment."""
    centre_line: dict[int, str] = {}
    for s in segments:
        centre = number(s.centre)
        if centre is not None:
            centre_line.update(dict.fromkeys(range(s.first, s.end), f"segment centre {format_number(centre)} {unit}"))
    return centre_line


def _hover(p: SeriesPoint, subjects: Mapping[str, str], unit: str, centre_line: str | None,
           heads: dict[str, str], numbers: str | None = None) -> str:
    """A commit's hover text: commit, describe, subject, n, median (``numbers``: that line as
    the caller made it, with the commit's range) and its segment's centre. ``heads``: each
    commit's first lines, made once for every series that measured it."""
    hp = p.point
    head = heads.get(hp.key)
    if head is None:
        lines = [f"<b>{plot_text(hp.short)}</b>" + (f" {plot_text(hp.describe)}" if hp.describe else "")]
        if hp.commit and subjects.get(hp.commit):
            lines.append(plot_text(subjects[hp.commit]))
        head = heads[hp.key] = "<br>".join(lines)
    lines = [head, numbers or f"n={p.summary.n}, median {format_number(p.summary.median)} {unit}"]
    if centre_line is not None:
        lines.append(centre_line)
    return "<br>".join(lines)


def _point_traces(series: Series, subjects: Mapping[str, str], unit: str,
                  centre_line: Mapping[int, str], heads: dict[str, str]) -> list[dict[str, Any]]:
    """Every sample as a dot at its commit, and each commit's median with its hover text."""
    xs: list[int] = []
    ys: list[float] = []
    my: list[float | None] = []
    hover: list[str] = []
    for i, p in enumerate(series.points):
        values = [v for v in p.values if isfinite(v)]  # the samples as measured (25,000 on a page)
        xs += [i] * len(values)
        ys += values
        my.append(number(p.summary.median) if p.summary.n else None)
        hover.append(_hover(p, subjects, unit, centre_line.get(i), heads))
    kind = "scattergl" if len(ys) > SAMPLES_WEBGL else "scatter"
    return [
        {"type": kind, "mode": "markers", "name": "samples", "x": xs, "y": ys, "hoverinfo": "skip",
         "marker": {"size": 3, "color": "rgba(31,119,180,0.35)"}},
        {"type": kind, "mode": "lines+markers", "name": "median per commit", "x": list(range(len(series.points))),
         "y": my, "text": hover, "hovertemplate": "%{text}<extra></extra>", "connectgaps": False,
         "line": {"color": "#1f77b4", "width": 1}, "marker": {"size": 5, "color": "#1f77b4"}},
    ]


def _sample_range(p: SeriesPoint) -> tuple[float, float] | None:
    """The lowest and highest finite sample of a commit (None: none)."""
    if not p.summary.n:
        return None
    # a finite mean: every sample is finite, and min and max need no filter
    values = p.values if isfinite(p.summary.mean) else [v for v in p.values if isfinite(v)]
    return (min(values), max(values)) if values else None


def _numbers(p: SeriesPoint, low: float, high: float, unit: str) -> str:
    """"n=N, median M UNIT, range LOW to HIGH UNIT", the three with the median's decimals (as
    `format_number` shows the median; one logarithm a commit)."""
    median = p.summary.median
    decimals = decimals_for(median) if median else None
    if decimals is None:
        shown = [format_number(v) for v in (median, low, high)]
    else:
        shown = [f"{v:.{decimals}f}" for v in (median, low, high)]
    return f"n={p.summary.n}, median {shown[0]} {unit}, range {shown[1]} to {shown[2]} {unit}"


def _range_traces(series: Series, subjects: Mapping[str, str], unit: str,
                  centre_line: Mapping[int, str], heads: dict[str, str]) -> list[dict[str, Any]]:
    """Each commit as its median with a bar from its lowest to its highest sample (every
    sample it has lies on the bar), its hover text naming the range: made from the commit's
    summary and its samples' extremes, no dot of a sample built."""
    my: list[float | None] = []
    up: list[float | None] = []
    down: list[float | None] = []
    hover: list[str] = []
    for i, p in enumerate(series.points):
        median = number(p.summary.median) if p.summary.n else None
        extent = _sample_range(p) if median is not None else None
        my.append(median)
        up.append(None if extent is None else extent[1] - p.summary.median)
        down.append(None if extent is None else p.summary.median - extent[0])
        hover.append(_hover(p, subjects, unit, centre_line.get(i), heads,
                            None if extent is None else _numbers(p, *extent, unit)))
    kind = "scattergl" if len(series.points) > SAMPLES_WEBGL else "scatter"  # by the marks it draws
    return [{"type": kind, "mode": "lines+markers", "name": "median and range per commit",
             "x": list(range(len(series.points))), "y": my, "text": hover, "hovertemplate": "%{text}<extra></extra>",
             "error_y": {"type": "data", "symmetric": False, "array": up, "arrayminus": down,
                         "color": "rgba(31,119,180,0.45)", "thickness": 1, "width": 0},
             "connectgaps": False, "line": {"color": "#1f77b4", "width": 1}, "marker": {"size": 4, "color": "#1f77b4"}}]


def _centre_trace(segments: list[Segment]) -> dict[str, Any]:
    """The segments' centres as flat lines, as the detector saw the levels."""
    sx: list[float | None] = []
    sy: list[float | None] = []
    for s in segments:
        sx += [s.first - 0.4, s.end - 0.6, None]
        sy += [number(s.centre), number(s.centre), None]
    return {"type": "scatter", "mode": "lines", "name": "segment centre", "x": sx, "y": sy,
            "hoverinfo": "skip", "line": {"color": "#d62728", "width": 3}}


def _change_trace(series: Series, links: Mapping[str, str]) -> dict[str, Any]:
    """A marker per change point at the top of its dashed line (an overlaid 0..1 axis keeps
    it clear of the samples): hover names the change, a click opens its report."""
    changes = drawn(series)
    return {"type": "scatter", "mode": "markers", "name": "change point", "yaxis": "y2",
            "x": [c.index - 0.5 for c in changes], "y": [0.97] * len(changes),
            "customdata": [links[c.id] for c in changes],
            "text": [plot_text(f"change {c.id}: {shift(c)} {c.verdict.value} at {c.point.short[:12]}"
                               + (f" (newest commits, {c.status})" if c is series.tip else ""))
                     + "<br>click for its report" for c in changes],
            "hovertemplate": "%{text}<extra></extra>",
            "marker": {"symbol": "diamond", "size": 13, "color": "#d62728"}}


def _layout(series: Series) -> dict[str, Any]:
    """Axes with a commit's short name every twelfth of the series, a dashed line and the
    change's % at each change point."""
    changes = drawn(series)
    shapes = [{"type": "line", "xref": "x", "yref": "paper", "x0": c.index - 0.5, "x1": c.index - 0.5,
               "y0": 0, "y1": 1, "line": {"color": "#d62728", "dash": "dash", "width": 1}} for c in changes]
    annotations = [{"x": c.index - 0.5, "y": 1, "yref": "paper", "showarrow": False, "yanchor": "bottom",
                    "text": plot_text(f"{shift(c)} {c.verdict.value}")} for c in changes
                   if c.kind == "spread" or number(c.change_pct) is not None]
    ticks = list(range(0, len(series.points), max(1, len(series.points) // 12)))
    return {"height": 380, "margin": {"t": 30, "b": 60, "l": 70, "r": 20}, "hovermode": "closest",
            "shapes": shapes, "annotations": annotations, "showlegend": True,
            "xaxis": {"title": {"text": "commit (history order)"}, "tickvals": ticks,
                      "ticktext": [plot_text(series.points[i].point.short[:8]) for i in ticks]},
            "yaxis": {"title": {"text": plot_text(f"{series.metric} ({series.unit})")}},
            "yaxis2": {"overlaying": "y", "range": [0, 1], "visible": False, "fixedrange": True}}


def _figure(series: Series, subjects: Mapping[str, str], links: Mapping[str, str],
            heads: dict[str, str], per_commit: bool) -> dict[str, Any]:
    segments = _segments(series)
    unit = plot_text(series.unit)  # escaped once; format_number's digits need no escaping
    points = _range_traces if per_commit else _point_traces
    data = points(series, subjects, unit, _centre_lines(segments, unit), heads)
    if segments:
        data.append(_centre_trace(segments))
    if drawn(series):
        data.append(_change_trace(series, links))
    return {"data": data, "layout": _layout(series)}


def _drawn_line(history: History, samples: int, every_sample_url: str | None) -> dict[str, str]:
    """The line above the charts of a page drawn per commit: what it drew, and how to draw
    every sample (the dashboard's link, or the CLI's option)."""
    commits = len({p.point.key for s in history.series for p in s.points})
    hosts = len({s.host for s in history.series})
    of = f"{hosts} host{'s' * (hosts != 1)}" if hosts == len(history.series) else f"{len(history.series)} series"
    return {"what": f"{commits:,} commits x {of}: each commit's median and range (lowest to highest sample)",
            "every": f"draws its {samples:,} samples (over the page's budget of {SAMPLE_BUDGET:,})",
            "href": every_sample_url or ""}


def render_history_html(history: History, subjects: Mapping[str, str] | None = None, *,
                        reports: Mapping[str, str] | None = None, change_url: str | None = None,
                        plotly_src: str | None = None, every_sample: bool = False,
                        every_sample_url: str | None = None) -> str:
    """The page; a click on a change point opens its report: ``change_url`` with ``{id}``
    (the dashboard's /changes/{id}), else the report text of ``reports`` (change id -> the
    text of 'perflab report change ID') embedded at the end of the page. plotly.js is
    embedded, or from ``plotly_src`` (see `plotly_script`). Past SAMPLE_BUDGET samples in
    all, unless ``every_sample``, each commit is drawn as its median and range, and a line
    says so, with ``every_sample_url`` (else the CLI's option) to draw every sample."""
    subjects = subjects or {}
    samples = sum(p.summary.n for s in history.series for p in s.points)
    per_commit = samples > SAMPLE_BUDGET and not every_sample
    reports = {} if change_url else dict(reports or {})

    def link(change_id: str) -> str:
        if change_url:
            return change_url.format(id=change_id)
        return f"#report-{change_id}" if change_id in reports else f"#change-{change_id}"

    series = []
    heads: dict[str, str] = {}   # a commit's hover lines, shared by the series of its hosts
    for i, s in enumerate(history.series):
        links = {c.id: link(c.id) for c in drawn(s)}
        figure = _figure(s, subjects, links, heads, per_commit)
        series.append({"id": f"series-{i}", "title": " ".join(filter(None, (s.benchmark, s.point_name, s.metric))),
                       "host": s.host, "method": s.method, "direction": s.info.direction.value,
                       "changes": [{"id": c.id, "href": links[c.id], "short": c.point.short,
                                    "pct": shift(c, 2), "verdict": c.verdict.value,
                                    "subject": subjects.get(c.point.commit or "", "")}
                                   for c in drawn(s)],
                       "height": figure["layout"]["height"], "spec": script_json(figure)})
    page = environment().get_template("history.html.j2").render(
        title="perflab history", order=history.order, series=series,
        drawn=_drawn_line(history, samples, every_sample_url) if per_commit else None,
        warnings=[w.message for w in history.warnings], plotly=plotly_script(plotly_src, FULL),
        reports=[{"id": k, "text": v} for k, v in reports.items()])
    return page if page.endswith("\n") else page + "\n"
