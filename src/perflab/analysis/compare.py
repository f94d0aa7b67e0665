"""Compare a baseline run with one or more candidates, row by row, under one FDR budget.

A row is one (benchmark, parameter point, metric). Each candidate's cell holds the
statistics of base vs that candidate; `stats.decide` then applies Benjamini-Hochberg
across every cell of the report, so the marks a reader sees are controlled together.
The result is a ``model.report.compare.CompareReport``: every number any format shows
is computed here, once.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from perflab.analysis.contention import contention_warnings
from perflab.analysis.host_model import separate_runs_knowledge
from perflab.analysis.selection import hidden_note, keep_primary
from perflab.model.errors import UsageError
from perflab.model.params import coerce, format_value, point_text
from perflab.model.records import (
    Direction,
    MetricInfo,
    RunInfo,
    is_monitor_metric,
    is_pressure_metric,
    normalise_params,
)
from perflab.model.report.calibration import Calibration
from perflab.model.report.compare import (
    Block,
    Cell,
    Change,
    CompareReport,
    Geomean,
    Interval,
    Layout,
    Row,
    RuleOutcome,
    RunToRunUsed,
    SideSummary,
)
from perflab.model.verdicts import StatWarning, Verdict, WarningSide
from perflab.stats import METHOD_NAMES, Difference, Summary, best_mean, compare, decide, median_ci, oriented, summarize
from perflab.stats.separate_runs import RunToRun
from perflab.stats.variance import RunVariance, between_runs, pooled, run_shares
from perflab.stats.warnings import RUN_VARIANCE, RUNS_TO_DECIDE
from perflab.store import Store
from perflab.store.repository import ValueGroup

Key = tuple[str, str, str]   # benchmark, params JSON, metric


@dataclass(frozen=True)
class Filters:
    """``--filter key=value`` (benchmark=NAME or any parameter) and ``--metric``."""

    benchmarks: frozenset[str] = frozenset()
    params: tuple[tuple[str, str], ...] = ()
    metrics: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, filters: list[str], metrics: list[str]) -> Filters:
        benchmarks, params = set(), []
        for text in filters:
            key, sep, value = text.partition("=")
            if not sep or not key or not value:
                raise UsageError(f"bad --filter {text!r}: expected key=value (benchmark=NAME or a parameter)")
            if key == "benchmark":
                benchmarks.update(value.split(","))
            else:
                params.append((key, value))
        return cls(frozenset(benchmarks), tuple(params), frozenset(metrics))

    @classmethod
    def for_point(cls, benchmark: str, params: dict[str, Any]) -> Filters:
        """Exactly one benchmark's parameter point."""
        return cls(frozenset({benchmark}), tuple((k, format_value(v)) for k, v in params.items()))

    def keeps(self, params: dict[str, Any]) -> bool:
        for key, wanted in self.params:
            if key not in params or not any(format_value(params[key]) == format_value(coerce(w))
                                            for w in wanted.split(",")):
                return False
        return True


def compare_runs(store: Store, runs: list[RunInfo], *, filters: Filters = Filters(),
                 method: str = "welch-log", q: float = 0.05, confidence: float = 0.95,
                 noise_floor: float | None = None, monitor_metrics: bool | None = False,
                 best_pcts: Sequence[int] = (), exclude_metrics: Iterable[str] = (),
                 all_metrics: bool = False, default_prior: bool = True) -> CompareReport:
    """Every row of base vs each candidate, with verdicts decided across the whole report.

    Metrics recorded by monitors (perf-stat.*, vmstat.* ...) are left out unless named
    in ``filters.metrics``; ``monitor_metrics=True`` compares only them (the counters of
    ``compare --profile``, a report of their own), None compares every metric.
    ``best_pcts`` adds mmtests' BAmean-N rows for those N; ``exclude_metrics`` leaves
    metrics out after selection (the counters already in the main table). Of the
    benchmarks' own metrics only the primary one of each is compared unless
    ``all_metrics`` or ``filters.metrics`` (analysis/selection.py); a note says what was
    left out. ``check_shared`` says when the runs share no point. Without
    ``default_prior`` a row whose host knows nothing of its run-to-run variance keeps the
    older rule (changes below 2% not judged) instead of perflab's default prior.
    """
    if len(runs) < 2:
        raise UsageError("compare needs a baseline and at least one candidate")
    return _compare_sides(store, [[run] for run in runs], runs, filters=filters, method=method, q=q,
                          confidence=confidence, noise_floor=noise_floor, monitor_metrics=monitor_metrics,
                          best_pcts=best_pcts, exclude_metrics=frozenset(exclude_metrics),
                          primary_only=not all_metrics and monitor_metrics is False, default_prior=default_prior)


