"""The mmtests compare-kernels table (seed 004): one block per benchmark and metric.

    hackbench: time (s, lower is better)
              groups                base                 patched
    Amean     1          0.2540 (   0.00%)      0.2533 (   0.26%)
    Amean     7          0.8020 (   0.00%)      0.7663 *   4.45%*

Each cell is the value in a 12-wide field, then the change in % with positive = better
(the baseline shows 0.00%). A significant cell replaces the parentheses with ``*``
marks, exactly where mmtests puts them. The mean row is Amean or Hmean by the metric's
mean kind; Min, Stddev, CoeffVar, Max, Median and BAmean-N/BHmean-N rows are optional
(``rows``) and come in mmtests' order. Stddev and CoeffVar changes count lower as
better, as mmtests does; marks go on the mean row only, because the test is about the
centre. Times are in seconds as mmtests prints them (hackbench's 0.0310, not 31.0000 ms)
while 4 decimals keep 3 digits, else scaled to one unit per block (ms, us, ns); a missing side or an
undefined value (one sample's stddev, an Hmean over a value <= 0) shows as ``-``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from perflab.model.records import Direction, RunInfo
from perflab.model.report.compare import Block, CompareReport, Row
from perflab.render.compare_common import (
    MEAN_NAMES,
    Stat,
    block_op,
    block_title,
    finite,
    metric_scales,
    note_lines,
    short_commit,
    significance_rule,
    titled,
    verdict_lines,
    warning_lines,
)

VALUE_WIDTH = 12


def _pct(change: float, marked: bool) -> str:
    if not finite(change):
        return f"({'-':>8})"
    change = 0.0 if round(change, 2) == 0 else change
    return f"*{change:7.2f}%*" if marked else f"({change:7.2f}%)"


def _stat_name(stat: Stat, row: Row) -> str:
    mean = MEAN_NAMES.get(row.mean_kind.value, "Mean")
    if stat.key == "mean":
        return mean
    if stat.key == "best":
        return f"B{mean}-{stat.pct}"
    return {"min": "Min", "max": "Max", "stddev": "Stddev", "coeffvar": "CoeffVar",
            "median": "Median"}[stat.key]


def _stat_values(stat: Stat, row: Row) -> list[float]:
    """The statistic on every side (baseline first), NaN where undefined or missing."""
    return [math.nan if side is None else side.statistic(stat.key, stat.pct) for side in row.sides]


def _changes(stat: Stat, row: Row) -> list[tuple[float, bool]]:
    """(change %, marked) per candidate; marks go on the mean row only (the test is about the centre)."""
    return [(math.nan, False) if cell.change is None else
            (cell.change.stat_change(stat.key, stat.pct), stat.key == "mean" and cell.change.significant)
            for cell in row.cells]


def _block(block: Block, stats: Sequence[Stat], runs: Sequence[RunInfo], max_width: int | None = None,
           scale: tuple[float, str] | None = None) -> str:
    """One block's table; ``scale``: its metric's divisor and unit in the report (`metric_scales`)."""
    factor, unit = scale or metric_scales([block])[(block.metric, block.unit)]
    lines_data = []  # (stat name, op, [numbers], [(change, marked)], stat key)
    for stat in stats:
        for row in block.rows:
            numbers = _stat_values(stat, row)
            if stat.key != "coeffvar":
                numbers = [n / factor for n in numbers]
            lines_data.append((_stat_name(stat, row), block_op(block, row) or block.metric, numbers,
                               _changes(stat, row), stat.key))
    shown = [abs(n) for _, _, numbers, _, key in lines_data if key != "coeffvar" for n in numbers if finite(n)]
    decimals = 4 if max(shown, default=0.0) < 100 else 2

    def number(n: float) -> str:
        return f"{n:.{decimals}f}" if finite(n) else "-"

    texts = [(name, op, [number(n) for n in numbers], changes) for name, op, numbers, changes, _ in lines_data]
    needed = max(len(t) for _, _, cells, _ in texts for t in cells)
    width = max(VALUE_WIDTH, needed)
    name_width = max([10, *(len(name) + 1 for name, _, _, _ in texts)])
    op_width = max(len(op) for _, op, _, _ in texts)
    if max_width is not None:  # narrow the value fields (never below the widest number) to fit
        spare = max_width - name_width - op_width - len(runs) * (2 + len(_pct(0.0, False)))
        width = max(needed + 1, min(width, spare // len(runs)))  # a space before every number
    cell_width = width + 1 + len(_pct(0.0, False))
    names = block.param_names
    header_op = block.row_param if block.row_param is not None and names == [block.row_param] else ""

    direction = "lower" if block.direction is Direction.LOWER else "higher"
    out = [f"{titled(block_title(block, [r.label for r in runs]), block.metric)} ({unit}, {direction} is better)"]
    lead = " " * (name_width + op_width)
    if any(r.commit for r in runs):
        out.append((lead + "".join(short_commit(r)[:cell_width - 1].rjust(cell_width) for r in runs)).rstrip())
    labels = lead + "".join(r.label[:cell_width - 1].rjust(cell_width) for r in runs)
    # the parameter's name heads the operation column where the labels leave room
    end = name_width + len(header_op)
    if header_op and not labels[name_width:end + 1].strip():
        labels = labels[:name_width] + header_op + labels[end:]
    out.append(labels)
    for name, op, cells, changes in texts:
        parts = [name.ljust(name_width), op.ljust(op_width), cells[0].rjust(width), " ",
                 _pct(0.0, False) if cells[0] != "-" else _pct(math.nan, False)]
        for text, (change, marked) in zip(cells[1:], changes):
            parts += [text.rjust(width), " ", _pct(change, marked)]
        out.append("".join(parts).rstrip())
    return "\n".join(out)


def render_mmtests(report: CompareReport, stats: Sequence[Stat], show_all: bool = False,
                   width: int | None = None, verbose: bool = False) -> str:
    """``width``: narrow the value columns (to the widest number and a space) so that a table
    fits that many columns where it can; run labels longer than a column are cut."""
    scales = metric_scales(report.blocks)
    parts = [_block(block, stats, report.runs, width, scales[(block.metric, block.unit)]) for block in report.blocks]
    footer = [f"* = significant: {significance_rule(report)}",
              "% = change vs the baseline, positive = better"]
    verdicts = verdict_lines(report)
    if verdicts and not report.is_rule:
        footer += ["verdicts:", *verdicts]
    footer += note_lines(report)
    warnings = warning_lines(report, verbose=verbose)
    if warnings:
        footer += ["warnings:", *warnings]
    if report.profile is not None:
        from perflab.render.compare_profile import render_profile_table
        parts.append(render_profile_table(report.profile, report.runs, show_all))
    return "\n\n".join([*parts, "\n".join(footer)]) + "\n"
