"""Compare a baseline run with one or more candidates, row by row, under one FDR budget.

A row is one (benchmark, parameter point, metric). Each candidate's cell holds the
statistics of base vs that candidate; `stats.decide` then applies Benjamini-Hochberg
across every cell of the report, so the marks a reader sees are controlled together.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from perflab.model.errors import UsageError
from perflab.model.params import coerce, format_value, point_text
from perflab.model.records import Direction, MetricInfo, RunInfo, is_monitor_metric
from perflab.stats import METHOD_NAMES, Difference, Summary, compare, decide, summarize
from perflab.store import Store
from perflab.store.repository import ValueGroup


@dataclass(frozen=True)
class Cell:
    """One candidate at one row: its values and, where both sides have data, the difference."""

    values: np.ndarray | None
    failures: int
    difference: Difference | None


@dataclass(frozen=True)
class Row:
    benchmark: str
    params: dict[str, Any]
    metric: str
    unit: str
    info: MetricInfo
    base_values: np.ndarray | None
    base_failures: int
    base: Summary | None
    cells: list[Cell]

    @property
    def point(self) -> str:
        return point_text(self.params)


@dataclass
class Comparison:
    runs: list[RunInfo]                  # baseline first
    rows: list[Row]
    method: str                          # key: welch-log, mann-whitney, mmtests, lkp
    method_name: str
    q: float                             # FDR level
    confidence: float
    warnings: list[str] = field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        return [r.label for r in self.runs]


@dataclass(frozen=True)
class Filters:
    """``--filter key=value`` (benchmark=NAME or any parameter) and ``--metric``."""

    benchmarks: frozenset[str] = frozenset()
    params: tuple[tuple[str, str], ...] = ()
    metrics: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, filters: list[str], metrics: list[str]) -> "Filters":
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
    def for_point(cls, benchmark: str, params: dict[str, Any]) -> "Filters":
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
                 noise_floor: float | None = None, monitor_metrics: bool | None = False) -> Comparison:
    """Every row of base vs each candidate, with verdicts decided across the whole report.

    Metrics recorded by monitors (perf-stat.*, vmstat.* ...) are left out unless named
    in ``filters.metrics``; ``monitor_metrics=True`` compares only them (the counters of
    ``compare --profile``, a report of their own), None compares every metric.
    """
    if len(runs) < 2:
        raise UsageError("compare needs a baseline and at least one candidate")
    return _compare_sides(store, [[run] for run in runs], runs, filters=filters, method=method, q=q,
                          confidence=confidence, noise_floor=noise_floor, monitor_metrics=monitor_metrics)


def compare_pooled(store: Store, base_runs: list[RunInfo], new_runs: list[RunInfo], *,
                   q: float = 0.05) -> Comparison:
    """Every metric, monitors' too, of two sides of several runs each (the commits before a
    change and from it on), their samples pooled; labelled by the last base and first new run."""
    return _compare_sides(store, [base_runs, new_runs], [base_runs[-1], new_runs[0]], filters=Filters(),
                          method="welch-log", q=q, confidence=0.95, noise_floor=None, monitor_metrics=None)


def _compare_sides(store: Store, sides: list[list[RunInfo]], runs: list[RunInfo], *, filters: Filters,
                   method: str, q: float, confidence: float, noise_floor: float | None,
                   monitor_metrics: bool | None) -> Comparison:
    """compare_runs over sides of one or more runs each; ``runs`` name the sides."""
    if method not in METHOD_NAMES:
        raise UsageError(f"unknown method {method!r}; choose from {', '.join(METHOD_NAMES)}")
    warnings: list[str] = []
    tables = [_groups(store, side, filters, monitor_metrics) for side in sides]
    _pair_single_benchmarks(tables, runs, warnings)
    keys = list(dict.fromkeys(key for table in tables for key in table))
    if not keys:
        raise UsageError("nothing to compare: no samples match"
                         + (" the filters" if filters != Filters() else " in these runs"))
    infos = _metric_infos(store, {k[0] for k in keys}, warnings, tables)

    pending: list[tuple[int, int, Difference]] = []
    layout: list[tuple[tuple[str, str, str], ValueGroup | None, list[ValueGroup | None]]] = []
    for r, key in enumerate(keys):
        base = tables[0].get(key)
        others = [table.get(key) for table in tables[1:]]
        info = infos[(key[0], key[2])]
        for c, other in enumerate(others):
            if base is not None and other is not None:
                difference = compare(base.values, other.values, direction=info.direction,
                                     mean_kind=info.mean, method=method,  # type: ignore[arg-type]
                                     noise_floor=info.noise_floor if noise_floor is None else noise_floor,
                                     confidence=confidence)
                pending.append((r, c, difference))
        missing = [runs[i].label for i, g in enumerate([base, *others]) if g is None]
        if missing:
            warnings.append(f"{key[0]} {point_text(json.loads(key[1]))} {key[2]}: no samples in {', '.join(missing)}")
        layout.append((key, base, others))

    decided = decide([d for _, _, d in pending], q) if pending else []
    by_cell = {(r, c): d for (r, c, _), d in zip(pending, decided)}
    rows = []
    for r, (key, base, others) in enumerate(layout):
        info = infos[(key[0], key[2])]
        cells = [Cell(o.values if o is not None else None, o.failures if o is not None else 0,
                      by_cell.get((r, c))) for c, o in enumerate(others)]
        unit = (base or next(o for o in others if o is not None)).unit
        computed = next((c.difference.base for c in cells if c.difference is not None), None)
        rows.append(Row(
            benchmark=key[0], params=json.loads(key[1]), metric=key[2], unit=unit, info=info,
            base_values=base.values if base is not None else None,
            base_failures=base.failures if base is not None else 0,
            base=computed or (summarize(base.values, info.mean) if base is not None else None),
            cells=cells))
    warnings.extend(_environment_warnings(runs))
    return Comparison(runs, rows, method, METHOD_NAMES[method], q, confidence, warnings)


def _groups(store: Store, runs: list[RunInfo], filters: Filters,
            monitor_metrics: bool | None) -> dict[tuple[str, str, str], ValueGroup]:
    """One side's value groups by (benchmark, point, metric), several runs' values pooled."""
    pooled: dict[tuple[str, str, str], list[ValueGroup]] = {}
    for run in runs:
        for g in store.value_groups(run.id, set(filters.benchmarks) or None, set(filters.metrics) or None):
            if (not filters.params or filters.keeps(json.loads(g.params))) and (
                    monitor_metrics is None or is_monitor_metric(g.metric) == monitor_metrics
                    or g.metric in filters.metrics):
                pooled.setdefault((g.benchmark, g.params, g.metric), []).append(g)
    return {key: groups[0] if len(groups) == 1 else
            replace(groups[0], values=np.concatenate([g.values for g in groups]),
                    failures=sum(g.failures for g in groups))
            for key, groups in pooled.items()}


def single_benchmark_name(names: list[set[str]]) -> str | None:
    """The baseline's benchmark when every side has exactly one and their names differ
    (``./tool`` vs ``./tool-new``: they pair up under it); else None."""
    if all(len(n) == 1 for n in names) and len(set().union(*names)) > 1:
        return next(iter(names[0]))
    return None


def _pair_single_benchmarks(tables: list[dict], runs: list[RunInfo], warnings: list[str]) -> None:
    """Runs of one benchmark each under different names (./tool vs ./tool-new) pair up."""
    base_name = single_benchmark_name([{k[0] for k in table} for table in tables])
    if base_name is not None:
        for i, table in enumerate(tables[1:], start=1):
            other = next(iter(table))[0]
            if other != base_name:
                tables[i] = {(base_name, p, m): g for (_, p, m), g in table.items()}
                warnings.append(f"{runs[i].label}'s benchmark {other!r} compared with "
                                f"{runs[0].label}'s {base_name!r}")


def _metric_infos(store: Store, benchmarks: set[str], warnings: list[str],
                  tables: list[dict]) -> dict[tuple[str, str], MetricInfo]:
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


def _environment_warnings(runs: list[RunInfo]) -> list[str]:
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


def regressions(comparison: Comparison, threshold_pct: float = 0.0) -> list[tuple[Row, int]]:
    """(row, candidate index) of every significant regression at least ``threshold_pct`` large."""
    found = []
    for row in comparison.rows:
        for index, cell in enumerate(row.cells):
            d = cell.difference
            if d is not None and d.significant and d.verdict == "worse" and -d.change_pct >= threshold_pct:
                found.append((row, index))
    return found