def check_shared(report: CompareReport) -> None:
    """A UsageError, in one line, when no candidate shares a single point with the baseline."""
    if report.rows and not any(cell.change is not None for row in report.rows for cell in row.cells):
        raise UsageError(f"{' and '.join(report.labels)} share no point: nothing to compare",
                         hint="to compare the points of one run, name it with --base KEY=VALUE")


def compare_points(store: Store, run: RunInfo, key: str, base_value: str, *, filters: Filters = Filters(),
                   method: str = "welch-log", q: float = 0.05, confidence: float = 0.95,
                   noise_floor: float | None = None, best_pcts: Sequence[int] = (),
                   all_metrics: bool = False) -> CompareReport:
    """Points of one run against one of them: the rows with parameter ``key`` at
    ``base_value`` are the baseline, each other value of ``key`` a candidate (seed 000's
    "patched" against "no breakpoints" of one sweep). The points were measured in the same
    run, interleaved round by round, so no run-to-run variance stands between them."""
    tables: dict[str, dict[Key, ValueGroup]] = {}
    found, _ = _groups(store, [run], filters, False, frozenset())
    found, notes = _primary(found, filters, all_metrics)
    for (benchmark, _, metric), group in found.items():
        if key not in group.params:
            continue
        value = format_value(group.params[key])
        rest = normalise_params({k: v for k, v in group.params.items() if k != key})
        tables.setdefault(value, {})[(benchmark, rest, metric)] = replace(group, point=rest)
    wanted = format_value(coerce(base_value))
    if wanted not in tables:
        have = ", ".join(tables) or "none"
        raise UsageError(f"run {run.id} has no point with {key}={base_value} (its {key} values: {have})")
    if len(tables) < 2:
        raise UsageError(f"run {run.id} has only {key}={wanted}: nothing to compare it with")
    order = [wanted, *(v for v in tables if v != wanted)]
    sides = [replace(run, label=f"{key}={value}") for value in order]
    keys = [k for value in order for k in tables[value]]
    infos = metric_infos(store, {k[0] for k in keys}, [], [tables[v] for v in order])
    report = build_report([tables[v] for v in order], sides, infos, method=method, q=q, confidence=confidence,
                          noise_floor=noise_floor, best_pcts=best_pcts, warnings=contention_warnings(store, [run]))
    return replace(report, notes=notes)


def run_benchmarks(run: RunInfo) -> list[str]:
    """The commands of a several-command run (`perflab run 'a' 'b'`, `perflab ab`), in order;
    empty for any other run."""
    request = run.request
    if not request.interleaved or len(request.plans) < 2:
        return []
    return request.benchmarks


