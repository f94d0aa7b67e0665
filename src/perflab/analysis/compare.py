"""Compare a baseline run with one or more candidates, row by row, under one FDR budget.

A row is one (benchmark, parameter point, metric). Each candidate's cell holds the
statistics of base vs that candidate; `stats.decide` then applies Benjamini-Hochberg
across every cell of the report, so the marks a reader sees are controlled together.
The result is a ``model.report.compare.CompareReport``: every number any format shows
is computed here, once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from perflab.analysis.compare_report import Key, Tables, build_report, recorded_layouts
from perflab.analysis.contention import contention_warnings
from perflab.analysis.host_model import separate_runs_knowledge
from perflab.analysis.next_step import with_next_steps
from perflab.analysis.paired_runs import RerunRounds, paired_samples, rerun_rounds
from perflab.analysis.selection import hidden_note, keep_primary
from perflab.model.errors import UsageError
from perflab.model.json_types import JsonObject
from perflab.model.methods import METHOD_NAMES
from perflab.model.params import Params, coerce, format_value, point_text
from perflab.model.records import (
    Direction,
    MetricInfo,
    RunInfo,
    is_monitor_metric,
    is_pressure_metric,
    normalise_params,
)
from perflab.model.report.calibration import Calibration
from perflab.model.report.compare import Change, CompareReport, Row
from perflab.model.verdicts import Verdict
from perflab.stats.variance import RunVariance, between_runs, paired_runs, pooled, run_shares
from perflab.store import Store
from perflab.store.series import ValueGroup


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
    def for_point(cls, benchmark: str, params: Params) -> Filters:
        """Exactly one benchmark's parameter point."""
        return cls(frozenset({benchmark}), tuple((k, format_value(v)) for k, v in params.items()))

    def keeps(self, params: Params) -> bool:
        for key, wanted in self.params:
            if key not in params or not any(format_value(params[key]) == format_value(coerce(w))
                                            for w in wanted.split(",")):
                return False
        return True


def compare_runs(store: Store, runs: list[RunInfo], *, filters: Filters = Filters(),
                 method: str = "welch-log", q: float = 0.05, confidence: float = 0.95,
                 noise_floor: float | None = None, monitor_metrics: bool | None = False,
                 best_pcts: Sequence[int] = (), exclude_metrics: Iterable[str] = (),
                 all_metrics: bool = False) -> CompareReport:
    """Every row of base vs each candidate, with verdicts decided across the whole report.

    Metrics recorded by monitors (perf-stat.*, vmstat.* ...) are left out unless named
    in ``filters.metrics``; ``monitor_metrics=True`` compares only them (the counters of
    ``compare --profile``, a report of their own), None compares every metric.
    ``best_pcts`` adds mmtests' BAmean-N rows for those N; ``exclude_metrics`` leaves
    metrics out after selection (the counters already in the main table). Of the
    benchmarks' own metrics only the primary one of each is compared unless
    ``all_metrics`` or ``filters.metrics`` (analysis/selection.py); a note says what was
    left out. ``check_shared`` says when the runs share no point.
    """
    if len(runs) < 2:
        raise UsageError("compare needs a baseline and at least one candidate")
    sides = [[run] for run in runs]
    rounds = rerun_rounds(store, runs[0], runs[1]) if len(runs) == 2 else None
    if rounds is not None:   # an alert rerun's rounds: each side all of its rounds, compared as pairs
        first, second = (rounds.good, rounds.bad) if runs[0].id in {r.id for r in rounds.good} else \
            (rounds.bad, rounds.good)
        sides = [list(first), list(second)]
        runs = [replace(run, label=_side_label(rounds, run)) for run in runs]
    return _compare_sides(store, sides, runs, filters=filters, method=method, q=q,
                          confidence=confidence, noise_floor=noise_floor, monitor_metrics=monitor_metrics,
                          best_pcts=best_pcts, exclude_metrics=frozenset(exclude_metrics),
                          primary_only=not all_metrics and monitor_metrics is False, rounds=rounds)


def _side_label(rounds: RerunRounds, run: RunInfo) -> str:
    """alert<ID>-<side>-<stamp>: the side of a rerun, all its rounds."""
    alert, _, stamp = rounds.name.partition("-")
    side = "good" if run.id in {r.id for r in rounds.good} else "bad"
    return f"{alert}-{side}-{stamp}"


