"""The result of ``perflab calibrate``: each point's run-to-run spread beside its sample noise."""

from __future__ import annotations

import math
from collections.abc import Sequence

from perflab.model.report.calibration import Calibration, HostModelView, HostPriorLine
from perflab.render.texttable import format_table


def _pct(value: float) -> str:
    return f"{value:.2f}%" if math.isfinite(value) else "-"


def render_calibration(rows: Sequence[Calibration]) -> str:
    table = format_table(
        ["benchmark", "point", "metric", "runs", "within a run (CoV)", "between runs (CoV)", "df"],
        [[r.benchmark, r.point, r.metric, str(r.runs), _pct(r.within_cov_pct), _pct(r.between_cov_pct),
          f"{r.df:g}"] for r in rows],
        align="lllrrrr")
    return (table + "\n\nbetween runs: the spread of a run's level (one-way random-effects ANOVA on log values);"
            " 'perflab compare' of separate runs of these points on this host now adds it to its test\n")


#: Below this many prior degrees of freedom the prior is called weak in the text.
WEAK_D0 = 4.0


def _learned_from(p: HostPriorLine) -> str:
    if p.default:
        borrowed = f"{p.stand_in}'s, none of its own recorded; " if p.stand_in else ""
        return f"perflab's default ({borrowed}teach this host with 'perflab calibrate')"
    return (f"{p.benchmarks} benchmark(s), {p.groups} replicate group(s)"
            + (", trended in within-run spread" if p.trended else ""))


def render_host_model(view: HostModelView) -> str:
    """The host model: per kind of metric, the prior that separate-run comparisons borrow."""
    head = f"host model of run-to-run variance on {view.host} (what 'perflab compare' of separate runs borrows):"
    if not view.priors:
        return head + "\n  nothing known: teach it with 'perflab calibrate -k 5 SUITE|WORKLOAD|-- CMD'\n"
    rows = [[p.kind, _pct(p.spread_pct), f"{p.d0:.3g}", _learned_from(p)] for p in view.priors]
    lines = [head, format_table(["kind", "spread", "d0", "learned from"], rows, align="lrrl")]
    weak = [p.kind for p in view.priors if p.d0 < WEAK_D0 and not p.default]
    if weak:
        lines.append(f"weak prior ({', '.join(weak)}: d0 < {WEAK_D0:g}): this host's benchmarks differ widely in "
                     "run-to-run spread, so a separate-run test leans on each benchmark's own replicates")
    return "\n".join(lines) + "\n"