def compare_benchmarks(store: Store, run: RunInfo, reference: str | None = None, *,
                       filters: Filters = Filters(), method: str = "welch-log", q: float = 0.05,
                       confidence: float = 0.95, noise_floor: float | None = None,
                       best_pcts: Sequence[int] = (), all_metrics: bool = False) -> CompareReport:
    """The commands of one run against one of them (the first, or ``reference``): rows pair
    up by point and metric under the reference's name. The commands alternated inside every
    round of the same run, so no run-to-run variance stands between them."""
    names = run_benchmarks(run)
    if not names:
        raise UsageError(f"compare needs a baseline and at least one candidate: run {run.id} is not a run "
                         "of several commands", hint="name another run, or compare its points with --base KEY=VALUE")
    reference = reference if reference is not None else names[0]
    if reference not in names:
        raise UsageError(f"run {run.id} has no command {reference!r} (its commands: {', '.join(map(repr, names))})")
    order = [reference, *(n for n in names if n != reference)]
    found, _ = _groups(store, [run], replace(filters, benchmarks=frozenset()), False, frozenset())
    found, notes = _primary(found, filters, all_metrics)
    tables = [{(reference, point, metric): group for (benchmark, point, metric), group in found.items()
               if benchmark == name and filters.keeps(group.params)} for name in order]
    if not any(tables[1:]) or not tables[0]:
        raise UsageError("nothing to compare: no samples match" + (" the filters" if filters != Filters() else ""))
    infos = metric_infos(store, {reference}, [], tables)
    sides = [replace(run, label=name) for name in order]
    report = build_report(tables, sides, infos, method=method, q=q, confidence=confidence,
                          noise_floor=noise_floor, best_pcts=best_pcts, warnings=contention_warnings(store, [run]))
    return replace(report, notes=notes)


def _compare_sides(store: Store, sides: list[list[RunInfo]], runs: list[RunInfo], *, filters: Filters,
                   method: str, q: float, confidence: float, noise_floor: float | None,
                   monitor_metrics: bool | None, best_pcts: Sequence[int],
                   exclude_metrics: frozenset[str], primary_only: bool = False,
                   default_prior: bool = True) -> CompareReport:
    """compare_runs over sides of one or more runs each; ``runs`` name the sides."""
    if method not in METHOD_NAMES:
        raise UsageError(f"unknown method {method!r}; choose from {', '.join(METHOD_NAMES)}")
    warnings: list[str] = []
    fetched = [_groups(store, side, filters, monitor_metrics, exclude_metrics) for side in sides]
    tables, parts = [t for t, _ in fetched], [p for _, p in fetched]
    _pair_single_benchmarks(tables, runs, warnings)
    notes: tuple[str, ...] = ()
    if primary_only:
        merged, notes = _primary({key: g for table in tables for key, g in table.items()}, filters, False)
        tables = [{key: g for key, g in table.items() if key in merged} for table in tables]
    keys = list(dict.fromkeys(key for table in tables for key in table))
    if not keys:
        raise UsageError("nothing to compare: no samples match"
                         + (" the filters" if filters != Filters() else " in these runs"))
    infos = metric_infos(store, {k[0] for k in keys}, warnings, tables)
    ids = [{run.id for run in side} for side in sides]
    separate = [ids[0].isdisjoint(other) for other in ids[1:]]
    for run, other in zip(runs[1:], ids[1:]):
        if other == ids[0]:
            warnings.append(f"{run.label} is the baseline's own run {run.id}: every row compares identical samples")
    variances = _run_variances(store, sides, parts, keys) if any(separate) else {}
    shares = {key: [run_shares([len(values) for values in side.get(key, [])]) for side in parts] for key in keys}
    # single runs a side: the host prior moderates their run-to-run variance (pooled sides measure their own)
    known = (separate_runs_knowledge(store, sides, keys, infos, variances, default_prior)
             if any(separate) and all(len(side) == 1 for side in sides) else None)
    report = build_report(tables, runs, infos, method=method, q=q, confidence=confidence, noise_floor=noise_floor,
                          best_pcts=best_pcts, warnings=warnings, separate=separate, run_variances=variances,
                          run_shares=shares, layouts=_recorded_layouts(runs), run_to_run=known)
    every = list({run.id: run for side in sides for run in side}.values())
    return replace(report, warnings=(*report.warnings, *environment_warnings(runs),
                                     *contention_warnings(store, every)), notes=notes)


