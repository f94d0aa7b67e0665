"""binseg: change points in the mean by seeded binary segmentation with PELT's cost and
penalty (the search: stats/penalised.py)."""

from __future__ import annotations

from perflab.model.methods import PenaltyParams
from perflab.stats.detectors.points import ChangePoint, Values
from perflab.stats.penalised import binseg_cuts, penalised_cuts


def find(values: Values, params: PenaltyParams) -> list[ChangePoint]:
    """Change points in the mean by binary segmentation, with PELT's cost and penalty.

    Seeded binary segmentation (Kovács et al. 2023): the best single split of each of
    O(n/8) intervals at halving scales gives candidates; PELT's objective is then
    minimised exactly over those candidates and the cuts moved and pruned until none
    can move or go at a gain (see `penalised.binseg_cuts`). A few vectorised passes,
    O(n log n), instead of PELT's Python loop over n; the same answer on clear steps.
    """
    cuts = penalised_cuts(values.x, binseg_cuts, params.penalty, params.min_size, params.min_magnitude)
    return values.describe(cuts, "binseg")
