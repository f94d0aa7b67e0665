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
    good = next((p for p in result.probes if p.role == "good end"), None)
    good_mean = _gmean(good.values) if good and good.values else math.nan
    rows = []
    for step, probe in enumerate(result.probes):
        c = probe.classification
        if probe.skipped:
            call, confidence = "skip", ""
        elif probe.role != "probe":
            call, confidence = probe.role.split()[0], "(end)"
        elif c is not None:
            call = c.call.value + ("?" if c.low_confidence else "")
            confidence = f"{100 * c.confidence:.1f}%" if math.isfinite(c.confidence) else "fixed"
        else:
            call, confidence = "-", ""
        values = np.asarray(probe.values, dtype=float)
        mean = f"{format_number(values.mean() / factor)} ±{format_number(values.std(ddof=1) / factor, 2)}" \
            if values.size > 1 else (format_number(values[0] / factor) if values.size else "-")
        change = f"{100 * (_gmean(values) / good_mean - 1):+.2f}%" \
            if values.size and math.isfinite(good_mean) and probe.role != "good end" else ""
        rows.append([str(step), probe.commit.short, str(probe.commit.index), _cut(probe.commit.subject),
                     str(values.size), mean, change, call, confidence])
    headers = ["step", "commit", "#", "subject", "n", f"mean ±sd ({unit})" if unit else "mean ±sd",
               "vs good", "call", "confidence"]
    lines.append(format_table(headers, rows, "rlrlrrrll"))
    lines.append("")
    test = result.test
    lines.append(f"{result.commits} commits in good..bad; {result.runs} benchmark runs, {result.builds} builds. "
                 f"Test: sequential probability ratio on log values, alpha = beta = "
                 f"{test.alpha:g}/{test.beta:g} ({100 * test.confidence:g}% confidence), "
                 f"{test.min_n}..{test.max_n} runs per commit; '?' = undecided at {test.max_n}, "
                 f"called by the closer end.")
    if result.skipped:
        lines.append("skipped:")
        lines += [f"  {p.commit.short} {_cut(p.commit.subject)}: {p.skipped}" for p in result.skipped]
    return "\n".join(lines) + "\n"


def _gmean(values) -> float:
    x = np.asarray(values, dtype=float)
    return float(np.exp(np.mean(np.log(x)))) if x.size and np.all(x > 0) else math.nan


def _cut(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
