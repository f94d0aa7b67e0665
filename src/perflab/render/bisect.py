"""The result of a bisect as plain text: the verdict, the evidence table, the cost.

Layout of ``perflab.model.report.bisect.BisectResult``; every number is computed in
analysis.bisect.
"""

from __future__ import annotations

import math

from perflab.model.report.bisect import GOOD_END, PROBE, BisectResult, BisectStep, carriers_text, spread
from perflab.render.compare_common import finite
from perflab.render.texttable import format_table
from perflab.render.units import format_number, scale_for


def _call(step: BisectStep) -> tuple[str, str]:
    if step.skipped:
        return "skip", ""
    if step.role != PROBE:
        return step.role.split()[0], "(end)"
    if step.call is None:
        return "-", ""
    confidence = f"{100 * step.confidence:.2f}%" if finite(step.confidence) else "fixed"
    return step.call + ("?" if step.low_confidence else ""), confidence


def _neither(step: BisectStep) -> str:
    if not step.neither:
        return ""
    return f"{step.neither} ({step.vs_old_pct:+.1f}% vs old, {step.vs_new_pct:+.1f}% vs new)"


def render_bisect(result: BisectResult) -> str:
    lines = [result.message, ""]
    factor, unit = scale_for(result.typical, result.unit)
    rows = []
    for number, step in enumerate(result.steps):
        call, confidence = _call(step)
        if step.n > 1:
            mean = f"{format_number(step.mean / factor)} ±{format_number(step.stddev / factor, 2)}"
        else:
            mean = format_number(step.mean / factor) if step.n else "-"
        change = f"{step.vs_good_pct:+.2f}%" if finite(step.vs_good_pct) else ""
        rows.append([str(number), step.commit.short, str(step.commit.index), _cut(step.commit.subject),
                     str(step.n), mean, change, call, confidence, _neither(step)])
    headers = ["step", "commit", "#", "subject", "n", f"mean ±sd ({unit})" if unit else "mean ±sd",
               "vs good (+ = better)", "call", "confidence", "like neither end"]
    if not any(row[-1] for row in rows):
        headers, rows = headers[:-1], [row[:-1] for row in rows]
    lines.append(format_table(headers, rows, "rlrlrrrlll"[: len(headers)]))
    lines += _gradual(result)
    lines.append("")
    searched = "the first-parent line, descending into merges" if result.first_parent else "the whole commit graph"
    lines.append(f"{result.commits} commits in good..bad (searched: {searched}); {result.runs} benchmark runs, "
                 f"{result.builds} builds.")
    lines += _method(result)
    lines += _stored(result)
    if result.warnings:
        lines += ["warnings:", *(f"  {w.message}" for w in result.warnings)]
    if result.skipped:
        lines.append("skipped:")
        lines += [f"  {s.commit.short} {_cut(s.commit.subject)}: {s.skipped}" for s in result.skipped]
    return "\n".join(lines) + "\n"


def _stored(result: BisectResult) -> list[str]:
    """Where the runs went, and a comparison to read them with."""
    if not result.stored:
        return []
    ids = dict(result.stored)
    text = f"Runs stored: {len(ids)} runs labelled {result.label}, one per measured commit"
    good = next((s.commit.sha for s in result.steps if s.role == GOOD_END), None)
    found = result.first_bad.sha if result.first_bad else None
    if good in ids and found in ids and good != found:
        text += f" ('perflab compare {ids[good]} {ids[found]}': good against the found commit)"
    return [text + f"; 'perflab history --label {result.label}' lists them."]


def _gradual(result: BisectResult) -> list[str]:
    if not result.gradual:
        return []
    rows = [[s.commit.short, _cut(s.commit.subject), f"{100 * s.share:.0f}%",
             f"{100 * s.se:.0f}%" if math.isfinite(s.se) else "", f"{s.change_pct:+.2f}%"]
            for s in result.gradual]
    told = (f"The change is gradual: spread over {len(rows)} commits" if spread(result.gradual) else
            f"The change is in one commit, to within a fifth: {len(rows)} commits measured")
    return ["", f"{told}, each with its share of the step ({carriers_text(result.gradual)}):",
            format_table(["commit", "subject", "share", "its standard error", "change (+ = better)"], rows, "llrrr")]


def _method(result: BisectResult) -> list[str]:
    test = result.test
    if not result.paired:
        return [(f"Classic bisect: {result.runs_per_commit} runs per commit, "
                 "called by the end whose mean log is closer.")]
    return [(f"Test: paired sequential probability ratio on log values: every run of a probed commit beside "
             f"a run of good or bad (alternating; order in a pair seeded {result.seed}). "
             f"{100 * result.confidence:g}% confidence for the result: each step's error "
             f"alpha = beta = {test.alpha:.3g}; {test.min_n}..{test.max_n} runs per commit; "
             f"'vs good' is the paired estimate; '?' = undecided at {test.max_n}, called by the closer end. "
             f"Three-way: {result.neither_test}. Changes: % with + = better; the words say which way.")]


def _cut(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
