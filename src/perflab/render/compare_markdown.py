"""A GitHub-flavoured markdown table of a comparison, for pull requests and issues.

One line per row (benchmark, point, metric): the baseline's centre ± stddev, then for
every candidate its centre ± stddev, the change in % (positive = better) with its
confidence interval, the p-value / q-value (the Benjamini-Hochberg adjusted p) and the
verdict, bold when significant. Values of a line share one unit. Under the table: the
runs, the method, and every warning.
"""

from __future__ import annotations

from typing import Any

from perflab.render.compare_common import describe_run, finite, significance_rule, summaries, warning_lines
from perflab.render.units import format_number, scale_for


def p_text(p: float) -> str:
    if not finite(p):
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def _side(summary: Any, unit: str, reference: float) -> str:
    """``centre ± stddev unit``, the stddev to the centre's decimals; ``-`` where undefined."""
    if summary is None or not finite(summary.centre):
        return "-"
    factor, name = scale_for(reference, unit)
    centre = format_number(summary.centre / factor)
    if not finite(summary.stddev):
        return f"{centre} ± - {name}"
    decimals = len(centre.partition(".")[2]) if "e" not in centre else 3
    sd = f"{summary.stddev / factor:.{decimals}f}"
    if summary.stddev > 0 and float(sd) == 0:
        sd = format_number(summary.stddev / factor, 2)
    return f"{centre} ± {sd} {name}"


def _change(d: Any) -> str:
    if d is None or not finite(d.change_pct):
        return "-"
    text = f"{d.change_pct:+.2f}%"
    if finite(d.ci_low) and finite(d.ci_high):
        text += f" [{d.ci_low:+.2f}, {d.ci_high:+.2f}]"
    return text


def _verdict(d: Any) -> str:
    if d is None:
        return "-"
    text = getattr(d.verdict, "value", d.verdict)
    return f"**{text}**" if d.significant else text


def render_markdown(comparison: Any) -> str:
    labels = comparison.labels
    headers = ["benchmark", "point", "metric", labels[0]]
    align = ["---", "---", "---", "---:"]
    for label in labels[1:]:
        headers += [label, f"change {label}", "p / q", "verdict"]
        align += ["---:", "---:", "---:", "---"]
    lines = ["| " + " | ".join(_escape(h) for h in headers) + " |", "|" + "|".join(align) + "|"]
    for row in comparison.rows:
        sides = summaries(row)
        reference = next((s.centre for s in sides if s is not None and finite(s.centre)), 0.0)
        cells = [row.benchmark, row.point, row.metric, _side(sides[0], row.unit, reference)]
        for cell, summary in zip(row.cells, sides[1:]):
            d = cell.difference
            cells += [_side(summary, row.unit, reference), _change(d),
                      "-" if d is None else f"{p_text(d.p_value)} / {p_text(d.q_value)}", _verdict(d)]
        lines.append("| " + " | ".join(_escape(c) for c in cells) + " |")

    confidence = f"{100 * comparison.confidence:g}%"
    intervals = sorted({d.interval for row in comparison.rows for c in row.cells
                        if (d := c.difference) is not None})
    out = ["Runs: " + "; ".join(f"{'baseline' if i == 0 else 'candidate'} {describe_run(r)}"
                                for i, r in enumerate(comparison.runs)), "", *lines, "",
           f"Values: centre (the metric's mean) ± stddev. Change: positive = better, "
           f"with its {confidence} confidence interval"
           + (f" ({'; '.join(intervals)})" if intervals else "") + ".",
           f"Significant (bold verdict): {significance_rule(comparison)}; q = Benjamini-Hochberg adjusted p."]
    warnings = warning_lines(comparison, indent="- ")
    if warnings:
        out += ["", "**Warnings**", "", *(_escape(w) for w in warnings)]
    return "\n".join(out) + "\n"
