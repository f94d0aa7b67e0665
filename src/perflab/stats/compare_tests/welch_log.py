"""welch-log: Welch's t-test on log values. The noise is taken as multiplicative, the change
as a common factor c (new ~ c·base), under which every centre's ratio is c; the interval is
exp of the t interval of the mean-log difference. Needs positive values and 2+ per side; with
separate runs the run is its unit (the run-to-run variance enters the test)."""

from __future__ import annotations

import math

import numpy as np

from perflab.model.verdicts import StatWarning
from perflab.stats.compare_tests.row import Outcome, Row, oriented_interval
from perflab.stats.significance import welch_from_moments
from perflab.stats.warnings import NONPOSITIVE_LOG


def test(row: Row) -> Outcome:
    """Welch's test of the mean logs; any p is reachable with 2+ values a side, none below."""
    welch = welch_from_moments(*row.logs, confidence=row.confidence, run_variance=row.run_variance,
                               run_shares=row.run_shares)
    low, high = oriented_interval(math.exp(welch.ci_low), math.exp(welch.ci_high), row.direction)
    warnings: tuple[StatWarning, ...] = ()
    if np.any(row.a <= 0) or np.any(row.b <= 0):
        warnings = (StatWarning(NONPOSITIVE_LOG, "values <= 0: no test on log values"),)
    min_p = 0.0 if row.a.size >= 2 and row.b.size >= 2 else 1.0
    return Outcome(p_value=welch.p_value, ci_low=low, ci_high=high, interval="t interval of the ratio of "
                   "geometric means", min_p=min_p, warnings=warnings)