def _primary(found: dict[Key, ValueGroup], filters: Filters,
             all_metrics: bool) -> tuple[dict[Key, ValueGroup], tuple[str, ...]]:
    """The groups of each benchmark's primary metric, and a note naming the others;
    every group when metrics were named or all were asked for."""
    if all_metrics or filters.metrics:
        return found, ()
    kept, hidden = keep_primary(found)
    return {key: g for key, g in found.items() if (key[0], key[2]) in kept}, \
        ((hidden_note(hidden),) if hidden else ())


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
    their run-to-run variance enters the test: ``run_variances[key]`` where known; where
    not, changes below stats.difference.UNKNOWN_RUN_FLOOR are not judged. ``run_shares[key]``:
    per side, how many runs it pools (`stats.variance.run_shares`; 1, a single run, if absent).
    ``run_to_run[key]``: the host prior a row of single separate runs borrows
    (`analysis.host_model`), which then takes the place of ``run_variances``."""
    warnings = list(warnings)
    keys = list(dict.fromkeys(key for table in tables for key in table))
    pending: list[tuple[int, int, Difference]] = []
    summaries: dict[tuple[int, Key], Summary] = {}   # each side's once: the test and the table share it
    absent: dict[str, list[str]] = {}   # sides without samples -> the rows they miss

    def summary_of(side: int, key: Key, group: ValueGroup, info: MetricInfo) -> Summary:
        if (side, key) not in summaries:
            summaries[(side, key)] = summarize(group.values, info.mean)
        return summaries[(side, key)]

    for r, key in enumerate(keys):
        base = tables[0].get(key)
        info = infos[(key[0], key[2])]
        for c, table in enumerate(tables[1:]):
            other = table.get(key)
            if base is not None and other is not None:
                apart = bool(separate[c]) if c < len(separate) else False
                variance = (run_variances or {}).get(key) if apart else None
                shares = (run_shares or {}).get(key) or [1.0] * len(tables)
                known = (run_to_run or {}).get(key) if apart else None
                if known is not None:
                    known = replace(known, load=(known.load[0], known.load[c + 1]))
                pending.append((r, c, compare(
                    base.values, other.values, direction=info.direction, mean_kind=info.mean,
                    method=method,  # type: ignore[arg-type]
                    noise_floor=info.noise_floor if noise_floor is None else noise_floor, confidence=confidence,
                    separate_runs=apart, run_variance=variance, run_shares=(shares[0], shares[c + 1]),
                    summaries=(summary_of(0, key, base, info), summary_of(c + 1, key, other, info)),
                    run_to_run=known)))
        missing = [runs[i].label for i, table in enumerate(tables) if key not in table]
        if missing:
            params = next(table[key] for table in tables if key in table).params
            absent.setdefault(", ".join(missing), []).append(f"{key[0]} {point_text(params)} {key[2]}")
    for where, titles in absent.items():   # one line per set of sides, naming a few rows
        named = "; ".join(titles[:3]) + (f" and {len(titles) - 3} more" if len(titles) > 3 else "")
        warnings.append(f"no samples in {where} for {len(titles)} row(s): {named}")

    decided = decide([d for _, _, d in pending], q) if pending else []
    said: dict[str, int] = {}
    for d in decided:
        for w in d.warnings:
            if w.kind == RUN_VARIANCE:
                said[w.message] = said.get(w.message, 0) + 1
    warnings += [f"{message} [{count} row(s)]" for message, count in said.items()]
    by_cell = {(r, c): d for (r, c, _), d in zip(pending, decided)}
    rows = []
    for r, key in enumerate(keys):
        info = infos[(key[0], key[2])]
        groups = [table.get(key) for table in tables]
        sides_ = [None if g is None else
                  _side(g, summary_of(i, key, g, info), info, confidence, best_pcts,
                        WarningSide.BASE if i == 0 else WarningSide.CANDIDATE)
                  for i, g in enumerate(groups)]
        unit = next(g for g in groups if g is not None).unit
        cells = tuple(_cell(runs[c + 1].label, sides_[0], side, by_cell.get((r, c)), info)
                      for c, side in enumerate(sides_[1:]))
        rows.append(Row(benchmark=key[0], params=next(g for g in groups if g is not None).params,
                        metric=key[2], unit=unit,
                        direction=info.direction, mean_kind=info.mean,
                        noise_floor=info.noise_floor if noise_floor is None else noise_floor,
                        base=sides_[0], cells=cells))
    tested = sum(1 for d in decided if d.rule is None)
    floors = tuple(sorted({d.noise_floor for d in decided}))
    layouts = {b: _layout(b) for b in dict.fromkeys(row.benchmark for row in rows)} | dict(layouts or {})
    # each benchmark's metrics in its layout's order (the primary first), then as stored
    metric_order = {key: (layouts[key[0]].metrics.index(key[1]) if key[1] in layouts[key[0]].metrics
                          else len(layouts[key[0]].metrics) + i)
                    for i, key in enumerate(infos) if key[0] in layouts}
    return CompareReport(tuple(runs), _blocks(rows, len(runs), layouts, metric_order), method, METHOD_NAMES[method],
                         q, confidence, tested, floors, tuple(warnings))


def _recorded_layouts(runs: Sequence[RunInfo]) -> dict[str, Layout]:
    """The layouts the baseline's run recorded with its plans (a suite's title and row),
    over the workloads' own."""
    found: dict[str, Layout] = {}
    for plan in runs[0].request.plans:
        layout = plan.layout
        if layout is not None:
            own = _layout(layout.benchmark)
            found[layout.benchmark] = Layout(layout.title or own.title, layout.row or own.row, own.metrics)
    return found


