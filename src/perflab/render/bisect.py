"""The result of a bisect as plain text: the verdict, the evidence table, the cost."""

from __future__ import annotations

import math

import numpy as np

from perflab.render.texttable import format_table
from perflab.render.units import format_number, scale_for


def render_bisect(result) -> str:
    """`result` is an analysis.bisect.BisectResult."""
    lines = [result.message, ""]
    measured = [p for p in result.probes if p.values]
    reference = float(np.mean(measured[0].values)) if measured else 0.0
    factor, unit = scale_for(reference, result.unit)
    ends = result.ends
    step_size = math.log(ends.ratio) if ends is not None and ends.ratio > 0 else math.nan
    rows = []
    for step, probe in enumerate(result.probes):
        c = probe.classification
        change = ""
        if probe.skipped:
            call, confidence = "skip", ""
        elif probe.role != "probe":
            call, confidence = probe.role.split()[0], "(end)"
            if probe.role == "bad end" and math.isfinite(step_size):
                change = f"{100 * (ends.ratio - 1):+.2f}%"
        elif c is not None:
            call = c.call.value + ("?" if c.low_confidence else "")
            confidence = f"{100 * c.confidence:.2f}%" if math.isfinite(c.confidence) else "fixed"
            if math.isfinite(c.position) and math.isfinite(step_size):
                change = f"{100 * math.expm1(c.position * step_size):+.2f}%"
        else:
            call, confidence = "-", ""
        values = np.asarray(probe.values, dtype=float)
        mean = f"{format_number(values.mean() / factor)} ±{format_number(values.std(ddof=1) / factor, 2)}" \
            if values.size > 1 else (format_number(values[0] / factor) if values.size else "-")
        rows.append([str(step), probe.commit.short, str(probe.commit.index), _cut(probe.commit.subject),
                     str(values.size), mean, change, call, confidence])
    headers = ["step", "commit", "#", "subject", "n", f"mean ±sd ({unit})" if unit else "mean ±sd",
               "vs good", "call", "confidence"]
    lines.append(format_table(headers, rows, "rlrlrrrll"))
    lines.append("")
    lines.append(f"{result.commits} commits in good..bad; {result.runs} benchmark runs, {result.builds} builds.")
    lines += _method(result)
    if result.warnings:
        lines += ["warnings:", *(f"  {w}" for w in result.warnings)]
    if result.skipped:
        lines.append("skipped:")
        lines += [f"  {p.commit.short} {_cut(p.commit.subject)}: {p.skipped}" for p in result.skipped]
    return "\n".join(lines) + "\n"


def _method(result) -> list[str]:
    test = result.test
    if not result.paired:
        return [f"Classic bisect: {len(result.probes[0].values)} runs per commit, "
                "called by the end whose mean log is closer."]
    return [f"Test: paired sequential probability ratio on log values: every run of a probed commit beside "
            f"a run of good or bad (alternating; order in a pair seeded {result.seed}). "
            f"{100 * result.confidence:g}% confidence for the result: each step's error "
            f"alpha = beta = {test.alpha:.3g}; {test.min_n}..{test.max_n} runs per commit; "
            f"'vs good' is the paired estimate; '?' = undecided at {test.max_n}, called by the closer end."]


def _cut(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
