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
from perflab.model.report.compare import BenchstatChange, Block, CompareReport, Row
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


CENTRE_COLS, DELTA_COLS = 3, 3   # a side's centre ± range and warning; its vs base and counts


class _Table:
    """One benchstat table and its footnotes (numbered afresh per table, as benchstat does)."""

    def __init__(self, block: Block, labels: Sequence[str]):
        self.block, self.labels, self.binary = block, labels, is_binary(block.unit)
        self.t = TextTab()
        self.notes: list[str] = []

    @staticmethod
    def start(exp: int) -> int:
        """The first column of side ``exp`` (0 the base, which has no delta columns)."""
        return 1 if exp == 0 else 1 + CENTRE_COLS + (exp - 1) * (CENTRE_COLS + DELTA_COLS)

    def warn(self, messages: Sequence[str]) -> None:
        """A cell of footnote marks, each message numbered on first sight."""
        marks = []
        for message in messages:
            if message not in self.notes:
                self.notes.append(message)
            marks.append(_superscript(self.notes.index(message) + 1))
        self.t.cell(" ".join(marks))

    def heading(self) -> None:
        """Two header rows: the labels, then the metric (and "vs base") under each."""
        t, labels, right_edge = self.t, self.labels, self.start(len(self.labels))
        t.row()
        for exp, label in enumerate(labels):
            t.col(self.start(exp)).span(self.start(exp + 1) - self.start(exp), label, "c", " │ ")
        t.col(right_edge).cell("", margin=" │")
        t.row()
        unit = f"{self.block.metric} ({self.block.unit})"
        for exp in range(len(labels)):
            left = self.start(exp)
            t.col(left).span(CENTRE_COLS, unit, "c", " │ ")
            if exp > 0:
                t.span(DELTA_COLS, "vs base", "l", "  ")
            for j in range(left + 1, t.cur_col):
                t.shrink.add(j)
        t.col(right_edge).cell("", margin=" │")

    def row(self, row: Row) -> None:
        """A point: each side's median ± range, and each candidate's change and counts."""
        t = self.t
        t.row()
        t.cell("/".join(f"{k}={format_value(v)}" for k, v in row.params.items()) or self.block.benchmark)
        sides = [None if s is None else s.benchstat for s in row.sides]
        if any(s is None for s, side in zip(sides, row.sides) if side is not None):
            raise ValueError("benchstat's figures were not computed: analysis.benchstat.with_benchstat(report)")
        scaler = common_scale([s.center for s in sides if s is not None], self.binary)
        for exp, bs in enumerate(sides):
            if bs is None:
                continue
            t.col(self.start(exp))
            t.cell(scaler.format(bs.center), "r")
            t.cell(pct_range(bs.center, bs.low, bs.high), "r", " ± ")
            self.warn(bs.warnings)
            d = row.cells[exp - 1].benchstat if exp > 0 else None
            if d is not None:
                t.cell(_delta(d), "r")
                t.cell(f"({_counts(d)})")
                self.warn(d.warnings)

    def geomean(self) -> None:
        """The geomean row of the medians and of their ratios, where the block has one."""
        geomean, t = self.block.geomean, self.t
        if geomean is None:
            return
        t.row()
        t.cell("geomean")
        for exp in range(len(self.labels)):
            if not any(row.sides[exp] is not None for row in self.block.rows):
                continue
            gm = geomean.medians[exp]
            if finite(gm):
                t.col(self.start(exp)).cell(common_scale([gm], self.binary).format(gm), "r")
            if exp > 0:
                change = geomean.changes[exp - 1]
                t.col(self.start(exp) + CENTRE_COLS)
                t.cell(f"{change:+.2f}%" if finite(change) else "?", "r")
            t.col(self.start(exp + 1) - 1)
            self.warn(geomean.warnings[exp])

    def text(self) -> str:
        return self.t.format() + "".join(f"{_superscript(i + 1)} {note}\n" for i, note in enumerate(self.notes))


def _table(block: Block, report: CompareReport) -> str:
    """One table and its footnotes."""
    table = _Table(block, report.labels)
    table.heading()
    for row in block.rows:
        table.row(row)
    table.geomean()
    return table.text()


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
