"""The comparison report built from the sides' value tables: tests, verdicts, rows, blocks.

`build_report` takes one table of value groups per side (baseline first), tests each
candidate against the baseline (`stats.compare`), decides the verdicts under one FDR budget
across the whole report (`stats.decide`) and lays the rows out in blocks with benchstat's
geomean. ``analysis.compare`` gathers the tables from the store.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from perflab.model.methods import METHOD_NAMES
from perflab.model.params import Params, format_value, point_text
from perflab.model.records import Direction, MetricInfo, RunInfo
from perflab.model.report.compare import (
    Block,
    Cell,
    Change,
    CompareReport,
    Geomean,
    Layout,
    Row,
    RunToRunUsed,
    SideSummary,
)
from perflab.model.report.outcomes import Interval, RuleOutcome
from perflab.model.verdicts import StatWarning, Verdict, WarningSide, oriented
from perflab.stats import Difference, RuleResult, Summary, best_mean, decide
from perflab.stats.difference import Pair, compare_rows
from perflab.stats.intervals import Interval as MedianInterval
from perflab.stats.intervals import median_ci_rows
from perflab.stats.rows import by_size
from perflab.stats.separate_runs import RunToRun
from perflab.stats.summary import summarize_rows
from perflab.stats.variance import RunVariance
from perflab.stats.warnings import RUN_VARIANCE, RUNS_TO_DECIDE
from perflab.store.series import ValueGroup

Key = tuple[str, str, str]   # benchmark, params JSON, metric

Tables = list[dict[Key, ValueGroup]]   # per side: (benchmark, params, metric) -> values


def build_report(tables: Tables, runs: Sequence[RunInfo], infos: dict[tuple[str, str], MetricInfo], *,
                 method: str = "welch-log", q: float = 0.05, confidence: float = 0.95,
                 noise_floor: float | None = None, best_pcts: Sequence[int] = (),
                 warnings: Sequence[str] = (), layouts: dict[str, Layout] | None = None,
                 separate: Sequence[bool] = (), run_variances: dict[Key, RunVariance | None] | None = None,
                 run_shares: dict[Key, list[float]] | None = None,
                 run_to_run: dict[Key, RunToRun] | None = None) -> CompareReport:
    """The report of the sides' value tables (baseline first), one row per key any side has:
    each candidate tested against the baseline, verdicts decided across the whole report.

    ``separate[c]``: candidate c and the baseline were recorded by different runs, so
    their run-to-run variance enters the test: ``run_variances[key]`` where known; a row
    with neither it nor ``run_to_run`` is undecided (stats.difference). ``run_shares[key]``:
    per side, how many runs it pools (`stats.variance.run_shares`; 1, a single run, if absent).
    ``run_to_run[key]``: the host prior a row of single separate runs borrows
    (`analysis.host_model`), which then takes the place of ``run_variances``."""
    warnings = list(warnings)
    keys = list(dict.fromkeys(key for table in tables for key in table))
    figures = _side_figures(tables, infos, confidence)
    pending = _tested_cells(tables, keys, infos, figures, method=method, confidence=confidence,
                            noise_floor=noise_floor, separate=separate, run_variances=run_variances or {},
                            run_shares=run_shares or {}, run_to_run=run_to_run or {})
    warnings += _absent_warnings(tables, keys, runs)
    decided = decide([d for _, _, d in pending], q) if pending else []
    warnings += _run_variance_notes(decided)
    by_cell = {(r, c): d for (r, c, _), d in zip(pending, decided)}
    rows = [_row(r, key, tables, runs, infos[(key[0], key[2])], figures, by_cell,
                 noise_floor=noise_floor, best_pcts=best_pcts) for r, key in enumerate(keys)]
    tested = sum(1 for d in decided if d.rule is None)
    floors = tuple(sorted({d.noise_floor for d in decided}))
    layouts = {b: _layout(b) for b in dict.fromkeys(row.benchmark for row in rows)} | dict(layouts or {})
    # each benchmark's metrics in its layout's order (the primary first), then as stored
    metric_order = {key: (layouts[key[0]].metrics.index(key[1]) if key[1] in layouts[key[0]].metrics
                          else len(layouts[key[0]].metrics) + i)
                    for i, key in enumerate(infos) if key[0] in layouts}
    return CompareReport(runs=tuple(runs), blocks=_blocks(rows, len(runs), layouts, metric_order), method=method,
                         method_name=METHOD_NAMES[method],
                         q=q, confidence=confidence, tested=tested, noise_floors=floors, warnings=tuple(warnings))


@dataclass(frozen=True)
class _SideFigures:
    """What the report shows of one side's values beyond their `summarize`."""

    values: np.ndarray                # the finite ones
    summary: Summary
    median_ci: MedianInterval
    amean: float
    population_cov: float             # %, 100·sd/amean with the n denominator


