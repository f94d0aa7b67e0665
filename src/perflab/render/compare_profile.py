"""Profile and counter deltas beside a comparison (seeds 000 and 003), lkp style.

Lays out a ``model.report.compare.ProfileReport``: its rows come largest change first;
changes are absolute differences in percentage points, as lkp-tests prints them; rows
under 0.05% on every side are not ``visible`` (lkp drops them). Like the robot, only
changed rows are listed; ``--rows all`` lists every row. The counters (a comparison of
the monitor metrics) are listed the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from perflab.model.records import RunInfo
from perflab.model.report.compare import ProfileReport, Row
from perflab.model.report.profile import ProfileDelta, ProfileRow
from perflab.render.compare_common import significance_rule
from perflab.render.lkp_lines import header_lines, job_lines, profile_line, row_line


def shown_items(profile: ProfileReport | None, show_all: bool) -> list[ProfileRow]:
    if profile is None:
        return []
    return [item for item in profile.rows if item.visible and (show_all or item.changed)]


def counter_rows(profile: ProfileReport | None, show_all: bool) -> list[Row]:
    """The counter rows to list (significant ones unless ``show_all``)."""
    if profile is None or profile.counters is None:
        return []
    return [row for row in profile.counters.rows if show_all or any(
        c.change is not None and c.change.significant for c in row.cells)]


def footer(profile: ProfileReport, show_all: bool) -> list[str]:
    """What decided the profile and counter rows, and how many were left out."""
    out = []
    items = [item for item in profile.rows if item.visible]
    if items:
        left = len(items) - len(shown_items(profile, show_all))
        out.append(f"profile: % of samples, change in percentage points; changed = {profile.rule}")
        if left:
            out.append(f"{left} unchanged profile row(s) not listed (--rows all lists them)")
    counters = profile.counters
    if counters is not None:
        rows = counter_rows(profile, show_all)
        out.append(f"counters: changed = {significance_rule(counters)}")
        if len(counters.rows) > len(rows):
            out.append(f"{len(counters.rows) - len(rows)} unchanged counter(s) not listed (--rows all lists them)")
    out += [f"  {w}" for w in profile.warnings]
    return out


def render_profile_table(profile: ProfileReport, runs: Sequence[RunInfo], show_all: bool = False) -> str:
    """The lkp-style table under another format's metric table: per benchmark and point,
    the changed counters, then the changed profile rows, largest change first."""
    blocks: dict[tuple[str, str], tuple[dict[str, Any], list[str]]] = {}

    def block(benchmark: str, params: dict[str, Any]) -> list[str]:
        key = (benchmark, repr(sorted(params.items())))
        return blocks.setdefault(key, (params, []))[1]

    for row in counter_rows(profile, show_all):
        block(row.benchmark, row.params).append(row_line(row, row.metric))
    for item in shown_items(profile, show_all):
        block(item.benchmark, dict(item.params)).append(profile_line(item))
    out = ["profile and counters (lkp style):"]
    if not blocks:
        out.append("no profile row or counter changed significantly")
    else:
        out += ["", *header_lines(runs)]
    for (benchmark, _), (params, lines) in blocks.items():
        out += [*job_lines(benchmark, params)[1:], *lines]
    return "\n".join(line.rstrip() for line in [*out, "", *footer(profile, show_all)])


Number = Callable[[Any], Any]


def _delta_json(d: ProfileDelta | None, number: Number) -> dict[str, Any] | None:
    if d is None:
        return None
    rule = d.rule
    return {"change_points": number(d.change_points), "ci_low": number(d.ci.low), "ci_high": number(d.ci.high),
            "p_value": number(d.p_value), "q_value": number(d.q_value), "verdict": d.verdict.value,
            "significant": d.significant,
            "rule": None if rule is None else {"name": rule.name, "changed": rule.changed, "detail": rule.detail}}


def profile_json(profile: ProfileReport, labels: Sequence[str], number: Number) -> list[dict[str, Any]]:
    out = []
    for item in profile.rows:
        base = item.sides[0]
        entry: dict[str, Any] = {"name": item.name, "benchmark": item.benchmark, "params": dict(item.params),
                                 "event": item.event, "kind": item.kind, "symbol": item.symbol}
        entry["sides"] = [
            {"label": label, "mean_pct": number(s.mean if s else None), "stddev_pct": number(s.stddev if s else None),
             "n": 0 if s is None else len(s.values),
             **({} if i == 0 else {"change_points": number(s.mean - base.mean if s and base else None)}),
             **({} if i == 0 else {"comparison": _delta_json(item.deltas[i - 1], number)})}
            for i, (label, s) in enumerate(zip(labels, item.sides))]
        out.append(entry)
    return out


def profile_method_json(profile: ProfileReport, number: Number) -> dict[str, Any]:
    """How the profile rows were decided."""
    return {"key": profile.method, "name": profile.method_name, "fdr": number(profile.q),
            "fdr_comparisons": profile.tested, "noise_floor_points": number(profile.noise_floor),
            "unit": "percentage points", "warnings": list(profile.warnings)}
