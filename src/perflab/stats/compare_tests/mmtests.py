"""mmtests: the band rule of mmtests' compare-kernels (stats.rules.mmtests_band_rule), with
the bootstrap interval of the ratio of the centres; no p-value, no FDR control."""

from __future__ import annotations

from perflab.stats.compare_tests.row import Outcome, Row, rule_outcome
from perflab.stats.rules import mmtests_band_rule


def test(row: Row) -> Outcome:
    """|Δmean| > 1.96·(sd_base + sd_new) flags the row."""
    return rule_outcome(row, mmtests_band_rule(row.a, row.b, row.mean_kind))
