"""The table of `report change`: every stat of a change's test case, each side one value per
commit, by the estimator the change-point detector ran on.

A commit's value of a stat is the median of its ok samples (all of its runs pooled); a side's
value is the arithmetic mean of its commits' values, which is the segment's ``centre`` that
`history`, `changes` and the report's headline print, so the table's %change of the changed
stat is the headline's, raw. Each row is tested by Welch's t-test on the log of those
per-commit values (the commit is the unit, as in the detector's test of the per-commit
medians; run-to-run noise is inside the spread between commits), Benjamini-Hochberg across
the table. A side of one commit has no spread: its rows are listed, not decided.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from perflab.analysis.compare import Filters, environment_warnings, kept_groups, metric_infos, pooled_groups
from perflab.analysis.compare_report import Key, build_report
from perflab.analysis.contention import READ, contention_warnings
from perflab.model.records import MeanKind, MetricInfo, RunInfo
from perflab.model.report.compare import CompareReport
from perflab.stats.summary import group_stats
from perflab.store import Store
from perflab.store.series import ValueGroup


@dataclass(frozen=True)
class _CentreInfo(MetricInfo):
    """A metric whose side value is the arithmetic mean (a centre), rates too."""

    @property
    def mean(self) -> MeanKind:
        return MeanKind.ARITHMETIC


def compare_commit_centres(store: Store, base: Sequence[Sequence[RunInfo]], new: Sequence[Sequence[RunInfo]], *,
                           q: float = 0.05, filters: Filters = Filters()) -> CompareReport:
    """``base`` and ``new``: the commits of each side, each the runs measuring it, in order
    (a change's two segments: no run on both sides).
    Each side is headed by the span of commits its values are the centre of ("a1b2c3d..e4f5a6b",
    "centre of 17 commits"), not by the one run nearest the change. The outside-load warning
    is of the samples the table reads (its test case's, in the same query)."""
    every = [run for side in (base, new) for commit in side for run in commit]
    tables, outside = _commit_values(store, (base, new), filters)
    warnings: list[str] = []
    known = metric_infos(store, {k[0] for t in tables for k in t}, warnings, tables)
    infos: dict[tuple[str, str], MetricInfo] = {
        k: _CentreInfo(i.name, i.unit, i.direction, i.noise_floor, i.description) for k, i in known.items()}
    runs = [_span(base, base[-1][-1]), _span(new, new[0][0])]
    report = build_report(tables, runs, infos, method="welch-log", q=q, warnings=warnings)
    return replace(report, warnings=(*report.warnings, *environment_warnings(runs),
                                     *contention_warnings(store, list({r.id: r for r in every}.values()), outside)))


def _commit_values(store: Store, sides: Sequence[Sequence[Sequence[RunInfo]]], filters: Filters
                   ) -> tuple[list[dict[Key, ValueGroup]], dict[int, list[ValueGroup]]]:
    """Per side, per key the filters keep: one value per commit that has samples of it, the
    median of its runs' samples pooled, with the key's failures summed (keys in the order
    the commits, their runs and each run's groups first show them); and each run's groups
    of the outside-load metrics of the same points. One stream of value groups, read once."""
    at = {run.id: (s, c, r) for s, side in enumerate(sides) for c, commit in enumerate(side)
          for r, run in enumerate(commit)}
    keeps, outside_keeps = kept_groups(filters), kept_groups(replace(filters, metrics=frozenset(READ)))
    metrics = set(filters.metrics) | READ if filters.metrics else None
    # side -> key -> commit -> its runs' groups, each with (run's place, read order)
    found: list[dict[Key, dict[int, list[tuple[int, int, ValueGroup]]]]] = [{} for _ in sides]
    outside: dict[int, list[ValueGroup]] = {}
    for seq, (run_id, g) in enumerate(store.series.each_value_group(list(at), set(filters.benchmarks) or None,
                                                                     metrics)):
        if g.metric in READ and outside_keeps(g):
            outside.setdefault(run_id, []).append(g)
        if keeps(g):
            s, c, r = at[run_id]
            found[s].setdefault((g.benchmark, g.point, g.metric), {}).setdefault(c, []).append((r, seq, g))
    return [_centres(side) for side in found], outside


def _centres(found: dict[Key, dict[int, list[tuple[int, int, ValueGroup]]]]) -> dict[Key, ValueGroup]:
    """Per key, one value per commit that has samples of it: the median of its runs' samples."""
    values: list[np.ndarray] = []   # every key's commits' pooled values, key after key
    keys = []   # (where it first shows, key, its first pooled group, its span of values, failures)
    for key, commits in found.items():
        first: tuple[tuple[int, int, int], ValueGroup] | None = None
        start, failures = len(values), 0
        for c in sorted(commits):
            groups = commits[c]
            if len(groups) > 1:
                groups.sort(key=lambda x: x[:2])
            group = groups[0][2] if len(groups) == 1 else pooled_groups([g for _, _, g in groups])
            if group.values.size:
                values.append(group.values)
            if first is None and (group.values.size or group.failures):
                first = ((c, *groups[0][:2]), group)
            failures += group.failures
        if first is not None:
            keys.append((first[0], key, first[1], start, len(values), failures))
    # the commits' medians at once, rows of one size stacked (a long side is thousands of commits)
    medians = group_stats(values).median
    return {key: replace(group, values=medians[start:end].copy(), failures=failures)
            for _, key, group, start, end, failures in sorted(keys, key=lambda k: k[0])}


def _span(side: Sequence[Sequence[RunInfo]], run: RunInfo) -> RunInfo:
    """``run`` (its machine and environment) named as the span of the side's commits."""
    names = [commit[0].commit[:7] if commit[0].commit else f"run {commit[0].id}" for commit in side]
    label = names[0] if len(names) == 1 else f"{names[0]}..{names[-1]}"
    count = f"centre of {len(names)} commit{'s' if len(names) != 1 else ''}"
    return replace(run, commit=None, label=label, commit_describe=count)