def _side_figures(tables: Tables, infos: dict[tuple[str, str], MetricInfo],
                  confidence: float) -> dict[tuple[int, Key], _SideFigures]:
    """Every side's every group's figures, by (side, key), each statistic taken for all of
    them at once (along the rows of equal n): the test and the table share them."""
    cells = [(side, key, group) for side, table in enumerate(tables) for key, group in table.items()]
    finite = [group.values[np.isfinite(group.values)] for _, _, group in cells]
    summaries = summarize_rows([group.values for _, _, group in cells],
                               [infos[(key[0], key[2])].mean for _, key, _ in cells])
    intervals = median_ci_rows(finite, confidence)
    amean, sd = [math.nan] * len(cells), [math.nan] * len(cells)
    for rows, block in by_size(finite):
        if block.shape[1]:
            for i, m, s in zip(rows, block.mean(axis=1).tolist(), block.std(axis=1).tolist()):
                amean[i], sd[i] = m, s
    return {(side, key): _SideFigures(x, summary, interval, m, 100.0 * s / m if x.size and m > 0 else math.nan)
            for (side, key, _), x, summary, interval, m, s in zip(cells, finite, summaries, intervals, amean, sd)}


def _tested_cells(tables: Tables, keys: list[Key], infos: dict[tuple[str, str], MetricInfo],
                  figures: dict[tuple[int, Key], _SideFigures], *, method: str, confidence: float,
                  noise_floor: float | None, separate: Sequence[bool],
                  run_variances: dict[Key, RunVariance | None], run_shares: dict[Key, list[float]],
                  run_to_run: dict[Key, RunToRun]) -> list[tuple[int, int, Difference]]:
    """(row, candidate, its test against the baseline) of every cell both sides have."""
    cells: list[tuple[int, int]] = []
    pairs: list[Pair] = []
    for r, key in enumerate(keys):
        base = tables[0].get(key)
        info = infos[(key[0], key[2])]
        for c, table in enumerate(tables[1:]):
            other = table.get(key)
            if base is None or other is None:
                continue
            apart = bool(separate[c]) if c < len(separate) else False
            shares = run_shares.get(key) or [1.0] * len(tables)
            known = run_to_run.get(key) if apart else None
            if known is not None and len(known.load) > 2:   # this pair's two sides
                known = replace(known, load=(known.load[0], known.load[c + 1]),
                                unequal=(False, known.unequal[c + 1]),
                                measured=tuple(known.measured[i] for i in (0, c + 1) if i < len(known.measured)))
            cells.append((r, c))
            pairs.append(Pair(base.values, other.values, info.direction, info.mean,
                              info.noise_floor if noise_floor is None else noise_floor, apart,
                              run_variances.get(key) if apart else None, (shares[0], shares[c + 1]),
                              (figures[(0, key)].summary, figures[(c + 1, key)].summary), known))
    tested = compare_rows(pairs, method=method, confidence=confidence)
    return [(r, c, d) for (r, c), d in zip(cells, tested)]


def _absent_warnings(tables: Tables, keys: list[Key], runs: Sequence[RunInfo]) -> list[str]:
    """One line per set of sides without samples of some rows, naming a few of the rows."""
    absent: dict[str, list[str]] = {}   # sides without samples -> the rows they miss
    for key in keys:
        missing = [runs[i].label for i, table in enumerate(tables) if key not in table]
        if missing:
            params = next(table[key] for table in tables if key in table).params
            absent.setdefault(", ".join(missing), []).append(f"{key[0]} {point_text(params)} {key[2]}")
    lines = []
    for where, titles in absent.items():
        named = "; ".join(titles[:3]) + (f" and {len(titles) - 3} more" if len(titles) > 3 else "")
        lines.append(f"no samples in {where} for {len(titles)} row(s): {named}")
    return lines


def _run_variance_notes(decided: Sequence[Difference]) -> list[str]:
    """How run-to-run variance entered the tests, said once per wording with its count of rows."""
    said: dict[str, int] = {}
    for d in decided:
        for w in d.warnings:
            if w.kind == RUN_VARIANCE:
                said[w.message] = said.get(w.message, 0) + 1
    return [f"{message} [{count} row(s)]" for message, count in said.items()]


