"""e-divisive: change points in the mean by E-divisive means with t-tests, as Otava (Hunter)
does (the search: stats/energy.py)."""

from __future__ import annotations

from perflab.model.methods import EDivisiveParams
from perflab.stats.detectors.points import ChangePoint, Values
from perflab.stats.energy import check_e_divisive, e_divisive_cuts


def find(values: Values, params: EDivisiveParams) -> list[ChangePoint]:
    """Change points in the mean by E-divisive means with t-tests, as Otava (Hunter) does.

    1. Candidates: windows of `window` finite values, overlapping by half (one window
       when the series is shorter); in each, split recursively at the maximum of the
       energy statistic while the Welch t-test between the two sides gives
       p <= max_pvalue. Energy is O(window²) per window, so the whole is O(n·window).
    2. Merge: each candidate is tested against its neighbouring segments (previous and
       next candidate); the weakest (largest p) failing point is removed and its
       neighbours retested, until all have p <= max_pvalue and a relative change
       |after − before| / |before| >= min_magnitude (a fraction: 0.05 = 5%).

    Assumes independent, roughly normal noise around piecewise-constant means; the
    t-test makes the rule sensitive to changes of a few noise sds over tens of points.
    Segments are at least E_DIVISIVE_MIN_SEGMENT values long. Deterministic: the
    E-divisive permutation test is replaced by the t-test, as in Otava.
    """
    check_e_divisive(params.window, params.max_pvalue)
    cuts = e_divisive_cuts(values.x, params.window, params.max_pvalue, params.min_magnitude)
    return values.describe(cuts, "e-divisive")
