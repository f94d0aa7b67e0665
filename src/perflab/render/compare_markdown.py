"""A GitHub-flavoured markdown table of a comparison, for pull requests and issues.

One line per row (benchmark, point, metric): the baseline's centre ± stddev, then for
every candidate its centre ± stddev, the change in % (positive = better) with its
confidence interval, the p-value / q-value (the Benjamini-Hochberg adjusted p) and the
verdict, bold when significant. Every value of one metric shares one unit (`units.metric_scale`,
as every format of a comparison). Under the table: the
runs, the method, and every warning.
"""

from __future__ import annotations

from perflab.model.report.compare import Change, CompareReport, SideSummary
from perflab.render.compare_common import describe_run, finite, metric_scales, significance_rule, warning_lines
from perflab.render.units import format_number


def p_text(p: float) -> str:
    if not finite(p):
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def side_text(summary: SideSummary | None, scale: tuple[float, str]) -> str:
    """``centre ± stddev unit`` in ``scale`` (divisor, unit), the stddev to the centre's
    decimals; ``-`` where undefined."""
    if summary is None or not finite(summary.centre):
        return "-"
    factor, name = scale
    centre = format_number(summary.centre / factor)
    if not finite(summary.stddev):
        return f"{centre} ± - {name}"
    decimals = len(centre.partition(".")[2]) if "e" not in centre else 3
    sd = f"{summary.stddev / factor:.{decimals}f}"
    if summary.stddev > 0 and float(sd) == 0:
        sd = format_number(summary.stddev / factor, 2)
    return f"{centre} ± {sd} {name}"


def change_text(d: Change | None) -> str:
    if d is None or not finite(d.pct):
        return "-"
    text = f"{d.pct:+.2f}%"
    if d.ci.known:
        text += f" [{d.ci.low:+.2f}, {d.ci.high:+.2f}]"
    return text


def _verdict(d: Change | None) -> str:
    if d is None:
        return "-"
    return f"**{d.verdict.value}**" if d.significant else d.verdict.value


def render_markdown(report: CompareReport, verbose: bool = False) -> str:
    labels = report.labels
    headers = ["benchmark", "point", "metric", labels[0]]
    align = ["---", "---", "---", "---:"]
    for label in labels[1:]:
        headers += [label, f"change {label}", "p / q", "verdict"]
        align += ["---:", "---:", "---:", "---"]
    lines = ["| " + " | ".join(_escape(h) for h in headers) + " |", "|" + "|".join(align) + "|"]
    scales = metric_scales(report.blocks)
    for row in report.rows:
        scale = scales[(row.metric, row.unit)]
        # the commands of one run head the columns: their baseline's name is no row's benchmark
        benchmark = "" if row.benchmark in labels else row.benchmark
        cells = [benchmark, row.point, row.metric, side_text(row.base, scale)]
        for cell in row.cells:
            d = cell.change
            cells += [side_text(cell.side, scale), change_text(d),
                      "-" if d is None else f"{p_text(d.p_value)} / {p_text(d.q_value)}", _verdict(d)]
        lines.append("| " + " | ".join(_escape(c) for c in cells) + " |")

    confidence = f"{100 * report.confidence:g}%"
    intervals = sorted({change.interval for _, _, change in report.changes()})
    out = ["Runs: " + "; ".join(f"{'baseline' if i == 0 else 'candidate'} {describe_run(r)}"
                                for i, r in enumerate(report.runs)), "", *lines, "",
           f"Values: centre (the metric's mean) ± stddev. Change: positive = better, "
           f"with its {confidence} confidence interval"
           + (f" ({'; '.join(intervals)})" if intervals else "") + ".",
           f"Significant (bold verdict): {significance_rule(report)}; q = Benjamini-Hochberg adjusted p."]
    out += [_escape(note) for note in report.notes]
    warnings = warning_lines(report, indent="- ", verbose=verbose)
    if warnings:
        out += ["", "**Warnings**", "", *(_escape(w) for w in warnings)]
    return "\n".join(out) + "\n"
