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

One estimator for the headline and the table: the detector's (per commit the median of its
samples, per side the mean of those: the segments' centres, so one wild run cannot turn a
regression into an improvement, as a pooled mean can). The header's % is in the one sign
convention (+ = better), as the robot's "-2.9% regression" of a rate; the lkp table's
%change of the same stat is the same change raw, (new − base)/base, as lkp prints it, and
the report says so. Each side lists every commit it pools.
Layout of ``perflab.model.report.history.ChangeReport``; the
comparison inside it goes to ``render_comparison`` untouched.
"""

from __future__ import annotations

import textwrap
from typing import Any

from perflab.model.params import format_value
from perflab.model.report.history import ALERTED_METHOD, CHANGE_TABLE_ESTIMATOR, ChangeReport, ReportSide, Segment
from perflab.model.verdicts import SIGN
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
    text = _value(segment.centre, unit, segment.centre) + f" (centre of {_count(segment.points, 'commit')})"
    samples = _value(segment.mean, unit, segment.centre)
    if segment.stddev == segment.stddev:  # not NaN
        factor, _ = scale_for(segment.centre, unit)
        samples += f" ±{format_number(segment.stddev / factor, 3)}"
    return text + f"; samples {samples} (n={segment.n})"


def _side(side: ReportSide) -> list[str]:
    span = side.first.short if side.first.key == side.last.key else f"{side.first.short}..{side.last.short}"
    noun = "commit" if side.first.commit else "point"
    pooled = (f"all {_count(side.points, noun)} of the segment" if side.whole
              else f"{side.points} of the segment's {_count(side.segment.points, noun)}, nearest the change")
    listed = [" ".join(side.commits[i:i + 6]) for i in range(0, len(side.commits), 6)] if side.points > 1 else []
    return [f"{span} ({pooled}, {_count(side.runs, 'run')})", *(f"    {line}" for line in listed)]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _a(text: str) -> str:
    """``text`` with its indefinite article ("an improvement", "a -2.9% regression")."""
    return ("an " if text[:1].lower() in "aeiou8" else "a ") + text


def _headline(report: ChangeReport) -> str:
    c = report.change
    return f"{shift(c)} {c.verdict.value}"


def _first_line(report: ChangeReport) -> str:
    """The headline: the change, on the bisected commit once the robot's bisect named it,
    else on the first measured commit of the new level."""
    c, culprit = report.change, report.culprit
    if culprit is not None:
        said = ", ".join(x for x in (culprit.subject or "", f"by {culprit.author}" if culprit.author else "") if x)
        return f"perflab noticed {_a(_headline(report))} of {c.stat} on commit {culprit.commit[:10]}" + (
            f" ({said})" if said else "")
    subject = report.subject or c.point.describe or ""
    return f"perflab noticed {_a(_headline(report))} of {c.stat} on commit {c.point.short[:10]}" + (
        f" ({subject})" if subject else "")


def _commit_lines(report: ChangeReport) -> list[str]:
    """The commit (the bisected one, with the range it was found in), and the last measured before it."""
    c, culprit = report.change, report.culprit
    subject = report.subject or c.point.describe or ""
    if culprit is not None:
        out = [f"commit: {culprit.commit}" + (f' ("{culprit.subject}")' if culprit.subject else ""),
               *([f"author: {culprit.author}"] if culprit.author else []),
               f"bisected: {culprit.answer}",
               f"first measured at: {c.point.commit}" + (f' ("{subject}")' if subject else "")
               + "  (the first measured commit of the new level)"]
    elif c.point.commit:
        out = [f'commit: {c.point.commit}' + (f' ("{subject}")' if subject else "")]
    else:
        out = [f"run: {c.point.runs[0].id} ({c.point.runs[0].label}; no commit recorded)"]
    return out


def render_change_report(report: ChangeReport, *, show_all: bool = False) -> str:
    c = report.change
    out = [_first_line(report), "", *_commit_lines(report)]
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
            (f"  change: {pct(c.oriented_pct)} ({SIGN}; raw {pct(c.change_pct)}, {_a(c.verdict.value)}) between the "
             f"centres, p = {p_value(c.detection_p)} (Welch t-test of the per-commit medians); samples "
             f"p = {p_value(c.p_value)}") if c.kind == "mean" else
            (f"  change: the noise's {shift(c, 2)} (after/before; the level did not step), p = "
             f"{p_value(c.p_value)} (the search's, corrected for it)"),
            (f"  found by {c.method} on per-commit medians ({CENTRE_NOTE}); " if c.method != ALERTED_METHOD else
             "  a level the robot alerted on at this commit, which no detector places now (a short level "
             "that came back, or more commits moved it): the levels either side of it, each ending at its "
             "neighbouring change; ") +
            f"'perflab history --metric {c.metric}' shows the series"]
    side_before, side_after = _side(report.before), _side(report.after)
    out += ["", "Details are as below:", RULE, "",
            f"before the change: {side_before[0]}", *side_before[1:],
            f"from it on:        {side_after[0]}", *side_after[1:],
            f"{'every stat' if show_all else 'every stat that changed'} of the test case, by the headline's estimator:",
            *textwrap.wrap(CHANGE_TABLE_ESTIMATOR + "; %change is raw, (new - base)/base, as lkp prints it: "
                           "the headline's % of the changed stat"
                           + ("; profile rows: shares of the pooled samples, changes in points"
                              if report.profile is not None else ""), 96, initial_indent="  ", subsequent_indent="  "),
            ""]
    table = render_comparison(report.comparison, "lkp", profile=report.profile,
                              rows=("all",) if show_all else ("amean",))
    out += [table.rstrip("\n")]
    if report.warnings:
        out += ["", "warnings:", *(f"  {w.message}" for w in report.warnings)]
    out += ["", "To reproduce:", "", *(f"        {line}" for line in report.reproduce)]
    return "\n".join(line.rstrip() for line in out) + "\n"
