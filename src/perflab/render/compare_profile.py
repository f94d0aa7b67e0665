"""Profile deltas beside a comparison (seeds 000 and 003): top symbols before and after.

``profile`` is optional plain data: a sequence of items with
  name       the stat, e.g. ``perf-profile.self.cycles-pp.__fget_light``
  benchmark  the benchmark it was recorded under
  params     its parameter point (dict)
  base       the baseline's values, % of samples, one per repetition (or None)
  cells      one entry per candidate: its values (or None)
Changes are absolute differences in percentage points, as lkp-tests prints them;
means under 0.05% on every side are left out, as lkp drops them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from perflab.render.compare_common import finite
from perflab.render.texttable import format_table

MIN_PCT = 0.05


def _finite(values: Any) -> np.ndarray:
    if values is None:
        return np.empty(0)
    x = np.asarray(values, dtype=float).reshape(-1)
    return x[np.isfinite(x)]


def mean(values: Any) -> float:
    x = _finite(values)
    return float(x.mean()) if x.size else math.nan


def population_sd(values: Any) -> float:
    x = _finite(values)
    return float(x.std()) if x.size else math.nan


def sides(item: Any) -> list[Any]:
    return [item.base, *item.cells]


def visible(item: Any) -> bool:
    return any(finite(m) and m >= MIN_PCT for m in map(mean, sides(item)))


def render_profile_table(profile: Sequence[Any], labels: Sequence[str]) -> str:
    """A plain table: symbol, the mean % on every side, and each candidate's change in points."""
    headers = ["profile", labels[0]]
    for label in labels[1:]:
        headers += [label, "change"]
    rows = []
    for item in profile:
        if not visible(item):
            continue
        means = [mean(v) for v in sides(item)]
        cells = [item.name, f"{means[0]:.2f}" if finite(means[0]) else "-"]
        for m in means[1:]:
            cells.append(f"{m:.2f}" if finite(m) else "-")
            cells.append(f"{m - means[0]:+.2f}" if finite(m) and finite(means[0]) else "-")
        rows.append(cells)
    if not rows:
        return "profile: no symbol at or above 0.05%"
    table = format_table(headers, rows, align="l" + "r" * (len(headers) - 1))
    return table + "\n(% of samples; change in percentage points)"


def profile_json(profile: Sequence[Any], labels: Sequence[str], number: Any) -> list[dict[str, Any]]:
    out = []
    for item in profile:
        means = [mean(v) for v in sides(item)]
        out.append({
            "name": item.name, "benchmark": item.benchmark, "params": dict(item.params),
            "sides": [{"label": label, "mean_pct": number(m), "stddev_pct": number(population_sd(v)),
                       "n": 0 if v is None else int(np.isfinite(np.asarray(v, dtype=float)).sum()),
                       **({} if i == 0 else {"change_points": number(m - means[0])})}
                      for i, (label, m, v) in enumerate(zip(labels, means, sides(item)))],
        })
    return out
