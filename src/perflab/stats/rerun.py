"""Does an alerted step reproduce when both of its commits are measured again, side by side?

An alert's step was read across time: commits measured minutes apart, on a machine whose
speed moves for seconds at a time. A rerun measures the last good (A) and the first bad
(B) commit again in R rounds taken back to back, in the order ABBA ABBA ... (a drift that
is linear over two rounds adds nothing to their mean). Round i gives d_i = log(B_i / A_i),
the log ratio of the two runs' medians: the round, not the sample, is the unit, so a
speed state that lasts a round moves both of its runs and cancels.

The test: a two-sided (1 − α) Student t interval of the mean of the d_i (R − 1 df), read
against the alerted step D = log(after / before):

  reproduced      the interval excludes 0 on D's side: a step in D's direction is there
                  (the chance of this without a step is at most α/2);
  not reproduced  the interval's end on D's side lies below D/2: a step of half the
                  alerted one or more is ruled out (the chance of this when such a step is
                  real is at most α/2). Half: the recovery rule's line between "still the
                  new level" and "back at the old one" (analysis/alerts.py);
  undecided       neither (too few rounds, or rounds that disagree).

Both can hold (a step well below half the alerted one, but real): then not reproduced,
with the step measured. Assumed: the d_i are independent and normal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from perflab.stats.distributions import t_ppf

REPRODUCED, NOT_REPRODUCED, UNDECIDED = "reproduced", "not reproduced", "undecided"
#: Rounds a rerun measures: 4 in ABBA order leave 3 df (t = 3.18 at 95%, against 4.30 with
#: 2 df) for 8 runs, and pair every order with its reverse twice.
ROUNDS = 4
ALPHA = 0.05


@dataclass(frozen=True)
class RerunVerdict:
    """The rerun's outcome; ``ratio`` the measured B/A (geometric mean over rounds) and
    ``low``, ``high`` its (1 − α) interval; ``rounds`` how many rounds it read."""

    outcome: str
    ratio: float
    low: float
    high: float
    rounds: int

    def text(self, *, lower_is_better: bool = False) -> str:
        """The verdict in a line, the step in % with + = better: for a metric where lower is
        better (a time) a measured rise is negative, as the alert's own % is."""
        if not math.isfinite(self.ratio):
            return f"{self.outcome}: no round measured both sides"
        sign = -1.0 if lower_is_better else 1.0
        low, high = sorted((sign * 100 * (self.low - 1), sign * 100 * (self.high - 1)))
        return (f"{self.outcome}: rerun of {self.rounds} round(s) measured {sign * 100 * (self.ratio - 1):+.1f}% "
                f"({100 * (1 - ALPHA):g}% interval {low:+.1f}% .. {high:+.1f}%)")


def order(rounds: int = ROUNDS) -> list[str]:
    """The sides in the order they are measured: "good"/"bad", ABBA ABBA ..."""
    return [side for i in range(rounds) for side in (("good", "bad") if i % 2 == 0 else ("bad", "good"))]


def judge(good: ArrayLike, bad: ArrayLike, before: float, after: float, alpha: float = ALPHA) -> RerunVerdict:
    """The verdict on the alerted step before -> after (both > 0) from the per-round
    medians ``good`` and ``bad`` (paired by position; positive values)."""
    a, b = np.asarray(good, dtype=float), np.asarray(bad, dtype=float)
    keep = np.isfinite(a) & np.isfinite(b) & (a > 0) & (b > 0)
    d = np.log(b[keep]) - np.log(a[keep])
    if d.size < 2 or not (before > 0 and after > 0) or before == after:
        centre = float(np.exp(d.mean())) if d.size else math.nan
        return RerunVerdict(UNDECIDED, centre, math.nan, math.nan, int(d.size))
    mean = float(d.mean())
    half = t_ppf(1 - alpha / 2, d.size - 1) * float(d.std(ddof=1)) / math.sqrt(d.size)
    low, high = mean - half, mean + half
    step = math.log(after / before)
    sign = 1.0 if step > 0 else -1.0
    near, far = sorted((sign * low, sign * high))   # the interval, oriented so the step is positive
    if far < abs(step) / 2:
        outcome = NOT_REPRODUCED
    elif near > 0:
        outcome = REPRODUCED
    else:
        outcome = UNDECIDED
    return RerunVerdict(outcome, math.exp(mean), math.exp(low), math.exp(high), int(d.size))
