"""``perflab report change ID``: a change point written up as the kernel test robot does (seed 003).

    perflab noticed a -2.9% regression of will-it-scale.per_thread_ops on commit 0ede61d858 ("file: ...")

    commit: 0ede61d8589cc2d93aa78230d74ac58b5b8d0244 ("file: convert to SLAB_TYPESAFE_BY_RCU")
    parent: 93faf426e3cc000c... (the last measured commit before it)

    in testcase: will-it-scale
    on test machine: 104 threads Intel(R) Xeon(R) ... with 192G memory (host lkp-skl)
    with following parameters:

            mode: thread
            test: poll2

    history: ... mean ±sd before and after, % change, p-value, how it was found

    Details are as below:
    <the lkp table: every stat of the two sides' runs that changed, profile symbols too>

    To reproduce:

            cd REPO
            git checkout SHA
            perflab run ... --commit SHA

The header's % is oriented (negative = worse), as the robot's "-2.9% regression" of a
rate, between the centres of the two segments the change point defines (the estimator
that found it); the lkp table's %change is raw (new − base)/base of the samples of the
same two segments. Layout of ``perflab.model.report.history.ChangeReport``; the
comparison inside it goes to ``render_comparison`` untouched.
"""

from __future__ import annotations

from typing import Any

from perflab.model.params import format_value
from perflab.model.report.history import ChangeReport, ReportSide, Segment
from perflab.render.compare import render_comparison
from perflab.render.history import CENTRE_NOTE, p_value, pct, shift
from perflab.render.units import format_number, scale_for

RULE = "-" * 98 + ">"


def _machine(environment: dict[str, Any], host: str) -> str:
    cpu = environment.get("cpu") or {}
    threads = cpu.get("online_count")
    model = cpu.get("model")
    memory = (environment.get("memory") or {}).get("total_bytes")
    parts = []
    if threads:
        parts.append(f"{threads} threads")
    if model:
        parts.append(str(model))
    text = " ".join(parts) or "unknown machine"
    if memory:
        text += f" with {round(memory / 2**30)}G memory"
    kernel = (environment.get("kernel") or {}).get("release")
    return text + f" (host {host}" + (f", kernel {kernel})" if kernel else ")")


def _value(value: float, unit: str, reference: float) -> str:
    factor, name = scale_for(reference, unit)
    return f"{format_number(value / factor)} {name}".rstrip()


def _segment(segment: Segment, unit: str) -> str:
    text = _value(segment.centre, unit, segment.centre) + f" (centre of {segment.points} commit(s))"
    samples = _value(segment.mean, unit, segment.centre)
    if segment.stddev == segment.stddev:  # not NaN
        factor, _ = scale_for(segment.centre, unit)
        samples += f" ±{format_number(segment.stddev / factor, 3)}"
    return text + f"; samples {samples} (n={segment.n})"


def _side(side: ReportSide) -> str:
    span = side.first.short if side.first.key == side.last.key else f"{side.first.short}..{side.last.short}"
    pooled = (f"all {side.points} commit(s) of the segment" if side.whole
              else f"{side.points} of the segment's {side.segment.points} commit(s), nearest the change")
    return f"{span} ({pooled}, {side.runs} run(s))"


def render_change_report(report: ChangeReport, *, show_all: bool = False) -> str:
    c = report.change
    subject = report.subject or c.point.describe or ""
    named = f" ({subject})" if subject else ""
    out = [(f"perflab noticed a {shift(c)} {c.verdict.value} of {c.stat} on commit "
            f"{c.point.short[:10]}{named}"), ""]
    if c.point.commit:
        out.append(f'commit: {c.point.commit}' + (f' ("{subject}")' if subject else ""))
    else:
        out.append(f"run: {c.point.runs[0].id} ({c.point.runs[0].label}; no commit recorded)")
    if c.previous.commit:
        before = report.previous_subject or c.previous.describe or ""
        out.append(f"before: {c.previous.commit}" + (f' ("{before}")' if before else "")
                   + "  (the last measured commit before it)")
    if report.repo:
        out.append(f"repository: {report.repo}")
    elif report.recorded_repo:
        out.append(f"repository: {report.recorded_repo} (gone)")
    out.append(f"change: {c.id}")
    if report.alert is not None:
        out.append(f"alert: {report.alert.id} ({report.alert.state}{', recovered' if report.alert.recovered else ''}"
                   f"; summary {report.alert.summary_id}): 'perflab alert {report.alert.id}' triages it")
    run = report.machine
    out += ["", f"in testcase: {c.benchmark}", f"on test machine: {_machine(run.environment or {}, run.host)}"]
    if c.params:
        out += ["with following parameters:", ""]
        out += [f"\t{k}: {format_value(v)}" for k, v in c.params.items()]
    direction = "lower" if c.direction.value == "lower" else "higher"
    out += ["", f"history of {c.stat} ({c.unit or 'no unit'}, {direction} is better):",
            f"  before: {_segment(c.before, c.unit)}",
            f"  after:  {_segment(c.after, c.unit)}",
            (f"  change: {pct(c.change_pct)} ({pct(c.oriented_pct)} oriented, a {c.verdict.value}) between the "
             f"centres, p = {p_value(c.detection_p)} (Welch t-test of the per-commit medians); samples "
             f"p = {p_value(c.p_value)}") if c.kind == "mean" else
            (f"  change: the noise's {shift(c, 2)} (after/before; the level did not step), p = "
             f"{p_value(c.p_value)} (the search's, corrected for it)"),
            (f"  found by {c.method} on per-commit medians ({CENTRE_NOTE}); "
             f"'perflab history --metric {c.metric}' shows the series")]
    out += ["", "Details are as below:", RULE, "",
            f"before the change: {_side(report.before)}",
            f"from it on:        {_side(report.after)}",
            f"their samples pooled, {'every stat' if show_all else 'every stat that changed'}:", ""]
    table = render_comparison(report.comparison, "lkp", profile=report.profile,
                              rows=("all",) if show_all else ("amean",))
    out += [table.rstrip("\n")]
    if report.warnings:
        out += ["", "warnings:", *(f"  {w.message}" for w in report.warnings)]
    out += ["", "To reproduce:", "", *(f"        {line}" for line in report.reproduce)]
    return "\n".join(line.rstrip() for line in out) + "\n"