def compare_named(store: Store, runs: list[RunInfo], reference: str | None = None, **options: Any) -> CompareReport:
    """What `perflab compare RUN...` compares, for the CLI and the dashboard alike: one run of
    several commands (each against ``reference``, else the first), or runs against the
    first, refused in one line when they share no point. ``options``: compare_runs'."""
    if len(runs) == 1:
        return compare_benchmarks(store, runs[0], reference, **options)
    report = compare_runs(store, runs, **options)
    check_shared(report)
    return report


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
    return replace(named_candidates(report, order[1:]), notes=notes)


def _compare_sides(store: Store, sides: list[list[RunInfo]], runs: list[RunInfo], *, filters: Filters,
                   method: str, q: float, confidence: float, noise_floor: float | None,
                   monitor_metrics: bool | None, best_pcts: Sequence[int],
                   exclude_metrics: frozenset[str], primary_only: bool = False,
                   rounds: RerunRounds | None = None) -> CompareReport:
    """compare_runs over sides of one or more runs each; ``runs`` name the sides; ``rounds``:
    the sides are an alert rerun's, their runs paired round by round."""
    if method not in METHOD_NAMES:
        raise UsageError(f"unknown method {method!r}; choose from {', '.join(METHOD_NAMES)}")
    warnings: list[str] = []
    fetched = [_groups(store, side, filters, monitor_metrics, exclude_metrics) for side in sides]
    tables, by_run = [t for t, _ in fetched], {run_id: found for _, side in fetched for run_id, found in side.items()}
    parts = [_per_run_values(side) for _, side in fetched]
    own_names = _pair_single_benchmarks(tables, runs, warnings)
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
    if separate == [True] and all(len(side) == 1 for side in sides) and _as_pairs(store, sides, tables, warnings):
        separate = [False]
    for run, other in zip(runs[1:], ids[1:]):
        if other == ids[0]:
            warnings.append(f"{run.label} is the baseline's own run {run.id}: every row compares identical samples")
    if rounds is not None:
        variances = _as_rounds(rounds, by_run, tables, parts, keys, warnings)
    else:
        variances = _run_variances(store, sides, parts, keys) if any(separate) else {}
    shares = {key: [run_shares([len(values) for values in side.get(key, [])]) for side in parts] for key in keys}
    # single runs a side: the host prior moderates their run-to-run variance (pooled sides measure their own)
    known = (separate_runs_knowledge(store, sides, keys, infos, variances)
             if any(separate) and all(len(side) == 1 for side in sides) else None)
    report = build_report(tables, runs, infos, method=method, q=q, confidence=confidence, noise_floor=noise_floor,
                          best_pcts=best_pcts, warnings=warnings, separate=separate, run_variances=variances,
                          run_shares=shares, layouts=recorded_layouts(runs), run_to_run=known)
    report = named_candidates(report, own_names)
    if known is not None:
        report = with_next_steps(report, runs)
    every = list({run.id: run for side in sides for run in side}.values())
    return replace(report, warnings=(*report.warnings, *environment_warnings(runs),
                                     *contention_warnings(store, every)), notes=notes)


def _as_pairs(store: Store, sides: list[list[RunInfo]], tables: Tables, warnings: list[str]) -> bool:
    """Two runs one bisect measured in interleaved pairs: their tables kept to the pairs they
    share, to be compared as one run's (analysis.paired_runs); False for any other two runs."""
    paired = paired_samples(store, sides[0][0], sides[1][0])
    if paired is None:
        return False
    for key in set(tables[0]) & set(tables[1]):
        tables[0][key], tables[1][key] = paired.groups(tables[0][key], tables[1][key])
    warnings.append(f"runs {sides[0][0].id} and {sides[1][0].id} were measured in {len(paired.base)} interleaved "
                    f"pairs by one bisect ({paired.label}): compared as those pairs, as the bisect judged them")
    return True


