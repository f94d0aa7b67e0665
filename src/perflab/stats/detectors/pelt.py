"""pelt: change points in the mean by PELT (Killick et al. 2012) with a Gaussian cost and an
information criterion (the search: stats/penalised.py)."""

from __future__ import annotations

from perflab.model.methods import PenaltyParams
from perflab.stats.detectors.points import ChangePoint, Values
from perflab.stats.penalised import pelt_cuts, penalised_cuts


def find(values: Values, params: PenaltyParams) -> list[ChangePoint]:
    """Change points in the mean by PELT with a Gaussian cost and an information criterion.

    Minimises Σ over segments of the residual sum of squares + β per change point, with
    β = c·σ², σ from `robust_noise_sd` so the penalty scales with the noise:
    ``penalty`` "mbic" c = 3·ln n (the default; bench/README.md, "Method history"), "bic"
    c = 2·ln n (two parameters per change), "aic" c = 4, or a number c. Exact (the global
    optimum) in expected O(n) time when changes keep occurring; segments hold at least
    `min_size` finite values. Points whose relative change is below `min_magnitude` (a
    fraction) are then merged away, smallest first.

    Assumes independent Gaussian noise of constant variance; heavy tails or drift make
    it split more. No significance filter: the reported p_value is for information.
    """
    cuts = penalised_cuts(values.x, pelt_cuts, params.penalty, params.min_size, params.min_magnitude)
    return values.describe(cuts, "pelt")
