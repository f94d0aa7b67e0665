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
centre. Times are scaled to one unit per block (s, ms, us, ns); a missing side or an
undefined value (one sample's stddev, an Hmean over a value <= 0) shows as ``-``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perflab.model.records import Direction
from perflab.render.compare_common import (
    MEAN_NAMES, Block, Stat, blocks, finite, kind, short_commit, significance_rule, summaries,
    values, warning_lines,
)
from perflab.render.units import scale_for
from perflab.stats import best_mean

VALUE_WIDTH = 12


def _oriented(base: float, new: float, direction: Direction) -> float:
    if not (finite(base) and finite(new)) or base <= 0:
        return math.nan
    ratio = new / base
    return 100.0 * (ratio - 1.0) if direction is Direction.HIGHER else 100.0 * (1.0 - ratio)


def _pct(change: float, marked: bool) -> str:
    if not finite(change):
        return f"({'-':>8})"
    change = 0.0 if round(change, 2) == 0 else change
    return f"*{change:7.2f}%*" if marked else f"({change:7.2f}%)"


def _stat_name(stat: Stat, row: Any) -> str:
    mean = MEAN_NAMES.get(kind(row.info.mean), "Mean")
    if stat.key == "mean":
        return mean
    if stat.key == "best":
        return f"B{mean}-{stat.pct}"
    return {"min": "Min", "max": "Max", "stddev": "Stddev", "coeffvar": "CoeffVar",
            "median": "Median"}[stat.key]


def _stat_values(stat: Stat, row: Any) -> list[float]:
    """The statistic on every side (baseline first), NaN where undefined or missing."""
    out = []
    for summary, vals in zip(summaries(row), values(row)):
        if summary is None:
            out.append(math.nan)
        elif stat.key == "mean":
            out.append(summary.centre)
        elif stat.key == "best":
            out.append(best_mean(vals, stat.pct, row.info.mean, row.info.direction) if summary.n else math.nan)
        else:
            out.append(getattr(summary, stat.key if stat.key != "coeffvar" else "cov"))
    return out


def _changes(stat: Stat, row: Any, numbers: list[float]) -> list[tuple[float, bool]]:
    """(change %, marked) per candidate."""
    out = []
    for cell, new in zip(row.cells, numbers[1:]):
        d = cell.difference
        if stat.key == "mean" and d is not None:
            out.append((d.change_pct, bool(d.significant)))
            continue
        direction = Direction.LOWER if stat.key in ("stddev", "coeffvar") else row.info.direction
        out.append((_oriented(numbers[0], new, direction), False))
    return out


def _block(block: Block, stats: Sequence[Stat], runs: Sequence[Any]) -> str:
    centres = [abs(s.centre) for row in block.rows for s in summaries(row) if s is not None and finite(s.centre)]
    factor, unit = scale_for(max(centres, default=0.0), block.unit)
    lines_data = []  # (stat name, op, [numbers], [(change, marked)])
    for stat in stats:
        for row in block.rows:
            numbers = _stat_values(stat, row)
            changes = _changes(stat, row, numbers)
            if stat.key != "coeffvar":
                numbers = [n / factor for n in numbers]
            lines_data.append((_stat_name(stat, row), block.op(row) or block.metric, numbers, changes, stat.key))
    shown = [abs(n) for _, _, numbers, _, key in lines_data if key != "coeffvar" for n in numbers if finite(n)]
    decimals = 4 if max(shown, default=0.0) < 100 else 2

    def number(n: float) -> str:
        return f"{n:.{decimals}f}" if finite(n) else "-"

    texts = [(name, op, [number(n) for n in numbers], changes) for name, op, numbers, changes, _ in lines_data]
    width = max([VALUE_WIDTH, *(len(t) for _, _, cells, _ in texts for t in cells)])
    cell_width = width + 1 + len(_pct(0.0, False))
    names = block.param_names
    header_op = names[0] if len(names) == 1 else ""
    name_width = max([10, *(len(name) + 1 for name, _, _, _ in texts)])
    op_width = max(len(op) for _, op, _, _ in texts)

    direction = "lower" if block.direction is Direction.LOWER else "higher"
    out = [f"{block.benchmark}: {block.metric} ({unit}, {direction} is better)"]
    lead = " " * (name_width + op_width)
    if any(r.commit for r in runs):
        out.append((lead + "".join(short_commit(r).rjust(cell_width) for r in runs)).rstrip())
    labels = lead + "".join(r.label.rjust(cell_width) for r in runs)
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


def render_mmtests(comparison: Any, stats: Sequence[Stat], profile: Any = None, show_all: bool = False) -> str:
    parts = [_block(block, stats, comparison.runs) for block in blocks(comparison)]
    footer = [f"* = significant: {significance_rule(comparison)}",
              "% = change vs the baseline, positive = better"]
    warnings = warning_lines(comparison)
    if warnings:
        footer += ["warnings:", *warnings]
    if profile is not None:
        from perflab.render.compare_profile import render_profile_table
        parts.append(render_profile_table(profile, comparison.runs, show_all))
    return "\n\n".join([*parts, "\n".join(footer)]) + "\n"
