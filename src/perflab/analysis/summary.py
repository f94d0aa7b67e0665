"""Per-point summaries of one run: what `perflab show` and the end of `perflab run` print."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perflab.model.params import Params
from perflab.model.records import MeanKind, MetricInfo, SampleStatus
from perflab.stats import Summary, summarize
from perflab.store import SampleRows


@dataclass(frozen=True)
class PointSummary:
    benchmark: str
    params: Params
    metric: str
    unit: str
    mean_kind: MeanKind
    summary: Summary          # over the values of ok samples only
    failures: int             # samples failed, timed out or invalid
    failure_note: str         # the first failure's reason


def summarize_run(rows: SampleRows, infos: dict[tuple[str, str], MetricInfo]) -> list[PointSummary]:
    """One summary per (benchmark, point, metric), in the order the points first appear."""
    if not len(rows):
        return []
    keys = list(zip(rows.benchmark, rows.points, rows.metric))
    params_of = dict(zip(rows.points, rows.params))
    order = list(dict.fromkeys(keys))
    index = {key: i for i, key in enumerate(order)}
    group = np.fromiter((index[k] for k in keys), dtype=np.int64, count=len(keys))
    ok = np.array([s == SampleStatus.OK.value for s in rows.status])
    result = []
    for i, (benchmark, params, metric) in enumerate(order):
        member = group == i
        values = rows.value[member & ok]
        failed = np.flatnonzero(member & ~ok)
        info = infos.get((benchmark, metric))
        kind = info.mean if info else MeanKind.ARITHMETIC
        unit = rows.unit[int(np.flatnonzero(member)[0])]
        result.append(PointSummary(
            benchmark=benchmark, params=params_of[params], metric=metric, unit=unit,
            mean_kind=kind, summary=summarize(values, kind), failures=len(failed),
            failure_note=rows.note[int(failed[0])] if len(failed) else ""))
    return result
