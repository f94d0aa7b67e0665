"""mann-whitney: the two-sided Mann-Whitney U test, distribution-free (4+ per side to ever
reach p < 0.05); its interval is the Hodges-Lehmann interval of the factor between the sides,
the one that inverts the test (none when the test cannot reject; positive values up to 1,000
a side), else the bootstrap's."""

from __future__ import annotations

import math

from perflab.model.verdicts import StatWarning
from perflab.stats.compare_tests.row import Outcome, Row, bootstrap_interval, oriented_interval
from perflab.stats.intervals import hodges_lehmann_ratio_ci
from perflab.stats.significance import mann_whitney
from perflab.stats.warnings import TOO_FEW_SAMPLES


def test(row: Row) -> Outcome:
    """U's p, exact at small n; its smallest p (no ties) is 2 / C(n_base + n_new, n_base),
    reached when the sides do not overlap: 3 vs 3 gives 0.1, never significant at 5%."""
    a, b = row.a, row.b
    min_p = 1.0 if a.size < 1 or b.size < 1 else min(1.0, 2.0 / math.comb(a.size + b.size, a.size))
    shift = hodges_lehmann_ratio_ci(a, b, row.confidence)
    if not math.isnan(shift.low) or shift.warnings:
        # the interval that inverts the test: exact at small n, where the bootstrap's is too narrow
        interval = "Hodges-Lehmann interval of the ratio (inverts Mann-Whitney)"
        low, high = oriented_interval(shift.low, shift.high, row.direction)
    else:
        low, high, interval = bootstrap_interval(row)
    warnings: tuple[StatWarning, ...] = ()
    if min(a.size, b.size) > 0 and min_p >= 1.0 - row.confidence:
        warnings = (StatWarning(TOO_FEW_SAMPLES, f"{a.size} vs {b.size} samples cannot reach p < "
                                f"{1.0 - row.confidence:g} with Mann-Whitney U (its smallest p is "
                                f"{min_p:.2g}); record more"),)
    return Outcome(p_value=mann_whitney(a, b), ci_low=low, ci_high=high, interval=interval, min_p=min_p,
                   warnings=warnings)
