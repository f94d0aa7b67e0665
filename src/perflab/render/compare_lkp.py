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
``benchmark.metric``. As lkp: values are arithmetic means; ``±N%`` is the population
stddev over the mean, shown only above 2%; ``%change`` is 100·(new − base)/base, not
oriented (a drop of a rate is negative, like a drop of a time); profile stats show the
absolute change in percentage points with no ``%``. Like the robot, only changed stats
are listed by default, here those whose difference is significant by the report's test
(or rule); ``rows`` containing ``all`` lists every stat. The footer states the test and
counts the stats left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perflab.model.params import format_value
from perflab.render.compare_common import finite, significance_rule, warning_lines
from perflab.render.compare_profile import counter_rows, footer, mean, population_sd, shown_items

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


def _stddev(values: Any) -> str:
    m, sd = mean(values), population_sd(values)
    if not (finite(m) and finite(sd)) or m <= 0:
        return ""
    pct = 100.0 * sd / m
    return f" ±{round(pct):3d}%" if pct > 2 else ""


def stat_line(name: str, sides: Sequence[Any], absolute: bool = False) -> str:
    """``base ±N%  %change  new ±N% ...  name`` for the values of every side."""
    base = mean(sides[0])
    parts = [f"{lkp_number(base) if sides[0] is not None else '':>10}{_stddev(sides[0]):<6}"]
    for values in sides[1:]:
        new = mean(values)
        if absolute and finite(new) and finite(base):
            change, unit = f"{new - base:+.1f}", " "
        elif finite(new) and finite(base) and base != 0:
            change, unit = f"{100.0 * (new - base) / base:+.1f}", "%"
        else:
            change, unit = "", " "
        shown = lkp_number(new) if values is not None else ""
        parts.append(f"{change:>10}{unit}{shown:>11}{_stddev(values):<6}")
    return "".join(parts) + f"  {name}"


def header_lines(runs: Sequence[Any]) -> list[str]:
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


def render_lkp(comparison: Any, *, show_all: bool = False, profile: Any = None) -> str:
    runs = comparison.runs
    out = ["commit:"]
    for run in runs:
        commit = (run.commit or "-")[:10]
        out.append(f"  {commit:<10}  {run.label}" + (f' ("{run.commit_describe}")' if run.commit_describe else ""))

    groups: dict[tuple[str, str], list[Any]] = {}
    for row in comparison.rows:
        groups.setdefault((row.benchmark, row.point), []).append(row)
    listed, left_out = [], 0
    items = shown_items(profile, show_all)
    _, counters = counter_rows(profile, show_all)
    for (benchmark, _), rows in groups.items():
        shown = [r for r in rows if show_all or any(c.difference is not None and c.difference.significant
                                                     for c in r.cells)]
        left_out += len(rows) - len(shown)
        here = dict(rows[0].params)
        extra = [p for p in items if p.benchmark == benchmark and dict(p.params) == here]
        moved = [r for r in counters if r.benchmark == benchmark and r.params == here]
        if not shown and not extra and not moved:
            continue
        listed += shown
        out += ["", *job_lines(benchmark, rows[0].params), "", *header_lines(runs)]
        for row in shown:
            out.append(stat_line(f"{row.benchmark}.{row.metric}", [row.base_values, *(c.values for c in row.cells)]))
        for row in moved:
            out.append(stat_line(row.metric, [row.base_values, *(c.values for c in row.cells)]))
        for item in extra:
            out.append(stat_line(item.name, [item.base, *item.cells], absolute=True))

    out.append("")
    if not listed:
        names = ", ".join(dict.fromkeys(row.benchmark for row in comparison.rows))
        out.append(f"no stat changed significantly ({len(comparison.rows)} compared, of {names}; "
                   "--rows all lists them)")
    elif left_out:
        out.append(f"{left_out} unchanged stat(s) not listed (--rows all lists them)")
    out.append(f"changed = significant: {significance_rule(comparison)}")
    out.append("%change = 100*(new-base)/base; ±N% = population stddev/mean, shown above 2%")
    if profile is not None:
        out += footer(profile, show_all)
    warnings = warning_lines(comparison, rows=listed)
    if warnings:
        out += ["warnings:", *warnings]
    return "\n".join(line.rstrip() for line in out) + "\n"