def _layout(benchmark: str) -> Layout:
    """A built-in workload's layout of its rows (none for a command)."""
    from perflab.workloads import registry
    if not registry.is_builtin(benchmark):
        return Layout()
    workload = registry.builtin(benchmark)
    return Layout(workload.report_title, workload.report_row, tuple(m.name for m in workload.metrics))


def _side(group: ValueGroup, s: Summary, info: MetricInfo, confidence: float, best_pcts: Sequence[int],
          side: WarningSide) -> SideSummary:
    """Every statistic any format shows of one side's samples (``s``: their `summarize`)."""
    x = group.values[np.isfinite(group.values)]
    median_interval = median_ci(x, confidence)
    amean = float(x.mean()) if x.size else math.nan
    population_cov = 100.0 * float(x.std()) / amean if x.size and amean > 0 else math.nan
    best = tuple((pct, best_mean(x, pct, info.mean, info.direction) if x.size else math.nan)
                 for pct in best_pcts)
    return SideSummary(
        n=s.n, failures=int(group.failures), values=tuple(x.tolist()), mean_kind=info.mean,
        centre=s.centre, median=s.median,
        median_ci=Interval(median_interval.low, median_interval.high, median_interval.confidence,
                           tuple(w.on(side) for w in median_interval.warnings)),
        stddev=s.stddev, cov=s.cov, population_cov=population_cov, min=s.min, max=s.max, best=best,
        warnings=tuple(w.on(side) for w in s.warnings))


def _oriented_change(base: float, new: float, direction: Direction) -> float:
    """100·(new/base − 1) with positive = better; NaN where a % is undefined."""
    if not (math.isfinite(base) and math.isfinite(new)) or base <= 0:
        return math.nan
    return oriented(100.0 * (new / base - 1.0), direction)


def _cell(label: str, base: SideSummary | None, side: SideSummary | None, d: Difference | None,
          info: MetricInfo) -> Cell:
    if d is None or base is None or side is None:
        return Cell(label, side, None)
    stat_changes = []
    for key in ("min", "median", "stddev", "coeffvar", "max"):
        direction = Direction.LOWER if key in ("stddev", "coeffvar") else info.direction
        stat_changes.append(((key, 0), _oriented_change(base.statistic(key), side.statistic(key), direction)))
    for pct, value in side.best:
        stat_changes.append((("best", pct), _oriented_change(base.statistic("best", pct), value, info.direction)))
    rule = None if d.rule is None else RuleOutcome(d.rule.rule, bool(d.rule.changed), d.rule.detail)
    change = Change(
        pct=d.change_pct, raw_pct=oriented(d.change_pct, info.direction),
        ci=Interval(d.ci_low, d.ci_high, d.confidence), method=d.method_key, test=d.method,
        interval=d.interval, p_value=d.p_value, q_value=d.q_value, min_p=d.min_p, noise_floor=d.noise_floor,
        verdict=d.verdict, rule=rule, stat_changes=tuple(stat_changes),
        run_to_run=RunToRunUsed(d.variance_source, d.d0, d.d, d.runs_needed, d.run_change, d.run_spread)
        if d.variance_source else None)
    # how run-to-run variance entered the test is said once for the report, not per row
    pair = [w for w in d.warnings if w.side is WarningSide.PAIR and w.kind != RUN_VARIANCE]
    if change.run_to_run is not None and d.verdict is Verdict.UNDECIDED:
        pair.append(_runs_to_decide(change.run_to_run))
    return Cell(label, side, change, tuple(pair))


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
            blocks.append(Block(first.benchmark, first.metric, first.unit, first.direction, first.mean_kind,
                                tuple(part), _geomean(part, n_sides) if len(part) > 1 else None,
                                hoisted, row_param, _title(layout.title, dict(hoisted))))
    return tuple(blocks)