def _row(r: int, key: Key, tables: Tables, runs: Sequence[RunInfo], info: MetricInfo,
         figures: dict[tuple[int, Key], _SideFigures], by_cell: dict[tuple[int, int], Difference], *,
         noise_floor: float | None, best_pcts: Sequence[int]) -> Row:
    """Row ``r`` of the report: every side's statistics and each candidate's decided cell."""
    groups = [table.get(key) for table in tables]
    sides_ = [None if g is None else
              _side(g, figures[(i, key)], info, best_pcts,
                    WarningSide.BASE if i == 0 else WarningSide.CANDIDATE)
              for i, g in enumerate(groups)]
    first = next(g for g in groups if g is not None)
    cells = tuple(_cell(runs[c + 1].label, sides_[0], side, by_cell.get((r, c)), info)
                  for c, side in enumerate(sides_[1:]))
    return Row(benchmark=key[0], params=first.params, metric=key[2], unit=first.unit,
               direction=info.direction, mean_kind=info.mean,
               noise_floor=info.noise_floor if noise_floor is None else noise_floor,
               base=sides_[0], cells=cells)


def recorded_layouts(runs: Sequence[RunInfo]) -> dict[str, Layout]:
    """The layouts the baseline's run recorded with its plans (a suite's title and row),
    over the workloads' own."""
    found: dict[str, Layout] = {}
    for plan in runs[0].request.plans:
        layout = plan.layout
        if layout is not None:
            own = _layout(layout.benchmark)
            found[layout.benchmark] = Layout(title=layout.title or own.title, row=layout.row or own.row,
                                             metrics=own.metrics)
    return found


def _layout(benchmark: str) -> Layout:
    """A built-in workload's layout of its rows (none for a command)."""
    from perflab.workloads import registry
    if not registry.is_builtin(benchmark):
        return Layout()
    workload = registry.builtin(benchmark)
    return Layout(title=workload.report_title, row=workload.report_row, metrics=tuple(m.name for m in workload.metrics))


def _side(group: ValueGroup, figures: _SideFigures, info: MetricInfo, best_pcts: Sequence[int],
          side: WarningSide) -> SideSummary:
    """Every statistic any format shows of one side's samples."""
    x, s, median_interval = figures.values, figures.summary, figures.median_ci
    best = tuple((pct, best_mean(x, pct, info.mean, info.direction) if x.size else math.nan)
                 for pct in best_pcts)
    return SideSummary(
        n=s.n, failures=int(group.failures), values=tuple(x.tolist()), mean_kind=info.mean,
        centre=s.centre, median=s.median,
        median_ci=Interval(low=median_interval.low, high=median_interval.high, confidence=median_interval.confidence,
                           warnings=tuple(w.on(side) for w in median_interval.warnings)),
        stddev=s.stddev, cov=s.cov, population_cov=figures.population_cov, min=s.min, max=s.max, best=best,
        warnings=tuple(w.on(side) for w in s.warnings))


def _oriented_change(base: float, new: float, direction: Direction) -> float:
    """100·(new/base − 1) with positive = better; NaN where a % is undefined."""
    if not (math.isfinite(base) and math.isfinite(new)) or base <= 0:
        return math.nan
    return oriented(100.0 * (new / base - 1.0), direction)


def rule_outcome(rule: RuleResult | None) -> RuleOutcome | None:
    """A blocking rule's result (stats.rules) as a report states it."""
    return None if rule is None else RuleOutcome(name=rule.rule, changed=bool(rule.changed), detail=rule.detail)


def _cell(label: str, base: SideSummary | None, side: SideSummary | None, d: Difference | None,
          info: MetricInfo) -> Cell:
    if d is None or base is None or side is None:
        return Cell(label=label, side=side, change=None)
    stat_changes = []
    for key in ("min", "median", "stddev", "coeffvar", "max"):
        direction = Direction.LOWER if key in ("stddev", "coeffvar") else info.direction
        stat_changes.append(((key, 0), _oriented_change(base.statistic(key), side.statistic(key), direction)))
    for pct, value in side.best:
        stat_changes.append((("best", pct), _oriented_change(base.statistic("best", pct), value, info.direction)))
    rule = rule_outcome(d.rule)
    change = Change(
        pct=d.change_pct, raw_pct=oriented(d.change_pct, info.direction),
        ci=Interval(low=d.ci_low, high=d.ci_high, confidence=d.confidence), method=d.method_key, test=d.method,
        interval=d.interval, p_value=d.p_value, q_value=d.q_value, min_p=d.min_p, noise_floor=d.noise_floor,
        verdict=d.verdict, rule=rule, stat_changes=tuple(stat_changes), blocked=d.blocked,
        unsettled=d.unsettled,
        run_to_run=RunToRunUsed(source=d.variance_source, d0=d.d0, d=d.d, runs_needed=d.runs_needed, size=d.run_change,
                                spread_pct=d.run_spread)
        if d.variance_source else None)
    # how run-to-run variance entered the test is said once for the report, not per row
    pair = [w for w in d.warnings if w.side is WarningSide.PAIR and w.kind != RUN_VARIANCE]
    if change.run_to_run is not None and d.verdict is Verdict.UNDECIDED:
        pair.append(_runs_to_decide(change.run_to_run))
    return Cell(label=label, side=side, change=change, warnings=tuple(pair))


