"""Why a row must not be judged even when its test rejects: data that cannot carry the claim.

- **Resolution.** Values that come in steps (a timer's resolution, clock ticks of CPU
  time: rusage user/system of a short command are 0, 4, 8 ms ...) cannot show a change
  smaller than one step: the step decides the difference, not the code.
- **Drift** along a run and **two groups** in a run (a trend, bimodality): the mean then
  depends on when the run stopped or on how many samples fell in each group, so a
  difference of means whose sides' ranges overlap may be made of that alone.

`quantum` finds the step; `unjudgeable` returns the warning that blocks the mark, or None.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from perflab.model.verdicts import StatWarning
from perflab.stats.checks import split_gap

COARSE = "coarse-resolution"
UNSTABLE = "unstable-run"


def quantum(*samples: ArrayLike) -> float:
    """The step every value is a whole multiple of, from the smallest gap between distinct
    values; NaN when the values are not on such a grid (continuous data) or too few.

    Only called a grid when it explains the data: at most half as many distinct values as
    values, and every value within 1% of a step of a multiple.
    """
    x = np.concatenate([np.asarray(s, dtype=float).reshape(-1) for s in samples]) if samples else np.empty(0)
    x = np.sort(x[np.isfinite(x)])
    distinct = x[np.concatenate(([True], x[1:] != x[:-1]))] if x.size else x
    if x.size < 4 or distinct.size < 2 or distinct.size > x.size / 2:
        return math.nan
    step = float(np.min(np.diff(distinct)))
    if step <= 0:
        return math.nan
    steps = (x - distinct[0]) / step
    return step if bool(np.all(np.abs(steps - np.round(steps)) < 0.01)) else math.nan


def quantum_pairs(pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[float]:
    """`quantum(a, b)` of each pair of finite samples: pairs of one pair of sizes are sorted
    together and only those with few enough distinct values to be on a grid are looked at."""
    out = [math.nan] * len(pairs)
    shapes = [(a.size, b.size) for a, b in pairs]
    for shape in set(shapes):
        rows = [i for i, found in enumerate(shapes) if found == shape]
        size = sum(shape)
        if size < 4:
            continue
        ordered = np.sort(np.concatenate([np.stack([pairs[i][0] for i in rows]).reshape(len(rows), shape[0]),
                                          np.stack([pairs[i][1] for i in rows]).reshape(len(rows), shape[1])],
                                         axis=1), axis=1)
        distinct = 1 + np.count_nonzero(ordered[:, 1:] != ordered[:, :-1], axis=1)
        for i, count in zip(rows, distinct.tolist()):
            if 2 <= count <= size / 2:
                out[i] = quantum(*pairs[i])
    return out


def unjudgeable(base: ArrayLike, new: ArrayLike, base_centre: float, new_centre: float,
                warnings: tuple[StatWarning, ...], step: float | None = None,
                skip: frozenset[str] = frozenset()) -> StatWarning | None:
    """The reason a change between ``base`` and ``new`` must not be marked, or None
    (``step``: their `quantum`, when the caller has it; ``skip``: rules, by kind, not applied)."""
    a = np.asarray(base, dtype=float).reshape(-1)
    b = np.asarray(new, dtype=float).reshape(-1)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if not (a.size and b.size and math.isfinite(base_centre) and math.isfinite(new_centre)):
        return None
    step = quantum(a, b) if step is None else step
    delta = abs(new_centre - base_centre)
    if math.isfinite(step) and delta < step and COARSE not in skip:
        share = f" ({100 * step / abs(base_centre):.3g}% of the centre)" if base_centre else ""
        return StatWarning(COARSE, f"values come in steps of {step:.6g}{share}, coarser than the change of "
                                   f"{delta:.6g}: not judged")
    unstable = sorted({w.kind for w in warnings if w.kind in ("trend", "bimodal")})
    overlap = a.min() <= b.max() and b.min() <= a.max()
    # two groups move a side's level by at most their gap: a change beyond it is not made of them
    # (a drift has no such bound: measured in bench/README.md, "Blocking rules")
    made_of_split = unstable != ["bimodal"] or not (base_centre > 0 and new_centre > 0) or \
        not abs(math.log(new_centre / base_centre)) > max(split_gap(a), split_gap(b))
    if unstable and overlap and made_of_split and UNSTABLE not in skip:
        what = " and ".join({"trend": "drift along the run", "bimodal": "two groups of values"}[k] for k in unstable)
        return StatWarning(UNSTABLE, f"{what}, and the two sides' ranges overlap: the difference of the centres "
                                     "may be made of that alone; not judged")
    return None
