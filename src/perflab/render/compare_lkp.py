"""The kernel test robot's comparison (lkp-tests, seed 003).

    commit:
      93faf426e3  base
      0ede61d858  patched

    =========================================================================================
    mode/test/testcase:
      thread/poll2/will-it-scale

    93faf426e3cc000c 0ede61d8589cc2d93aa78230d74
    ---------------- ---------------------------
             %stddev     %change         %stddev
                 \\          |                \\
        183535            -2.9%     178269        will-it-scale.per_thread_ops

One block per benchmark and parameter point, named as lkp names a job (the parameter
names, then ``testcase``, joined by ``/``; the values below). A stat is
``benchmark.metric``. Values are the metric's mean (arithmetic for times, as lkp; harmonic
for rates, so that the change is the one every other format shows); ``±N%`` is the
population stddev over the arithmetic mean, shown only above 2%, as lkp; ``%change`` is
100·(new − base)/base of those values, not oriented (a drop of a rate is negative, like a
drop of a time); profile stats show the absolute change in percentage points with no
``%``. Like the robot, only changed stats are listed by default, here those whose difference is significant by the report's test
(or rule); ``rows`` containing ``all`` lists every stat. The footer states the test and
counts the stats left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perflab.model.params import format_value
from perflab.model.records import RunInfo
from perflab.model.report.compare import CompareReport, Row
from perflab.model.report.profile import ProfileRow
from perflab.render.compare_common import finite, significance_rule, warning_lines

RULE = "=" * 89
BASE_WIDTH = 16
CANDIDATE_WIDTH = 27


def lkp_number(value: float) -> str:
    """lkp prints %.2f, and whole numbers from 100000; tiny values keep 4 significant digits."""
    if not finite(value):
        return "-"
    if abs(value) >= 1e5:
        return f"{value:.0f}"
    if value == 0 or abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.4g}"


def _stddev(pct: float) -> str:
    return f" ±{round(pct):3d}%" if finite(pct) and pct > 2 else ""


def stat_line(name: str, sides: Sequence[tuple[float, float] | None], changes: Sequence[str]) -> str:
    """``base ±N%  %change  new ±N% ...  name``: each side's (value, stddev %) or None, and
    each candidate's change already written (``-2.9%``, ``+1.5`` points, or "")."""
    base = sides[0]
    parts = [f"{lkp_number(base[0]) if base is not None else '':>10}{_stddev(base[1]) if base else '':<6}"]
    for side, change in zip(sides[1:], changes):
        unit = "%" if change.endswith("%") else " "
        shown = lkp_number(side[0]) if side is not None else ""
        parts.append(f"{change.removesuffix('%'):>10}{unit}{shown:>11}{_stddev(side[1]) if side else '':<6}")
    return "".join(parts) + f"  {name}"


def row_line(row: Row, name: str) -> str:
    """A metric row: centres, lkp's ±N%, and each candidate's unoriented %change."""
    sides = [None if s is None else (s.centre, s.population_cov) for s in row.sides]
    changes = ["" if c.change is None or not finite(c.change.raw_pct) else f"{c.change.raw_pct:+.1f}%"
               for c in row.cells]
    return stat_line(name, sides, changes)


def profile_line(item: ProfileRow) -> str:
    """A profile row: mean shares, ±N% of each mean, and the change in percentage points."""
    sides = [None if s is None else (s.mean, 100.0 * s.stddev / s.mean if s.mean > 0 else float("nan"))
             for s in item.sides]
    changes = ["" if d is None or not finite(d.change_points) else f"{d.change_points:+.1f}" for d in item.deltas]
    return stat_line(item.name, sides, changes)


def header_lines(runs: Sequence[RunInfo]) -> list[str]:
    names = [((r.commit or r.label)[:BASE_WIDTH if i == 0 else CANDIDATE_WIDTH]) for i, r in enumerate(runs)]
    widths = [BASE_WIDTH] + [CANDIDATE_WIDTH] * (len(runs) - 1)
    return [
        " ".join(n.ljust(w) for n, w in zip(names, widths)),
        " ".join("-" * w for w in widths),
        "         %stddev" + "     %change         %stddev" * (len(runs) - 1),
        "             \\  " + "        |                \\  " * (len(runs) - 1),
    ]


def job_lines(benchmark: str, params: dict[str, Any]) -> list[str]:
    keys = sorted(params)
    return [RULE, "/".join([*keys, "testcase"]) + ":",
            "  " + "/".join([*(format_value(params[k]) for k in keys), benchmark])]


def render_lkp(report: CompareReport, *, show_all: bool = False) -> str:
    from perflab.render.compare_profile import counter_rows, footer, shown_items

    runs, profile = report.runs, report.profile
    out = ["commit:"]
    for run in runs:
        commit = (run.commit or "-")[:10]
        out.append(f"  {commit:<10}  {run.label}" + (f' ("{run.commit_describe}")' if run.commit_describe else ""))

    groups: dict[tuple[str, str], list[Row]] = {}
    for row in report.rows:
        groups.setdefault((row.benchmark, row.point), []).append(row)
    listed: list[Row] = []
    left_out = 0
    items = shown_items(profile, show_all)
    counters = counter_rows(profile, show_all)
    for (benchmark, _), rows in groups.items():
        shown = [r for r in rows if show_all or any(c.change is not None and c.change.significant for c in r.cells)]
        left_out += len(rows) - len(shown)
        here = dict(rows[0].params)
        extra = [p for p in items if p.benchmark == benchmark and dict(p.params) == here]
        moved = [r for r in counters if r.benchmark == benchmark and r.params == here]
        if not shown and not extra and not moved:
            continue
        listed += shown
        out += ["", *job_lines(benchmark, rows[0].params), "", *header_lines(runs)]
        out += [row_line(row, f"{row.benchmark}.{row.metric}") for row in shown]
        out += [row_line(row, row.metric) for row in moved]
        out += [profile_line(item) for item in extra]

    out.append("")
    if not listed:
        names = ", ".join(dict.fromkeys(row.benchmark for row in report.rows))
        out.append(f"no stat changed significantly ({len(report.rows)} compared, of {names}; "
                   "--rows all lists them)")
    elif left_out:
        out.append(f"{left_out} unchanged stat(s) not listed (--rows all lists them)")
    out.append(f"changed = significant: {significance_rule(report)}")
    out.append("%change = 100*(new-base)/base of the metric's mean; ±N% = population stddev/mean, shown above 2%")
    if profile is not None:
        out += footer(profile, show_all)
    warnings = warning_lines(report, rows=listed)
    if warnings:
        out += ["warnings:", *warnings]
    return "\n".join(line.rstrip() for line in out) + "\n"
