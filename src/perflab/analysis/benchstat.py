"""A comparison's figures as benchstat computes them, for ``--format benchstat``.

benchstat has its own definitions (stats/benchmath.py): the median and its
order-statistic interval per side, the Mann-Whitney U p-value at alpha 0.05 per pair
("~" above it, whatever the report's own test said), the change of the medians, and a
geomean row of the medians and of their ratios. They are computed here, on request,
from each side's raw values, so that a table pasted into a Go review says what
benchstat would say; the report's own test, FDR control and verdicts are untouched.
"""

from __future__ import annotations

import math
from dataclasses import replace

from perflab.model.report.compare import BenchstatChange, Cell, CompareReport, Geomean, Row, SideSummary
from perflab.stats import benchmath


def with_benchstat(report: CompareReport, confidence: float = benchmath.CONFIDENCE) -> CompareReport:
    """The report with benchstat's figures on every side, cell and block."""
    blocks = []
    for block in report.blocks:
        rows = tuple(_row(row, confidence) for row in block.rows)
        geomean = _geomean(rows, len(report.runs)) if len(rows) > 1 else None
        blocks.append(replace(block, rows=rows, geomean=geomean))
    return replace(report, blocks=tuple(blocks))


def _side(side: SideSummary | None, confidence: float) -> SideSummary | None:
    if side is None:
        return None
    return replace(side, benchstat=benchmath.summary(side.values, confidence))


def _row(row: Row, confidence: float) -> Row:
    base = _side(row.base, confidence)
    cells = []
    for cell in row.cells:
        side = _side(cell.side, confidence)
        change = None
        if base is not None and side is not None and base.benchstat and side.benchstat:
            c = benchmath.u_test(base.values, side.values)
            change = BenchstatChange(p=c.p, n1=c.n1, n2=c.n2, alpha=c.alpha,
                                     delta_pct=benchmath.delta_pct(base.benchstat.center,
                                                                   side.benchstat.center), warnings=c.warnings)
        cells.append(Cell(label=cell.label, side=side, change=cell.change, warnings=cell.warnings, benchstat=change))
    return replace(row, base=base, cells=tuple(cells))


def _geomean(rows: tuple[Row, ...], n_sides: int) -> Geomean:
    """benchstat's summarizeCol: per column the geomean of the medians, and of the ratios
    to the baseline's (0/0 counts as 1; a baseline of 0 leaves the ratio out: '?')."""
    n_base = sum(1 for row in rows if row.base is not None)
    medians, changes, notes = [], [], []
    for i in range(n_sides):
        centres, ratios, bad = [], [], False
        for row in rows:
            side = row.sides[i]
            if side is None or side.benchstat is None:
                continue
            centres.append(side.benchstat.center)
            base = row.base.benchstat if row.base is not None and i > 0 else None
            if base is not None:
                a, b = side.benchstat.center, base.center
                bad = bad or (b == 0 and a != b)
                ratios.append(1.0 if a == b else 0.0 if b == 0 else a / b)
        why = []
        if i > 0 and n_base != len(ratios):
            why.append("benchmark set differs from baseline; geomeans may not be comparable")
        gm = _go_geomean(centres)
        if math.isnan(gm):
            why.append("summaries must be >0 to compute geomean")
        if i > 0:
            ratio = math.nan if bad else _go_geomean(ratios)
            if not bad and math.isnan(ratio):
                why.append("ratios must be >0 to compute geomean")
            changes.append((ratio - 1) * 100 if math.isfinite(ratio) else math.nan)
        medians.append(gm)
        notes.append(tuple(why))
    return Geomean(medians=tuple(medians), changes=tuple(changes), warnings=tuple(notes))


def _go_geomean(xs: list[float]) -> float:
    """go-moremath stats.GeoMean: a running mean of the logs; NaN if empty or any x <= 0."""
    if not xs or any(x <= 0 for x in xs):
        return math.nan
    m = 0.0
    for i, x in enumerate(xs):
        m += (math.log(x) - m) / (i + 1)
    return math.exp(m)
