"""Profile and counter deltas beside a comparison (seeds 000 and 003), lkp style.

``profile`` is read duck-typed; it is a sequence of items (``analysis.profile.ProfileItem``)
with
  name       the stat, e.g. ``perf-profile.self.cycles-pp.__fget_light``
  benchmark  the benchmark it was recorded under
  params     its parameter point (dict)
  base       the baseline's values, % of samples, one per repetition (or None)
  cells      one entry per candidate: its values (or None)
and optionally (a real ``ProfileComparison`` has them)
  item.kind, item.event, item.symbol
  item.deltas       one per candidate, None or ``.change_points .ci_low .ci_high
                    .p_value .q_value .verdict`` (up/down/no change/inconclusive)
                    ``.significant``
  profile.rule      one sentence: the test and FDR control of the profile rows
  profile.counters  a comparison (same shape as the main one) of the monitor metrics
                    (perf-stat.*, vmstat.* ...), or None
  profile.warnings  lines
Items come largest change first. Changes are absolute differences in percentage
points, as lkp-tests prints them; means under 0.05% on every side are left out, as lkp
drops them. Like the robot, only changed rows are listed (items without ``deltas`` are
always listed); ``--rows all`` lists every row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from perflab.render.compare_common import finite

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


def changed(item: Any) -> bool:
    """Listed by default: significant for some candidate (items without deltas always are)."""
    deltas = getattr(item, "deltas", None)
    return deltas is None or any(d is not None and d.significant for d in deltas)


def shown_items(profile: Any, show_all: bool) -> list[Any]:
    return [item for item in (profile or ()) if visible(item) and (show_all or changed(item))]


def counter_rows(profile: Any, show_all: bool) -> tuple[Any, list[Any]]:
    """The counters' comparison and its rows to list (significant ones unless ``show_all``)."""
    counters = getattr(profile, "counters", None)
    if counters is None:
        return None, []
    return counters, [row for row in counters.rows if show_all or any(
        c.difference is not None and c.difference.significant for c in row.cells)]


def footer(profile: Any, show_all: bool) -> list[str]:
    """What decided the profile and counter rows, and how many were left out."""
    out = []
    items = [item for item in (profile or ()) if visible(item)]
    if items:
        left = len(items) - len(shown_items(profile, show_all))
        rule = getattr(profile, "rule", None)
        text = "profile: % of samples, change in percentage points"
        if rule:
            text += f"; changed = {rule}"
        out.append(text)
        if left:
            out.append(f"{left} unchanged profile row(s) not listed (--rows all lists them)")
    counters, rows = counter_rows(profile, show_all)
    if counters is not None:
        from perflab.render.compare_common import significance_rule
        out.append(f"counters: changed = {significance_rule(counters)}")
        if len(counters.rows) > len(rows):
            out.append(f"{len(counters.rows) - len(rows)} unchanged counter(s) not listed (--rows all lists them)")
    out += [f"  {w}" for w in getattr(profile, "warnings", ())]
    return out


def render_profile_table(profile: Any, runs: Sequence[Any], show_all: bool = False) -> str:
    """The lkp-style table under another format's metric table: per benchmark and point,
    the changed counters, then the changed profile rows, largest change first."""
    from perflab.render.compare_lkp import header_lines, job_lines, stat_line

    counters, rows = counter_rows(profile, show_all)
    items = shown_items(profile, show_all)
    blocks: dict[tuple[str, str], tuple[Any, list[str]]] = {}

    def block(benchmark: str, params: dict[str, Any]) -> list[str]:
        key = (benchmark, repr(sorted(params.items())))
        return blocks.setdefault(key, (params, []))[1]

    for row in rows:
        block(row.benchmark, row.params).append(
            stat_line(row.metric, [row.base_values, *(c.values for c in row.cells)]))
    for item in items:
        block(item.benchmark, dict(item.params)).append(
            stat_line(item.name, [item.base, *item.cells], absolute=True))
    out = ["profile and counters (lkp style):"]
    if not blocks:
        out.append("no profile row or counter changed significantly")
    else:
        out += ["", *header_lines(runs)]
    for (benchmark, _), (params, lines) in blocks.items():
        out += [*job_lines(benchmark, params)[1:], *lines]
    return "\n".join(line.rstrip() for line in [*out, "", *footer(profile, show_all)])


def _delta_json(d: Any, number: Any) -> dict[str, Any] | None:
    if d is None:
        return None
    rule = getattr(d, "rule", None)
    return {"change_points": number(d.change_points), "ci_low": number(d.ci_low), "ci_high": number(d.ci_high),
            "p_value": number(d.p_value), "q_value": number(d.q_value), "verdict": d.verdict,
            "significant": bool(d.significant),
            "rule": None if rule is None else {"name": rule.rule, "changed": bool(rule.changed),
                                                "detail": rule.detail}}


def profile_json(profile: Sequence[Any], labels: Sequence[str], number: Any) -> list[dict[str, Any]]:
    out = []
    for item in profile:
        means = [mean(v) for v in sides(item)]
        deltas = getattr(item, "deltas", None)
        entry: dict[str, Any] = {"name": item.name, "benchmark": item.benchmark, "params": dict(item.params)}
        for attr in ("event", "kind", "symbol"):
            if hasattr(item, attr):
                entry[attr] = getattr(item, attr)
        entry["sides"] = [
            {"label": label, "mean_pct": number(m), "stddev_pct": number(population_sd(v)),
             "n": 0 if v is None else int(np.isfinite(np.asarray(v, dtype=float)).sum()),
             **({} if i == 0 else {"change_points": number(m - means[0])}),
             **({} if i == 0 or deltas is None else {"comparison": _delta_json(deltas[i - 1], number)})}
            for i, (label, m, v) in enumerate(zip(labels, means, sides(item)))]
        out.append(entry)
    return out


def profile_method_json(profile: Any, number: Any) -> dict[str, Any] | None:
    """How the profile rows were decided (None for plain item lists)."""
    if not hasattr(profile, "method"):
        return None
    return {"key": profile.method, "name": profile.method_name, "fdr": number(profile.q),
            "fdr_comparisons": profile.tested, "noise_floor_points": number(profile.noise_floor),
            "unit": "percentage points", "warnings": list(getattr(profile, "warnings", ()))}