def _title(template: str | None, params: dict[str, Any]) -> str | None:
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
    return Geomean(tuple(medians), tuple(changes), tuple(notes))


def _groups(store: Store, runs: list[RunInfo], filters: Filters, monitor_metrics: bool | None,
            exclude: frozenset[str]) -> tuple[dict[Key, ValueGroup], dict[Key, list[np.ndarray]]]:
    """One side's value groups by (benchmark, point, metric), several runs' values pooled,
    and each run's own values (for the run-to-run variance of a pooled side)."""
    pooled: dict[Key, list[ValueGroup]] = {}
    for found in groups_of_runs(store, runs, filters, monitor_metrics, exclude).values():
        for key, g in found.items():
            pooled.setdefault(key, []).append(g)
    table = {key: groups[0] if len(groups) == 1 else
             replace(groups[0], values=np.concatenate([g.values for g in groups]),
                     failures=sum(g.failures for g in groups))
             for key, groups in pooled.items()}
    return table, {key: [g.values for g in groups] for key, groups in pooled.items()}


def groups_of_runs(store: Store, runs: Sequence[RunInfo], filters: Filters, monitor_metrics: bool | None = None,
                   exclude: frozenset[str] = frozenset()) -> dict[int, dict[Key, ValueGroup]]:
    """Each run's value groups that the filters keep, by (benchmark, point, metric), in ``runs``' order."""
    # one query for all the runs (a change's side pools thousands of commits' runs)
    groups_of = store.value_groups_of_runs([r.id for r in runs], set(filters.benchmarks) or None,
                                           set(filters.metrics) or None)
    out: dict[int, dict[Key, ValueGroup]] = {}
    for run in runs:
        out[run.id] = {(g.benchmark, g.point, g.metric): g for g in groups_of.get(run.id, ())
                       if (not filters.params or filters.keeps(g.params)) and (
                           monitor_metrics is None or is_monitor_metric(g.metric) == monitor_metrics
                           or g.metric in filters.metrics) and g.metric not in exclude and (
                           not is_pressure_metric(g.metric) or g.metric in filters.metrics)}
    return out


def run_to_run(store: Store, run_ids: Sequence[int]) -> list[Calibration]:
    """Per (benchmark, point, metric) of replicate runs: the spread inside a run and between runs."""
    per_key: dict[Key, list[np.ndarray]] = {}
    params: dict[str, dict[str, Any]] = {}
    for run_id in run_ids:
        for g in store.value_groups(run_id):
            per_key.setdefault((g.benchmark, g.point, g.metric), []).append(g.values)
            params[g.point] = g.params
    out = []
    for (benchmark, point, metric), groups in per_key.items():
        variance = between_runs(groups)
        logs = [np.log(g[g > 0]) for g in groups if np.sum(g > 0) >= 2]
        within = float(np.sqrt(np.mean([x.var(ddof=1) for x in logs]))) if logs else math.nan
        out.append(Calibration(benchmark, point_text(params[point]), metric, len(groups), 100.0 * within,
                               variance.cov_pct if variance else math.nan, variance.df if variance else 0.0))
    return out


