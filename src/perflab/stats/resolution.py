"""Why a row must not be judged even when its test rejects: data that cannot carry the claim.

- **Resolution.** Values that come in steps (a timer's resolution, clock ticks of CPU
  time: rusage user/system of a short command are 0, 4, 8 ms ...) cannot show a change
  smaller than one step: the step decides the difference, not the code.
- **Drift** along a run and **two groups** in a run (a trend, bimodality): the mean then
  depends on when the run stopped or on how many samples fell in each group, so a
  difference of means whose sides' ranges overlap may be made of that alone. It is, only
  when that could move the row across its decision: `unsettled` sizes how far (per side
  flagged, the gap of its two groups or the span of the levels its drift went through,
  summed over the sides), `margin` how far the row's interval and change lie from the
  edge of the verdict they give; the rule blocks where the first reaches the second.

`quantum` finds the step; `unjudgeable` returns the warning that blocks the mark, or None.
`at_floor` tells a level of a commit series made of the resolution itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from perflab.model.verdicts import StatWarning
from perflab.stats.checks import split_gap
from perflab.stats.warnings import BIMODAL, TREND

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


def at_floor(values: ArrayLike) -> bool:
    """True when the finite ``values`` (one per commit: its runs' centre) hold an exact zero:
    the metric's resolution, not a level (the CPU time of a short command is 0 or a tick's
    worth as the kernel's samples fell; a step to or from 0 has no size), so no step
    between levels can be told from them."""
    x = np.asarray(values, dtype=float).reshape(-1)
    return bool(np.any(x[np.isfinite(x)] == 0.0))


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


def drift_span(values: ArrayLike) -> float:
    """The span of the levels a drifting run went through, on the log scale: twice the
    difference of the mean logs of its halves (for a steady drift, the distance from its
    first level to its last). NaN below 4 positive values."""
    x = np.asarray(values, dtype=float).reshape(-1)
    logs = np.log(x[np.isfinite(x) & (x > 0)])
    half = logs.size // 2
    if half < 2:
        return math.nan
    return float(2 * abs(logs[-half:].mean() - logs[:half].mean()))


def unsettled(sides: tuple[np.ndarray, np.ndarray], kinds: tuple[frozenset[str], frozenset[str]],
              flags: tuple[str, ...] = (TREND, BIMODAL)) -> float:
    """How far (log scale) the difference of the sides' levels could move with how each
    side's values fell: a side flagged bimodal moves by at most the gap of its two groups
    (`checks.split_gap`), one flagged with a trend by the span of its drift (`drift_span`);
    the sides' shares add. 0 with no side flagged (of ``flags``); inf where unmeasurable."""
    total = 0.0
    for values, found in zip(sides, kinds):
        sizes = [split_gap(values) if kind == BIMODAL else drift_span(values) for kind in flags if kind in found]
        if sizes:
            total += max(size if math.isfinite(size) else math.inf for size in sizes)
    return total


def margin(change: float, low: float, high: float, floor_pct: float, higher: bool) -> float:
    """How far (log scale) a row's change and interval (oriented %, + = better) lie from the
    edge of the verdict they give: a call (the interval clear of 0, the change beyond the
    floor) from 0 and from the floor; "no change" (the interval inside +-floor) from the
    floor; inf where they give none (nothing to move across); 0 where unknown."""
    def log(pct: float) -> float:   # oriented % -> oriented log ratio
        ratio = 1 + pct / 100 if higher else 1 - pct / 100
        if not ratio > 0:
            return -math.inf if higher else math.inf   # a ratio <= 0: beyond any level
        return math.log(ratio) if higher else -math.log(ratio)

    if not all(math.isfinite(v) for v in (change, low, high, floor_pct)):
        return 0.0
    c, lo, hi, floor = log(change), log(low), log(high), log(floor_pct)
    if lo > 0 and change > floor_pct:
        return min(lo, c - floor)
    if hi < 0 and change < -floor_pct:
        return min(-hi, log(-floor_pct) - c)
    if -floor_pct <= low and high <= floor_pct:
        return min(floor - hi, lo - log(-floor_pct))
    return math.inf


def unjudgeable(base: ArrayLike, new: ArrayLike, base_centre: float, new_centre: float,
                kinds: tuple[frozenset[str], frozenset[str]], step: float | None = None,
                skip: frozenset[str] = frozenset(), room: float = 0.0) -> StatWarning | None:
    """The reason a change between ``base`` and ``new`` must not be marked, or None
    (``kinds``: each side's warning kinds; ``step``: their `quantum`, when the caller has it;
    ``skip``: rules, by kind, not applied; ``room``: the row's `margin`, 0 where not known)."""
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
    unstable = sorted({kind for found in kinds for kind in found if kind in (TREND, BIMODAL)})
    overlap = a.min() <= b.max() and b.min() <= a.max()
    if unstable and overlap and UNSTABLE not in skip and unsettled((a, b), kinds) >= room:
        what = " and ".join({TREND: "drift along the run", BIMODAL: "two groups of values"}[k] for k in unstable)
        return StatWarning(UNSTABLE, f"{what}, and the two sides' ranges overlap: the difference of the centres "
                                     "may be made of that alone; not judged")
    return None