def _runs_to_decide(used: RunToRunUsed) -> StatWarning:
    """What would decide an undecided row of separate runs: replicate runs per side."""
    runs = f"{used.runs_needed}" if used.runs_needed is not None else "more than 1000"
    return StatWarning(RUNS_TO_DECIDE, f"undecided: {runs} runs a side would decide {100 * used.size:.3g}% "
                       "(80% power, this host's run-to-run spread)", WarningSide.PAIR)


def _blocks(rows: list[Row], n_sides: int, layouts: dict[str, Layout],
            metric_order: dict[tuple[str, str], int]) -> tuple[Block, ...]:
    """Rows grouped by benchmark and metric (each benchmark's metrics in its own order,
    the primary first), then split into blocks that share every parameter but the row
    parameter: mmtests' hackbench-process-pipes and hackbench-thread-pipes of one sweep.
    Parameters constant across a block are hoisted; benchstat's geomean is per block."""
    grouped: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        grouped.setdefault((row.benchmark, row.metric), []).append(row)
    benchmarks = list(dict.fromkeys(b for b, _ in grouped))
    ordered = sorted(grouped, key=lambda k: (benchmarks.index(k[0]), metric_order.get(k, len(metric_order))))
    blocks = []
    for key in ordered:
        members = grouped[key]
        layout = layouts.get(key[0], Layout())
        names = list(dict.fromkeys(name for row in members for name in row.params))
        values = {n: list(dict.fromkeys(json.dumps(row.params.get(n), sort_keys=True) for row in members))
                  for n in names}
        varying = [n for n in names if len(values[n]) > 1]
        row_param = layout.row if layout.row in varying else (
            max(varying, key=lambda n: (len(values[n]), -names.index(n))) if varying else None)
        split_by = [n for n in varying if n != row_param]
        parts: dict[str, list[Row]] = {}
        for row in members:
            parts.setdefault(json.dumps([row.params.get(n) for n in split_by]), []).append(row)
        for part in parts.values():
            first = part[0]
            hoisted = tuple((n, first.params[n]) for n in names if n != row_param and n in first.params
                            and all(r.params.get(n, first.params[n]) == first.params[n] and n in r.params
                                    for r in part))
            blocks.append(Block(benchmark=first.benchmark, metric=first.metric, unit=first.unit,
                                direction=first.direction, mean_kind=first.mean_kind,
                                rows=tuple(part), geomean=_geomean(part, n_sides) if len(part) > 1 else None,
                                hoisted=hoisted, row_param=row_param, title=_title(layout.title, dict(hoisted))))
    return tuple(blocks)


def _title(template: str | None, params: Params) -> str | None:
    """A layout's title with the block's parameters filled in; None when it names a
    parameter the block does not hold constant (then the default title is used)."""
    if template is None:
        return None
    try:
        return template.format_map({k: format_value(v) for k, v in params.items()})
    except (KeyError, ValueError, IndexError):
        return None


def _gmean(numbers: Sequence[float]) -> float:
    x = np.asarray(numbers, dtype=float)
    if x.size == 0 or not np.all(np.isfinite(x)) or np.any(x <= 0):
        return math.nan
    return float(np.exp(np.log(x).mean()))


def _geomean(rows: list[Row], n_sides: int) -> Geomean:
    """benchstat's geomean row: the geometric mean of each side's medians and of each
    candidate's ratios of centres over the rows both sides have."""
    medians, changes, notes = [], [], []
    present_base = sum(1 for row in rows if row.base is not None)
    for i in range(n_sides):
        sides = [row.sides[i] for row in rows if row.sides[i] is not None]
        why: list[str] = []
        gm = _gmean([s.median for s in sides if s is not None]) if sides else math.nan
        if sides and not math.isfinite(gm):
            why.append("summaries must be >0 to compute geomean")
        if i > 0:
            ratios = [1.0 + row.cells[i - 1].change.raw_pct / 100.0 for row in rows  # type: ignore[union-attr]
                      if row.cells[i - 1].change is not None]
            if len(ratios) != present_base:
                why.append("benchmark set differs from baseline; geomeans may not be comparable")
            ratio = _gmean(ratios)
            if ratios and not math.isfinite(ratio):
                why.append("ratios must be >0 to compute geomean")
            changes.append(100.0 * (ratio - 1.0) if math.isfinite(ratio) else math.nan)
        medians.append(gm)
        notes.append(tuple(why))
    return Geomean(medians=tuple(medians), changes=tuple(changes), warnings=tuple(notes))
