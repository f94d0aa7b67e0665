"""The result of ``perflab calibrate``: each point's run-to-run spread beside its sample noise."""

from __future__ import annotations

import math
from collections.abc import Sequence

from perflab.model.report.calibration import Calibration
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
