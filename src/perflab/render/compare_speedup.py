"""The before/after speed-up table of a patch cover letter (seed 002).

    hackbench: time (s, lower is better)
    groups  Before   After  Speed up
    ------  ------  ------  --------
    1       0.2540  0.2533     +0.3%
    7       0.8020  0.7663   +4.5% *
    12      1.1823  1.3037  -10.3% !

One table per benchmark and metric, one line per parameter point (a column per
parameter). Before/After are the centres (the metric's mean), scaled to one unit per
table. Speed up is the change in % with positive = faster (better), so a slowdown is
negative; ``*`` marks a significant speed-up and ``!`` a significant slowdown.
Small slowdowns are never rounded away (``-0.04%``, not ``-0.0%``), and every
significant slowdown is listed again under the tables with its absolute cost, because
"only 2.9 ms" is for the reader to judge. With several candidates each gets its own
value and speed-up columns, headed by its label.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perflab.model.params import format_value
from perflab.model.records import Direction
from perflab.model.report.compare import Block, Change, CompareReport, SideSummary
from perflab.model.verdicts import Verdict
from perflab.render.compare_common import (
    block_title,
    describe_run,
    finite,
    metric_scales,
    note_lines,
    significance_rule,
    titled,
    warning_lines,
)
from perflab.render.texttable import format_table
from perflab.render.units import format_number, scale_for


def speedup_text(change: float) -> str:
    if not finite(change):
        return "-"
    text = f"{change:+.1f}%"
    if change != 0 and float(text[:-1]) == 0:  # never round a real change to zero
        text = f"{change:+.2g}%"
    return text


def _mark(d: Change | None) -> str:
    """A two-character suffix, blank when not significant, so the % signs stay aligned."""
    if d is None or not d.significant:
        return "  "
    return " *" if d.verdict is Verdict.IMPROVEMENT else " !"


def _table(block: Block, labels: Sequence[str], scale: tuple[float, str] | None = None) -> tuple[str, list[str]]:
    """One block's table; ``scale``: its metric's divisor and unit in the report (`metric_scales`)."""
    centres = [abs(s.centre) for row in block.rows for s in row.sides if s is not None and finite(s.centre)]
    factor, unit = scale or metric_scales([block])[(block.metric, block.unit)]   # perf stat's seconds
    decimals = 4 if max(centres, default=0.0) / factor < 100 else 2
    names = block.param_names
    one = len(labels) == 2
    headers = list(names) if names else ["benchmark"]
    headers.append("Before" if one else labels[0])
    for label in labels[1:]:
        headers += ["After" if one else label, "Speed up"]
    rows, slower = [], []

    def shown(summary: SideSummary | None) -> str:
        return f"{summary.centre / factor:.{decimals}f}" if summary is not None and finite(summary.centre) else "-"

    for row in block.rows:
        cells: list[Any] = ([format_value(row.params[n]) if n in row.params else "-" for n in names]
                            if names else [block.benchmark])
        cells.append(shown(row.base))
        for label, cell in zip(labels[1:], row.cells):
            d = cell.change
            cells.append(shown(cell.side))
            cells.append((speedup_text(d.pct) if d is not None else "-", _mark(d)))
            if d is not None and d.verdict is Verdict.REGRESSION and row.base and cell.side:
                # the cost in the unit that reads best ("2.9 ms"), whatever the table's
                own, name = scale_for(max(row.base.centre, cell.side.centre), block.unit)
                before, after = row.base.centre / own, cell.side.centre / own
                per = "per run" if block.direction is Direction.LOWER else "less"
                slower.append(f"  {row.title}: {label} {speedup_text(d.pct)} "
                              f"({format_number(before)} -> {format_number(after)} {name}, "
                              f"{format_number(abs(after - before))} {name} {per})")
        rows.append(cells)
    # pad each speed-up to its column's width before the mark, so the % signs align
    for col in range(len(headers)):
        pairs = [r[col] for r in rows if isinstance(r[col], tuple)]
        width = max((len(text) for text, _ in pairs), default=0)
        for r in rows:
            if isinstance(r[col], tuple):
                r[col] = r[col][0].rjust(width) + r[col][1]
    align = "l" * max(1, len(names)) + "r" * (len(headers) - max(1, len(names)))
    direction = "lower" if block.direction is Direction.LOWER else "higher"
    title = f"{titled(block_title(block, labels), block.metric)} ({unit}, {direction} is better)"
    return title + "\n" + format_table(headers, rows, align=align), slower


def render_speedup(report: CompareReport, verbose: bool = False) -> str:
    labels = report.labels
    runs = report.runs
    head = ([f"Before: {describe_run(runs[0])}", f"After:  {describe_run(runs[1])}"] if len(runs) == 2
            else [f"{'base' if i == 0 else 'candidate'}: {describe_run(r)}" for i, r in enumerate(runs)])
    parts, slower = ["\n".join(head)], []
    scales = metric_scales(report.blocks)
    for block in report.blocks:
        text, found = _table(block, labels, scales[(block.metric, block.unit)])
        parts.append(text)
        slower += found
    footer = ["Speed up: change in %, positive = faster (better); "
              f"* = significant speed-up, ! = significant slowdown: {significance_rule(report)}"]
    if slower:
        footer += ["significant slowdowns:", *slower]
    footer += note_lines(report)
    warnings = warning_lines(report, verbose=verbose)
    if warnings:
        footer += ["warnings:", *warnings]
    return "\n\n".join([*parts, "\n".join(footer)]) + "\n"
