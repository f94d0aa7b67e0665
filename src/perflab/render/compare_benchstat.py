"""benchstat's text report (golang.org/x/perf/cmd/benchstat, 2023 format).

    benchmark: hackbench
              │      base      │                patched                 │
              │    time (s)    │   time (s)     vs base                 │
    groups=1    254.0m ± 2%   253.3m ± 1%        ~ (p=0.612 n=10)
    groups=4    622.0m ± 1%   559.0m ± 2%  -10.13% (p=0.000 n=10)
    geomean     397.5m        373.2m        -6.11%

One table per benchmark and metric (the benchmark is printed when it changes, as
benchstat prints changed configuration). Each column shows the median ± the half-width
of its distribution-free confidence interval in % of the median; numbers carry SI
prefixes with a scale shared across the row (binary prefixes for bytes). ``vs base``
shows the unoriented change, as benchstat does, but of the metric's mean (the estimate
the report's test judged, the change every other format shows; benchstat itself shows
the change of the medians) — or ``~`` when the report's test does not find a
significant change — followed by the test's p-value and the sample sizes. The geomean
row is the geometric mean of the medians and of the ratios. Warnings are footnotes,
numbered in order of appearance.

The table layout (column groups separated by ``│``, ``±`` signs in their own margin)
reproduces benchstat's text-table algorithm.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from perflab.model.params import format_value
from perflab.model.report.compare import Block, Change, CompareReport
from perflab.render.compare_common import finite, significance_rule
from perflab.render.texttable import TextTab
from perflab.render.units import common_scale, is_binary


def pct_range(centre: float, low: float, high: float) -> str:
    if math.isinf(low) or math.isinf(high):
        return "∞"
    if not (finite(centre) and finite(low) and finite(high)):
        return "?"
    if len({math.copysign(1.0, v) if v else 0.0 for v in (centre, low, high)}) > 1:
        return "?"  # the interval crosses zero (np.sign's rule)
    if centre == 0:
        return "0%"
    return f"{100 * max(high / centre - 1, 1 - low / centre):.0f}%"


def _delta(d: Change) -> str:
    if not d.significant:
        return "~"
    return f"{d.raw_pct:+.2f}%" if finite(d.raw_pct) else "?"


def _counts(d: Change, n_base: int, n_new: int) -> str:
    p = f"p={d.p_value:.3f} " if finite(d.p_value) else ""
    return p + (f"n={n_base}" if n_base == n_new else f"n={n_base}+{n_new}")


def _superscript(i: int) -> str:
    return "".join("⁰¹²³⁴⁵⁶⁷⁸⁹"[int(ch)] for ch in str(i))


def _table(block: Block, report: CompareReport) -> str:
    """One table and its footnotes (numbered afresh per table, as benchstat does)."""
    notes: list[str] = []
    labels = report.labels
    centre_cols, delta_cols = 3, 3

    def start(exp: int) -> int:
        return 1 if exp == 0 else 1 + centre_cols + (exp - 1) * (centre_cols + delta_cols)

    t = TextTab()

    def warn(messages: Sequence[str]) -> None:
        marks = []
        for message in messages:
            if message not in notes:
                notes.append(message)
            marks.append(_superscript(notes.index(message) + 1))
        t.cell(" ".join(marks))

    right_edge = start(len(labels))
    t.row()
    for exp, label in enumerate(labels):
        t.col(start(exp)).span(start(exp + 1) - start(exp), label, "c", " │ ")
    t.col(right_edge).cell("", margin=" │")
    t.row()
    unit = f"{block.metric} ({block.unit})"
    for exp in range(len(labels)):
        left = start(exp)
        t.col(left).span(centre_cols, unit, "c", " │ ")
        if exp > 0:
            t.span(delta_cols, "vs base", "l", "  ")
        for j in range(left + 1, t.cur_col):
            t.shrink.add(j)
    t.col(right_edge).cell("", margin=" │")

    binary = is_binary(block.unit)
    for row in block.rows:
        t.row()
        t.cell("/".join(f"{k}={format_value(v)}" for k, v in row.params.items()) or block.benchmark)
        scaler = common_scale([s.median for s in row.sides if s is not None], binary)
        for exp, summary in enumerate(row.sides):
            if summary is None:
                continue
            interval = summary.median_ci
            t.col(start(exp))
            t.cell(scaler.format(summary.median), "r")
            t.cell(pct_range(summary.median, interval.low, interval.high), "r", " ± ")
            warn([w.message for w in summary.warnings] + [w.message for w in interval.warnings])
            d = row.cells[exp - 1].change if exp > 0 else None
            if d is not None and row.base is not None:
                t.cell(_delta(d), "r")
                t.cell(f"({_counts(d, row.base.n, summary.n)})")
                warn([w.message for w in row.cells[exp - 1].warnings])

    geomean = block.geomean
    if geomean is not None:
        t.row()
        t.cell("geomean")
        for exp in range(len(labels)):
            if not any(row.sides[exp] is not None for row in block.rows):
                continue
            gm = geomean.medians[exp]
            if finite(gm):
                t.col(start(exp)).cell(common_scale([gm], binary).format(gm), "r")
            if exp > 0:
                change = geomean.changes[exp - 1]
                t.col(start(exp) + centre_cols)
                t.cell(f"{change:+.2f}%" if finite(change) else "?", "r")
            t.col(start(exp + 1) - 1)
            warn(geomean.warnings[exp])
    return t.format() + "".join(f"{_superscript(i + 1)} {note}\n" for i, note in enumerate(notes))


def render_benchstat(report: CompareReport) -> str:
    parts = []
    previous = None
    for block in report.blocks:
        text = _table(block, report)
        if block.benchmark != previous:
            text = f"benchmark: {block.benchmark}\n" + text
            previous = block.benchmark
        parts.append(text)
    out = "\n".join(parts)
    out += (f"\n~ = no significant change: {significance_rule(report)}; p is the test's own p-value; "
            "vs base: change of the metric's mean\n")
    out += "".join(f"warning: {w}\n" for w in report.warnings)
    return out
