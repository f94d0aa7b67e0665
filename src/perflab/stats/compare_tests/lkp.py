"""lkp: the range rule of the kernel test robot (stats.rules.lkp_range_rule), with the
bootstrap interval of the ratio of the centres; no p-value, no FDR control."""

from __future__ import annotations

from perflab.stats.compare_tests.row import Outcome, Row, rule_outcome
from perflab.stats.rules import lkp_range_rule


def test(row: Row) -> Outcome:
    """Disjoint ranges and a median ratio beyond 1% flag the row."""
    return rule_outcome(row, lkp_range_rule(row.a, row.b))
