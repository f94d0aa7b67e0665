"""benchstat's text report (golang.org/x/perf/cmd/benchstat, 2023 format).

    benchmark: hackbench
              │      base      │                patched                 │
              │    time (s)    │   time (s)     vs base                 │
    groups=1    254.0m ± 2%   253.3m ± 1%        ~ (p=0.612 n=10)
    groups=4    622.0m ± 1%   559.0m ± 2%  -10.13% (p=0.000 n=10)
    geomean     397.5m        373.2m        -6.11%

One table per benchmark and metric (the benchmark is printed when it changes, as
benchstat prints changed configuration). Every figure is benchstat's own, computed by
analysis/benchstat.py (``with_benchstat``) before this renders: the median ± the
half-width of its order-statistic confidence interval in % of the median, ``vs base``
the change of the medians or ``~`` when benchstat's Mann-Whitney U p-value exceeds
0.05, the p-value and the sample sizes, and the geomean row of the medians and of
their ratios. Numbers carry SI prefixes with a scale shared across the row (binary
prefixes for bytes). benchstat's warnings are footnotes, numbered in order of
appearance; the report's own warnings follow the table once.

The table layout (column groups separated by ``│``, ``±`` signs in their own margin)
reproduces benchstat's text-table algorithm.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from perflab.model.params import format_value
from perflab.model.report.compare import BenchstatChange, Block, CompareReport
from perflab.render.compare_common import finite
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


def _delta(d: BenchstatChange) -> str:
    """benchstat's FormatDelta."""
    if not d.significant:
        return "~"
    if d.delta_pct == 0:
        return "0.00%"
    return f"{d.delta_pct:+.2f}%" if finite(d.delta_pct) else "?"


def _counts(d: BenchstatChange) -> str:
    """benchstat's Comparison.String: the p-value (left out when exactly 0) and the sizes."""
    p = f"p={d.p:.3f} " if d.p != 0 else ""
    return p + (f"n={d.n1}" if d.n1 == d.n2 else f"n={d.n1}+{d.n2}")


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
        sides = [None if s is None else s.benchstat for s in row.sides]
        if any(s is None for s, side in zip(sides, row.sides) if side is not None):
            raise ValueError("benchstat's figures were not computed: analysis.benchstat.with_benchstat(report)")
        scaler = common_scale([s.center for s in sides if s is not None], binary)
        for exp, bs in enumerate(sides):
            if bs is None:
                continue
            t.col(start(exp))
            t.cell(scaler.format(bs.center), "r")
            t.cell(pct_range(bs.center, bs.low, bs.high), "r", " ± ")
            warn(bs.warnings)
            d = row.cells[exp - 1].benchstat if exp > 0 else None
            if d is not None:
                t.cell(_delta(d), "r")
                t.cell(f"({_counts(d)})")
                warn(d.warnings)

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


def render_benchstat(report: CompareReport, verbose: bool = False) -> str:
    """benchstat's tables; ``verbose`` is accepted for the registry (benchstat's own warnings
    are footnotes, the report's follow once)."""
    parts = []
    previous = None
    for block in report.blocks:
        text = _table(block, report)
        if block.benchmark != previous:
            text = f"benchmark: {block.benchmark}\n" + text
            previous = block.benchmark
        parts.append(text)
    out = "\n".join(parts)
    out += ("\nbenchstat's statistics: median ± 95% CI of the median (order statistics); vs base: change of "
            "the medians, ~ when the Mann-Whitney U test's p > 0.05 (no FDR control, as benchstat)\n")
    out += "".join(f"{note}\n" for note in report.notes)
    out += "".join(f"warning: {w}\n" for w in report.warnings)
    return out
