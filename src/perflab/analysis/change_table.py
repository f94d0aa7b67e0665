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

from perflab.analysis.compare import Filters, environment_warnings, groups_of_runs, metric_infos, pooled_groups
from perflab.analysis.compare_report import Key, build_report
from perflab.analysis.contention import contention_warnings
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
    """``base`` and ``new``: the commits of each side, each the runs measuring it, in order.
    Each side is headed by the span of commits its values are the centre of ("a1b2c3d..e4f5a6b",
    "centre of 17 commits"), not by the one run nearest the change."""
    every = [run for side in (base, new) for commit in side for run in commit]
    found = groups_of_runs(store, every, filters)
    tables = [_centres(side, found) for side in (base, new)]
    warnings: list[str] = []
    known = metric_infos(store, {k[0] for t in tables for k in t}, warnings, tables)
    infos: dict[tuple[str, str], MetricInfo] = {
        k: _CentreInfo(i.name, i.unit, i.direction, i.noise_floor, i.description) for k, i in known.items()}
    runs = [_span(base, base[-1][-1]), _span(new, new[0][0])]
    report = build_report(tables, runs, infos, method="welch-log", q=q, warnings=warnings)
    return replace(report, warnings=(*report.warnings, *environment_warnings(runs),
                                     *contention_warnings(store, list({r.id: r for r in every}.values()))))


def _centres(side: Sequence[Sequence[RunInfo]], found: dict[int, dict[Key, ValueGroup]]) -> dict[Key, ValueGroup]:
    """Per key, one value per commit that has samples of it: the median of its runs' samples."""
    pooled_of: list[tuple[Key, ValueGroup]] = []   # per commit and key: its runs' groups as one
    for commit in side:
        pooled: dict[Key, list[ValueGroup]] = {}
        for run in commit:
            for key, group in found.get(run.id, {}).items():
                pooled.setdefault(key, []).append(group)
        pooled_of += [(key, pooled_groups(groups)) for key, groups in pooled.items()]
    # the commits' medians at once, rows of one size stacked (a long side is thousands of commits)
    medians = iter(group_stats([g.values for _, g in pooled_of if g.values.size]).median.tolist())
    first: dict[Key, ValueGroup] = {}
    centres: dict[Key, list[float]] = {}
    failures: dict[Key, int] = {}
    for key, group in pooled_of:
        if group.values.size or group.failures:
            first.setdefault(key, group)
            centres.setdefault(key, []).extend([next(medians)] if group.values.size else [])
            failures[key] = failures.get(key, 0) + group.failures
    return {key: replace(group, values=np.array(centres[key], dtype=float), failures=failures[key])
            for key, group in first.items()}


def _span(side: Sequence[Sequence[RunInfo]], run: RunInfo) -> RunInfo:
    """``run`` (its machine and environment) named as the span of the side's commits."""
    names = [commit[0].commit[:7] if commit[0].commit else f"run {commit[0].id}" for commit in side]
    label = names[0] if len(names) == 1 else f"{names[0]}..{names[-1]}"
    count = f"centre of {len(names)} commit{'s' if len(names) != 1 else ''}"
    return replace(run, commit=None, label=label, commit_describe=count)
