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
shows, like benchstat, the unoriented change of the medians — or ``~`` when the
report's test does not find a significant change — followed by the test's p-value and
the sample sizes. The geomean row is the geometric mean of the medians and of the
ratios. Warnings are footnotes, numbered in order of appearance.

The table layout (column groups separated by ``│``, ``±`` signs in their own margin)
reproduces benchstat's text-table algorithm.
"""

from __future__ import annotations

from perflab.model.verdicts import WarningSide

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from perflab.model.params import format_value
from perflab.render.compare_common import Block, blocks, finite, significance_rule, summaries, values
from perflab.stats import median_ci

# -- a text table with spanning cells and margins, laid out as benchstat's texttab ------


@dataclass
class _Cell:
    row: int
    col: int
    span: int
    value: str
    margin: str
    align: str  # "l", "c" or "r"


class TextTab:
    """Cells placed by row and column, spanning columns, each with a left margin.

    Column widths grow to fit single cells first, then spanning cells spread what
    they still need over their non-shrink columns, widest first. Empty cells print
    nothing, so rows carry no trailing spaces.
    """

    def __init__(self) -> None:
        self.cells: list[_Cell] = []
        self.cols = 0
        self.shrink: set[int] = set()
        self.cur_row = 0
        self.cur_col = 0

    def row(self) -> "TextTab":
        if self.cells:
            self.cur_row += 1
        self.cur_col = 0
        return self

    def col(self, col: int) -> "TextTab":
        if col < self.cur_col:
            raise ValueError(f"cannot move back from column {self.cur_col} to {col}")
        self.cur_col = col
        return self

    def cell(self, value: str, align: str = "l", margin: str | None = None) -> "TextTab":
        return self.span(1, value, align, margin)

    def span(self, cols: int, value: str, align: str = "l", margin: str | None = None) -> "TextTab":
        if margin is None:
            margin = "" if self.cur_col == 0 or not value else " "
        self.cells.append(_Cell(self.cur_row, self.cur_col, cols, value, margin, align))
        self.cur_col += cols
        self.cols = max(self.cols, self.cur_col)
        return self

    def format(self) -> str:
        margins = [0] * self.cols
        for c in self.cells:
            margins[c.col] = max(margins[c.col], len(c.margin))
        widths = [0] * self.cols
        for c in sorted(self.cells, key=lambda c: c.span):
            need = len(c.value) + margins[c.col]
            cols = range(c.col, c.col + c.span)
            if c.span == 1:
                widths[c.col] = max(widths[c.col], need)
                continue
            if sum(widths[i] for i in cols) >= need:
                continue
            grow = []
            for i in cols:
                if i in self.shrink:
                    need -= widths[i]
                else:
                    grow.append(i)
            grow.sort(key=lambda i: -widths[i])
            left = len(grow)
            for i in grow:
                widths[i] = max(widths[i], -(-need // left))
                need -= widths[i]
                left -= 1
        offsets = [0]
        for w in widths:
            offsets.append(offsets[-1] + w)

        lines: list[str] = []
        line = ""
        current = -1
        for c in sorted(self.cells, key=lambda c: (c.row, c.col)):
            if not c.value.strip() and not c.margin.strip():
                continue
            while current < c.row:
                if current >= 0:
                    lines.append(line)
                line, current = "", current + 1
            line += " " * (offsets[c.col] - len(line)) + c.margin.rjust(margins[c.col])
            width = offsets[c.col + c.span] - offsets[c.col] - margins[c.col]
            if c.align == "r":
                line += c.value.rjust(width)
            elif c.align == "c":
                line += " " * ((width - len(c.value)) // 2) + c.value
            else:
                line += c.value
        if current >= 0:
            lines.append(line)
        return "\n".join(lines) + ("\n" if lines else "")


# -- numbers as benchstat prints them ---------------------------------------------------

_SI = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")]
_IEC = [(2.0**40, "Ti"), (2.0**30, "Gi"), (2.0**20, "Mi"), (2.0**10, "Ki"), (1.0, "")]


@dataclass(frozen=True)
class Scaler:
    decimals: int
    factor: float
    prefix: str

    def format(self, value: float) -> str:
        if not finite(value):
            return "-"
        return f"{value / self.factor:.{self.decimals}f}{self.prefix}"


def common_scale(numbers: Sequence[float], binary: bool = False) -> Scaler:
    """The prefix and precision that give every value three or more significant digits,
    chosen by the non-zero value nearest zero (benchunit.CommonScale)."""
    nonzero = [abs(v) for v in numbers if finite(v) and v != 0]
    if not nonzero:
        return Scaler(3, 1.0, "")
    smallest = min(nonzero)
    for factor, prefix in (_IEC if binary else _SI):
        if smallest >= 99.995 * factor:
            return Scaler(1, factor, prefix)
        if smallest >= 9.9995 * factor:
            return Scaler(2, factor, prefix)
        if smallest >= 0.99995 * factor:
            return Scaler(3, factor, prefix)
    factor, prefix = (_IEC if binary else _SI)[-1]
    value = smallest / factor
    for digits in range(3, 11):
        if value >= 9.9995 * 10.0 ** -(digits - 2) or digits == 10:
            return Scaler(digits, factor, prefix)
    return Scaler(10, factor, prefix)


def _binary(unit: str) -> bool:
    return unit == "B" or unit.startswith("B/")


def pct_range(centre: float, low: float, high: float) -> str:
    if math.isinf(low) or math.isinf(high):
        return "∞"
    if not (finite(centre) and finite(low) and finite(high)):
        return "?"
    if np.sign(centre) != np.sign(low) or np.sign(centre) != np.sign(high):
        return "?"
    if centre == 0:
        return "0%"
    return f"{100 * max(high / centre - 1, 1 - low / centre):.0f}%"


def _delta(d: Any, old: float, new: float) -> str:
    if not d.significant:
        return "~"
    if old == new:
        return "0.00%"
    if not (finite(old) and finite(new)) or old == 0:
        return "?"
    return f"{100 * (new / old - 1):+.2f}%"


def _counts(d: Any) -> str:
    p = f"p={d.p_value:.3f} " if finite(d.p_value) else ""
    n1, n2 = d.base.n, d.new.n
    return p + (f"n={n1}" if n1 == n2 else f"n={n1}+{n2}")


def _superscript(i: int) -> str:
    return "".join("⁰¹²³⁴⁵⁶⁷⁸⁹"[int(ch)] for ch in str(i))


def _geomean(numbers: Sequence[float]) -> float:
    x = np.asarray(numbers, dtype=float)
    if x.size == 0 or not np.all(np.isfinite(x)) or np.any(x <= 0):
        return math.nan
    return float(np.exp(np.log(x).mean()))


def _table(block: Block, comparison: Any) -> str:
    """One table and its footnotes (numbered afresh per table, as benchstat does)."""
    notes: list[str] = []
    labels = comparison.labels
    confidence = comparison.confidence
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

    binary = _binary(block.unit)
    medians_by_col: list[list[float]] = [[] for _ in labels]
    ratios_by_col: list[list[float]] = [[] for _ in labels]
    base_count = 0
    for row in block.rows:
        t.row()
        t.cell("/".join(f"{k}={format_value(v)}" for k, v in row.params.items()) or block.benchmark)
        sides = summaries(row)
        samples = values(row)
        scaler = common_scale([s.median for s in sides if s is not None], binary)
        base_count += sides[0] is not None
        for exp, (summary, vals) in enumerate(zip(sides, samples)):
            if summary is None:
                continue
            medians_by_col[exp].append(summary.median)
            interval = median_ci(vals, confidence)
            t.col(start(exp))
            t.cell(scaler.format(summary.median), "r")
            t.cell(pct_range(summary.median, interval.low, interval.high), "r", " ± ")
            warn([w.message for w in summary.warnings] + [w.message for w in interval.warnings])
            d = row.cells[exp - 1].difference if exp > 0 else None
            if d is not None and sides[0] is not None:
                old, new = sides[0].median, summary.median
                ratios_by_col[exp].append(1.0 if old == new else (new / old if old else math.nan))
                t.cell(_delta(d, old, new), "r")
                t.cell(f"({_counts(d)})")
                warn([w.message for w in d.warnings if w.side is WarningSide.PAIR])

    if len(block.rows) > 1:
        t.row()
        t.cell("geomean")
        for exp in range(len(labels)):
            if not medians_by_col[exp]:
                continue
            messages = []
            if exp > 0 and len(ratios_by_col[exp]) != base_count:
                messages.append("benchmark set differs from baseline; geomeans may not be comparable")
            gm = _geomean(medians_by_col[exp])
            if finite(gm):
                t.col(start(exp)).cell(common_scale([gm], binary).format(gm), "r")
            else:
                messages.append("summaries must be >0 to compute geomean")
            if exp > 0:
                ratio = _geomean(ratios_by_col[exp])
                t.col(start(exp) + centre_cols)
                if finite(ratio):
                    t.cell(f"{100 * (ratio - 1):+.2f}%", "r")
                else:
                    t.cell("?")
                    messages.append("ratios must be >0 to compute geomean")
            t.col(start(exp + 1) - 1)
            warn(messages)
    return t.format() + "".join(f"{_superscript(i + 1)} {note}\n" for i, note in enumerate(notes))


def render_benchstat(comparison: Any) -> str:
    parts = []
    previous = None
    for block in blocks(comparison):
        text = _table(block, comparison)
        if block.benchmark != previous:
            text = f"benchmark: {block.benchmark}\n" + text
            previous = block.benchmark
        parts.append(text)
    out = "\n".join(parts)
    out += f"\n~ = no significant change: {significance_rule(comparison)}; p is the test's own p-value\n"
    out += "".join(f"warning: {w}\n" for w in comparison.warnings)
    return out