def _as_rounds(rounds: RerunRounds, by_run: dict[int, dict[Key, ValueGroup]], tables: Tables,
               parts: list[dict[Key, list[np.ndarray]]], keys: list[Key],
               warnings: list[str]) -> dict[Key, RunVariance | None]:
    """Per row, the run-to-run variance of an alert rerun's rounds read as the pairs they
    were (stats.variance.paired_runs), as the rerun's own verdict reads them (stats/rerun.py).
    A round is a pair of a row only when both its runs measured it; a row's sides (``tables``,
    ``parts``) are kept to its pairs, so that both sides pool the same rounds."""
    warnings.append(f"{rounds.name}: an alert's rerun of {len(rounds.good)} rounds, each two runs back to back "
                    f"(runs {', '.join(str(r.id) for r in rounds.good)} and "
                    f"{', '.join(str(r.id) for r in rounds.bad)}): each side all of its rounds, compared as those "
                    "pairs, as the rerun judged them")
    out: dict[Key, RunVariance | None] = {}
    for key in keys:
        pairs = [(by_run[g.id][key], by_run[b.id][key]) for g, b in zip(rounds.good, rounds.bad)
                 if key in by_run.get(g.id, {}) and key in by_run.get(b.id, {})]
        for side, groups in enumerate(zip(*pairs)):
            tables[side][key] = pooled_groups(list(groups))
            parts[side][key] = [g.values for g in groups]
        # from the pairs only: a row no round measured on both sides has no paired variance
        out[key] = paired_runs([g.values for g, _ in pairs], [b.values for _, b in pairs],
                               "the rerun's rounds, as pairs")
    return out


def _primary(found: dict[Key, ValueGroup], filters: Filters,
             all_metrics: bool) -> tuple[dict[Key, ValueGroup], tuple[str, ...]]:
    """The groups of each benchmark's primary metric, and a note naming the others;
    every group when metrics were named or all were asked for."""
    if all_metrics or filters.metrics:
        return found, ()
    kept, hidden = keep_primary(found)
    return {key: g for key, g in found.items() if (key[0], key[2]) in kept}, \
        ((hidden_note(hidden),) if hidden else ())


def _groups(store: Store, runs: list[RunInfo], filters: Filters, monitor_metrics: bool | None,
            exclude: frozenset[str]) -> tuple[dict[Key, ValueGroup], dict[int, dict[Key, ValueGroup]]]:
    """One side's value groups by (benchmark, point, metric), several runs' values pooled,
    and each run's own groups by run id (the run-to-run variance of a pooled side)."""
    by_run = groups_of_runs(store, runs, filters, monitor_metrics, exclude)
    pooled: dict[Key, list[ValueGroup]] = {}
    for found in by_run.values():
        for key, g in found.items():
            pooled.setdefault(key, []).append(g)
    return {key: pooled_groups(groups) for key, groups in pooled.items()}, by_run


def pooled_groups(groups: list[ValueGroup]) -> ValueGroup:
    """Several runs' groups of one key as one: their values in order, their failures summed."""
    if len(groups) == 1:
        return groups[0]
    return replace(groups[0], values=np.concatenate([g.values for g in groups]),
                   failures=sum(g.failures for g in groups))


def _per_run_values(by_run: dict[int, dict[Key, ValueGroup]]) -> dict[Key, list[np.ndarray]]:
    """Each key's values run by run, of the runs that measured it (in the side's order)."""
    out: dict[Key, list[np.ndarray]] = {}
    for found in by_run.values():
        for key, g in found.items():
            out.setdefault(key, []).append(g.values)
    return out


def groups_of_runs(store: Store, runs: Sequence[RunInfo], filters: Filters, monitor_metrics: bool | None = None,
                   exclude: frozenset[str] = frozenset()) -> dict[int, dict[Key, ValueGroup]]:
    """Each run's value groups that the filters keep, by (benchmark, point, metric), in ``runs``' order."""
    # one query for all the runs (a change's side pools thousands of commits' runs)
    groups_of = store.series.value_groups_of_runs([r.id for r in runs], set(filters.benchmarks) or None,
                                                  set(filters.metrics) or None)
    keeps = kept_groups(filters, monitor_metrics, exclude)
    return {run.id: {(g.benchmark, g.point, g.metric): g for g in groups_of.get(run.id, ()) if keeps(g)}
            for run in runs}


