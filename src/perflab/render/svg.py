"""Small inline SVG pictures of a series for the dashboard: a sparkline for a list, the
series of an alert with its range, its first bad commit and its two levels marked.

Layout only: the medians, the marked positions and the levels come computed
(model/frontpage.SeriesWindow, the report's levels); no script, no font, no request.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from perflab.model.frontpage import Level, SeriesWindow


def _scale(values: Sequence[float], levels: Sequence[Level], height: float, pad: float):
    shown = [v for v in values if math.isfinite(v)] + [lv.value for lv in levels if math.isfinite(lv.value)]
    lo, hi = (min(shown), max(shown)) if shown else (0.0, 1.0)
    span = (hi - lo) or (abs(hi) or 1.0)
    lo, hi = lo - 0.08 * span, hi + 0.08 * span
    return lambda v: pad + (height - 2 * pad) * (1 - (v - lo) / (hi - lo)), lo, hi


def _path(xs: Sequence[float], ys: Sequence[float | None]) -> str:
    """A polyline as a path, broken where a value is missing."""
    parts, pen = [], "M"
    for x, y in zip(xs, ys):
        if y is None:
            pen = "M"
            continue
        parts.append(f"{pen}{x:.1f},{y:.1f}")
        pen = "L"
    return " ".join(parts)


def sparkline_svg(window: SeriesWindow, width: int = 120, height: int = 24, *, standalone: bool = False) -> str:
    """The window's medians as a line, its first bad commit as a dot (``standalone``: a
    document of its own, an image's)."""
    n = len(window.medians)
    space = ' xmlns="http://www.w3.org/2000/svg"' if standalone else ""
    if not n:
        return f'<svg{space} class="spark" viewBox="0 0 {width} {height}"></svg>'

    y, _, _ = _scale(window.medians, (), height, 2)
    xs = [2 + (width - 4) * (i / max(1, n - 1)) for i in range(n)]
    ys = [y(v) if math.isfinite(v) else None for v in window.medians]
    mark = ""
    if window.marked is not None and ys[window.marked] is not None:
        mark = (f'<circle cx="{xs[window.marked]:.1f}" cy="{ys[window.marked]:.1f}" r="2.5" '
                'fill="#b3261e"/>')
    return (f'<svg{space} class="spark" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
            f'role="img" aria-label="{n} commits">'
            f'<path d="{_path(xs, ys)}" fill="none" stroke="#20262e" stroke-width="1.2"/>{mark}</svg>')


def series_svg(window: SeriesWindow, levels: Sequence[Level] = (), *, unit: str = "",
               width: int = 900, height: int = 260) -> str:
    """Every point's median (dots joined), the range last good..first bad shaded, the first
    bad commit as a dashed line and each level as a horizontal segment over its points."""
    n = len(window.medians)
    if not n:
        return '<p class="empty">No sealed values of this series in the store.</p>'
    left, pad = 64, 12
    y, lo, hi = _scale(window.medians, levels, height, pad)

    def x(i: float) -> float:
        return left + (width - left - pad) * (i / max(1, n - 1))

    out = [f'<svg class="series" id="series" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="the series, {n} points">']
    if window.marked is not None:
        start = window.last_good if window.last_good is not None else window.marked - 1
        out.append(f'<rect class="range" x="{x(max(0, start)):.1f}" y="{pad}" '
                   f'width="{max(2.0, x(window.marked) - x(max(0, start))):.1f}" height="{height - 2 * pad}">'
                   '<title>the alert\'s range: last good .. first bad</title></rect>')
    for v in (lo, hi):
        out.append(f'<text x="{left - 4}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.4g}{escape(unit)}</text>')
    out.append(f'<line class="axis" x1="{left}" y1="{pad}" x2="{left}" y2="{height - pad}"/>')
    ys = [y(v) if math.isfinite(v) else None for v in window.medians]
    out.append(f'<path class="median" d="{_path([x(i) for i in range(n)], ys)}"/>')
    for i, (key, v) in enumerate(zip(window.keys, window.medians)):
        if ys[i] is not None:
            out.append(f'<circle class="dot" cx="{x(i):.1f}" cy="{ys[i]:.1f}" r="2.5">'
                       f'<title>{escape(key[:12])}: {v:.6g}{escape(unit)}</title></circle>')
    for lv in levels:
        if math.isfinite(lv.value):
            out.append(f'<line class="level {lv.name}" data-value="{lv.value!r}" '
                       f'x1="{x(lv.first):.1f}" x2="{x(lv.last):.1f}" '
                       f'y1="{y(lv.value):.1f}" y2="{y(lv.value):.1f}"><title>{lv.name}: {lv.value:.6g}'
                       f'{escape(unit)}</title></line>')
    if window.marked is not None:
        out.append(f'<line class="culprit" x1="{x(window.marked):.1f}" x2="{x(window.marked):.1f}" y1="{pad}" '
                   f'y2="{height - pad}"><title>first bad: {escape(window.keys[window.marked][:12])}</title></line>')
    out.append("</svg>")
    return "".join(out)
