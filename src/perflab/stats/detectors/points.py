"""What every detector takes and gives: the finite values of a series (`Values`) and the
ChangePoints found in them, each described by its two neighbouring segments (`describe`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from perflab.stats.segment_tests import prefix_sums, segment_stats, welch_p


@dataclass(frozen=True)
class ChangePoint:
    """A step in the mean of a series, with the two neighbouring segments that define it.

    ``change_pct`` is raw, 100·(mean_after − mean_before)/mean_before (NaN when
    mean_before is 0); use `model.verdicts.oriented` to make positive = better. ``p_value``
    is Welch's t-test (bounded df) between the neighbouring segments, i.e. from the previous
    reported change point (or the start) to the next (or the end); it is not corrected
    for the search that found the point, so it is optimistic as an absolute probability.
    With several samples per commit (`detect` given groups) the means, sds and p-value
    are over the samples of the segments' commits.
    """

    index: int
    mean_before: float
    stddev_before: float
    mean_after: float
    stddev_after: float
    change_pct: float
    p_value: float
    method: str
    #: mosum only (NaN / "mean" for the others): "mean" for a step in the level, "spread"
    #: for a change in the noise's width alone; the local, trend-corrected step in the
    #: (outlier-clipped) mean and its 95% CI from the noise's own variogram -- for a
    #: "spread" point the ratio of the noise's spread after/before and its CI, and
    #: change_pct NaN (the level did not step). For mosum p_value is the search-corrected
    #: tail probability, not the neighbours' Welch test.
    kind: str = "mean"
    magnitude: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    #: a commit series' change spread over several commits (`commit_series`): (index, share
    #: of the whole change) of each, the last the first at the new level; () for one step
    parts: tuple[tuple[int, float], ...] = ()

    @property
    def last(self) -> int:
        """The first index at the new level: ``index`` for one step, the last part's else."""
        return self.parts[-1][0] if self.parts else self.index


@dataclass(frozen=True)
class Values:
    """A series as a detector reads it: ``x`` its finite values (a group's centre, with
    groups) in order, ``where`` their positions in the caller's numbering, ``groups`` the
    finite samples of every position when the caller gave groups (None: one value each)."""

    x: NDArray[np.float64]
    where: NDArray[np.intp]
    groups: list[NDArray[np.float64]] | None = None

    def describe(self, cuts: Sequence[int], method: str) -> list[ChangePoint]:
        """ChangePoints at positions ``cuts`` of x, reported at their places in the caller's
        numbering: each segment's values, or with groups the samples of its positions."""
        indices = self.where[cuts]
        if self.groups is None:
            return describe(self.x, cuts, indices, method)
        samples = np.concatenate([np.empty(0), *self.groups])
        offsets = np.concatenate([[0], np.cumsum([g.size for g in self.groups])])
        return describe(samples, offsets[indices].tolist(), indices, method)


def describe(x: NDArray[np.float64], cuts: Sequence[int], indices: Sequence[int] | NDArray[np.intp],
             method: str) -> list[ChangePoint]:
    """ChangePoints at positions `cuts` of the samples x, reported at `indices`: each
    segment's mean and sd, and Welch's p between the two (`welch_t`'s, NaN where it is
    undefined), all from prefix sums (`welch_t` and each side's mean and sd, point by point,
    cost ~1 ms of mosum's 11 on 10,000 points)."""
    if not len(cuts):
        return []
    shift, s1, s2 = prefix_sums(x)
    bounds = np.array([0, *cuts, x.size])
    na, ma, va = segment_stats(s1, s2, bounds[:-2], bounds[1:-1])
    nb, mb, vb = segment_stats(s1, s2, bounds[1:-1], bounds[2:])
    p = welch_p(na, ma, va, nb, mb, vb, undefined=math.nan)
    out = []
    for i, index in enumerate(indices):
        before, after = float(ma[i]) + shift, float(mb[i]) + shift
        out.append(ChangePoint(
            index=int(index),
            mean_before=before,
            stddev_before=math.sqrt(va[i]) if na[i] > 1 else math.nan,
            mean_after=after,
            stddev_after=math.sqrt(vb[i]) if nb[i] > 1 else math.nan,
            change_pct=100.0 * (after - before) / before if before != 0.0 else math.nan,
            p_value=float(p[i]),
            method=method,
        ))
    return out
