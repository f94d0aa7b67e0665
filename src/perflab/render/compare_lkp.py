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
``%``. Like the robot, only changed stats are listed by default, here those whose
difference is significant by the report's test (or rule); ``rows`` containing ``all``
lists every stat. The footer states the test and counts the stats left out.
"""

from __future__ import annotations

from perflab.model.report.compare import CompareReport, Row
from perflab.render.compare_common import note_lines, significance_rule, warning_lines
from perflab.render.compare_profile import counter_rows, footer, shown_items
from perflab.render.lkp_lines import header_lines, job_lines, profile_line, row_line


def render_lkp(report: CompareReport, *, show_all: bool = False, verbose: bool = False) -> str:
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
    out += note_lines(report)
    warnings = warning_lines(report, rows=listed, verbose=verbose)
    if warnings:
        out += ["warnings:", *warnings]
    return "\n".join(line.rstrip() for line in out) + "\n"