def _run_variances(store: Store, sides: list[list[RunInfo]], parts: list[dict[Key, list[np.ndarray]]],
                   keys: list[Key]) -> dict[Key, RunVariance | None]:
    """Per row, the run-to-run variance of its benchmark, point and metric: between the runs
    of the sides that pool several (history's segments), else between replicate runs in
    the store (`Store.replicate_runs`: the same thing on the same host, kernel and commit,
    e.g. 'perflab calibrate', other than the runs compared), else None."""
    out: dict[Key, RunVariance | None] = {}
    if any(len(side) > 1 for side in sides):
        for key in keys:
            out[key] = pooled([between_runs(side[key], "the runs of each side") for side in parts
                               if len(side.get(key, [])) > 1])
        return out
    replicates = store.replicate_runs({run.host for side in sides for run in side},
                                      exclude={run.id for side in sides for run in side})
    found: dict[Key, list[RunVariance | None]] = {}
    wanted = {k[0] for k in keys}, {k[2] for k in keys}
    for ids in replicates:
        per_key: dict[Key, list[np.ndarray]] = {}
        for run_id in ids:
            for g in store.value_groups(run_id, *wanted):
                per_key.setdefault((g.benchmark, g.point, g.metric), []).append(g.values)
        for key, groups in per_key.items():
            found.setdefault(key, []).append(between_runs(groups))
    for key in keys:
        out[key] = pooled(found.get(key, []))
    return out


def single_benchmark_name(names: list[set[str]]) -> str | None:
    """The baseline's benchmark when every side has exactly one and their names differ
    (``./tool`` vs ``./tool-new``: they pair up under it); else None."""
    if all(len(n) == 1 for n in names) and len(set().union(*names)) > 1:
        return next(iter(names[0]))
    return None


def _pair_single_benchmarks(tables: Tables, runs: list[RunInfo], warnings: list[str]) -> None:
    """Runs of one benchmark each under different names (./tool vs ./tool-new) pair up."""
    base_name = single_benchmark_name([{k[0] for k in table} for table in tables])
    if base_name is not None:
        for i, table in enumerate(tables[1:], start=1):
            other = next(iter(table))[0]
            if other != base_name:
                tables[i] = {(base_name, p, m): g for (_, p, m), g in table.items()}
                warnings.append(f"{runs[i].label}'s benchmark {other!r} compared with "
                                f"{runs[0].label}'s {base_name!r}")


def metric_infos(store: Store, benchmarks: set[str], warnings: list[str],
                  tables: Tables) -> dict[tuple[str, str], MetricInfo]:
    infos: dict[tuple[str, str], MetricInfo] = {}
    for benchmark in benchmarks:
        for name, info in store.metric_infos(benchmark).items():
            infos[(benchmark, name)] = info
    for table in tables:
        for (benchmark, _, metric), group in table.items():
            if (benchmark, metric) not in infos:
                infos[(benchmark, metric)] = MetricInfo(metric, group.unit, Direction.LOWER)
                warnings.append(f"{benchmark} {metric}: no metric metadata; assumed lower is better")
    return infos


def environment_warnings(runs: list[RunInfo]) -> list[str]:
    """Differences between the machines that could explain a change by themselves."""
    out = []
    base = runs[0].environment or {}
    for run in runs[1:]:
        env = run.environment or {}
        for label, path in (("host", ("hostname",)), ("CPU", ("cpu", "model")),
                            ("online CPUs", ("cpu", "online")), ("kernel command line", ("kernel", "cmdline"))):
            a, b = _get(base, path), _get(env, path)
            if a is not None and b is not None and a != b:
                out.append(f"{runs[0].label} and {run.label} ran with different {label}")
    return out


def _get(env: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(env, dict):
            return None
        env = env.get(key)  # type: ignore[assignment]
    return env


def regressions(report: CompareReport, threshold_pct: float = 0.0) -> list[tuple[Row, int, Change]]:
    """(row, candidate index, change) of every significant regression at least ``threshold_pct`` large."""
    return [(row, index, change) for row, index, change in report.changes()
            if change.verdict is Verdict.REGRESSION and -change.pct >= threshold_pct]
