"""Plain-text tables that survive a mailing-list post: spaces only, no colour."""

from __future__ import annotations

from collections.abc import Sequence


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]],
                 align: str | None = None, indent: str = "") -> str:
    """Columns padded to their widest cell; ``align`` has one 'l' or 'r' per column."""
    align = align or "l" * len(headers)
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row)]

    def line(cells: Sequence[str]) -> str:
        parts = [cell.rjust(w) if a == "r" else cell.ljust(w)
                 for cell, w, a in zip(cells, widths, align)]
        return (indent + "  ".join(parts)).rstrip()

    rule = indent + "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(r) for r in rows)])