def kept_groups(filters: Filters, monitor_metrics: bool | None = None,
                exclude: frozenset[str] = frozenset()) -> Callable[[ValueGroup], bool]:
    """Whether a value group is compared (``groups_of_runs``' choice): its point kept by the
    filters, its metric a monitor's as ``monitor_metrics`` asks, not excluded, and no
    pressure or outside-load figure unless named. Decided once per point and metric."""
    kept: dict[tuple[str, str], bool] = {}

    def keeps(g: ValueGroup) -> bool:
        found = kept.get((g.point, g.metric))
        if found is None:
            found = kept[g.point, g.metric] = (not filters.params or filters.keeps(g.params)) and (
                monitor_metrics is None or is_monitor_metric(g.metric) == monitor_metrics
                or g.metric in filters.metrics) and g.metric not in exclude and (
                not is_pressure_metric(g.metric) or g.metric in filters.metrics)
        return found
    return keeps


def run_to_run(store: Store, run_ids: Sequence[int]) -> list[Calibration]:
    """Per (benchmark, point, metric) of replicate runs: the spread inside a run and between runs."""
    per_key: dict[Key, list[np.ndarray]] = {}
    params: dict[str, Params] = {}
    for run_id in run_ids:
        for g in store.series.value_groups(run_id):
            per_key.setdefault((g.benchmark, g.point, g.metric), []).append(g.values)
            params[g.point] = g.params
    out = []
    for (benchmark, point, metric), groups in per_key.items():
        variance = between_runs(groups)
        logs = [np.log(g[g > 0]) for g in groups if np.sum(g > 0) >= 2]
        within = float(np.sqrt(np.mean([x.var(ddof=1) for x in logs]))) if logs else math.nan
        out.append(Calibration(benchmark=benchmark, point=point_text(params[point]), metric=metric, runs=len(groups),
                               within_cov_pct=100.0 * within,
                               between_cov_pct=variance.cov_pct if variance else math.nan,
                               df=variance.df if variance else 0.0))
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
    replicates = store.runs.replicates({run.host for side in sides for run in side},
                                       exclude={run.id for side in sides for run in side})
    found: dict[Key, list[RunVariance | None]] = {}
    wanted = {k[0] for k in keys}, {k[2] for k in keys}
    for ids in replicates:
        per_key: dict[Key, list[np.ndarray]] = {}
        for run_id in ids:
            for g in store.series.value_groups(run_id, *wanted):
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


def _pair_single_benchmarks(tables: Tables, runs: list[RunInfo], warnings: list[str]) -> list[str]:
    """Runs of one benchmark each under different names (./tool vs ./tool-new) pair up;
    the candidates' own names (empty when they do not pair so)."""
    base_name = single_benchmark_name([{k[0] for k in table} for table in tables])
    names = []
    if base_name is not None:
        for i, table in enumerate(tables[1:], start=1):
            other = next(iter(table))[0]
            names.append(other)
            if other != base_name:
                tables[i] = {(base_name, p, m): g for (_, p, m), g in table.items()}
                warnings.append(f"{runs[i].label}'s benchmark {other!r} compared with "
                                f"{runs[0].label}'s {base_name!r}")
    return names


def named_candidates(report: CompareReport, names: Sequence[str]) -> CompareReport:
    """``report`` with each candidate's cells naming its own benchmark (``names``, in
    candidate order) where it differs from the row's: its rows paired under the base's name."""
    if not names:
        return report

    def row_of(row: Row) -> Row:
        cells = tuple(replace(cell, benchmark=name if name != row.benchmark else "")
                      for cell, name in zip(row.cells, names))
        return replace(row, cells=cells)
    return replace(report, blocks=tuple(replace(b, rows=tuple(row_of(r) for r in b.rows)) for b in report.blocks))


def metric_infos(store: Store, benchmarks: set[str], warnings: list[str],
                  tables: Tables) -> dict[tuple[str, str], MetricInfo]:
    infos = store.metrics.infos_of(benchmarks)
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


def _get(env: JsonObject, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(env, dict):
            return None
        env = env.get(key)  # type: ignore[assignment]
    return env


def regressions(report: CompareReport, threshold_pct: float = 0.0) -> list[tuple[Row, int, Change]]:
    """(row, candidate index, change) of every significant regression at least ``threshold_pct`` large."""
    return [(row, index, change) for row, index, change in report.changes()
            if change.verdict is Verdict.REGRESSION and -change.pct >= threshold_pct]
