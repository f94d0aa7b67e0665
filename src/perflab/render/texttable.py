"""Plain-text tables that survive a mailing-list post: spaces only, no colour.

The one text-table toolkit of render/: ``format_table`` for simple aligned columns,
``TextTab`` for tables with spanning cells and margins (benchstat's layout).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]],
                 align: str | None = None, indent: str = "") -> str:
    """Columns padded to their widest cell; ``align`` has one 'l' or 'r' per column (columns
    it does not name are left-aligned: a short ``align`` never drops a column)."""
    align = (align or "").ljust(len(headers), "l")
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row)]

    def line(cells: Sequence[str]) -> str:
        parts = [cell.rjust(w) if a == "r" else cell.ljust(w)
                 for cell, w, a in zip(cells, widths, align)]
        return (indent + "  ".join(parts)).rstrip()

    rule = indent + "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(r) for r in rows)])


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

    def row(self) -> TextTab:
        if self.cells:
            self.cur_row += 1
        self.cur_col = 0
        return self

    def col(self, col: int) -> TextTab:
        if col < self.cur_col:
            raise ValueError(f"cannot move back from column {self.cur_col} to {col}")
        self.cur_col = col
        return self

    def cell(self, value: str, align: str = "l", margin: str | None = None) -> TextTab:
        return self.span(1, value, align, margin)

    def span(self, cols: int, value: str, align: str = "l", margin: str | None = None) -> TextTab:
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
