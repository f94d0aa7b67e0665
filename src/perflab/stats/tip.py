"""The tip detector: do the newest commits of a history differ from the history before them?

A robot looks once per new commit. At a look, the tip is the newest T = MAX_TIP commits
(fewer while the series is young: `tip_length`), and the history the values before
them (the newest HISTORY_CAP, from ``since``: the last change the whole-series detector
found), standardised by its mean and sd: z = (x − mean) / sd. Two rules read the newest
m commits of the tip against it:

  suspect    |mean of the last m z| · √m > c_s for m = 1 or 2: one or two commits out of
             line. A single outlying commit is only this: the robot may rerun it.
  confirmed  for some m = 3 .. T, more than half of the last m z lie beyond c_m on
             the same side: a new level that holds (a median test, so one spike among
             them neither makes nor breaks it).

Calibration (the per-look false-alarm rate): under the null (history and tip i.i.d.
normal, any mean and sd) the chance that a look raises either state is at most
``false_rate``/1,000, half to each rule, split evenly over its m (Bonferroni: the m
overlap, so the true rate is below). Given the history's level and sd, each rule's
tail is exact -- a scaled Student t for the suspect rule; for the median rule a binomial
tail of normal tails, integrated over the law of the history's mean and sd by quadrature
-- so the uncertainty of a short history's level and sd is paid for in the thresholds,
which are larger the shorter the history. A robot looking at every new commit then raises at
most false_rate false alerts per 1,000 commits of change-free normal noise, however long
it watches. Heavier tails, drift and memory in real noise raise it:
bench/tip_latency.py measures it on the real recordings.

Short histories are answered honestly: fewer than MIN_HISTORY values before the tip, or
no spread in them, is "undecided", not "no change".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: Expected false alerts per 1,000 looks (new commits) on change-free normal noise:
#: half the target of at most 1 per 1,000 on real recordings, the other half left for
#: the tails and memory of real noise, which the normal model does not hold.
FALSE_RATE_PER_1000 = 0.5
#: The newest commits read against the history at each look.
MAX_TIP = 10
#: Commits the suspect rule reads (m = 1 .. SUSPECT_TIP); the confirmation reads the rest.
SUSPECT_TIP = 2
#: The fewest history values a look decides on (below: "undecided").
MIN_HISTORY = 8
#: The most recent history values used: slow drift makes older ones less like the tip.
HISTORY_CAP = 100

NONE, SUSPECT, CONFIRMED, UNDECIDED = "none", "suspect", "confirmed", "undecided"


@dataclass(frozen=True)
class TipFinding:
    """One look at the tip of a series.

    ``status``: NONE, SUSPECT, CONFIRMED or UNDECIDED (``reason`` says why). For a suspect
    or confirmed finding, ``start`` is the index of the first commit of the new level
    (``commits`` = n − start of them), ``z`` the step of their mean in history sds and
    ``threshold`` the rule's bar it passed (for the suspect rule in |mean z|·√m, for the
    median rule in z). ``level`` and ``scale`` are the history's mean and sd,
    ``history`` how many values they came from.
    """

    status: str
    start: int
    commits: int
    level: float
    scale: float
    level_after: float
    z: float
    threshold: float
    history: int
    reason: str = ""

    @property
    def change_pct(self) -> float:
        """100·(level after − level before)/level before (NaN when the level is 0)."""
        return 100.0 * (self.level_after - self.level) / self.level if self.level else math.nan


def _level_and_sd(v: NDArray[np.float64]) -> tuple[float, float]:
    """(mean, sd) of the history: plain, so that the thresholds are exact (a spike in the
    history widens the sd, which costs power, not false alarms)."""
    return float(v.mean()), float(v.std(ddof=1))


@lru_cache(maxsize=256)
def _nodes(k: int) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Quadrature over the history's (mean, sd) for k standard normal values: the mean
    N(0, 1/k) by Gauss-Hermite, the sd (χ²_{k−1}/(k−1))^½ on a log grid reaching its
    1e-14 tails (a small sd is what makes a short history's bars high). (means, sds,
    weights), weights summing to 1."""
    from scipy.stats import chi
    u, wu = np.polynomial.hermite_e.hermegauss(16)
    df = k - 1
    law = chi(df, scale=1.0 / math.sqrt(df))
    s = np.geomspace(law.ppf(1e-14), law.isf(1e-14), 300)
    ws = law.pdf(s) * np.gradient(s)
    means = np.repeat(u / math.sqrt(k), s.size)
    sds = np.tile(s, u.size)
    weights = np.outer(wu, ws).reshape(-1)
    return means, sds, weights / weights.sum()


def _suspect_tail(c: float, k: int, top: int) -> float:
    """P(|mean of the last m z|·√m > c) summed over m = 1..top: exactly a scaled Student t
    with k − 1 df (√m·(tip mean − history mean)/sd)."""
    from scipy.stats import t
    return float(sum(2.0 * t.sf(c / math.sqrt(1.0 + m / k), k - 1) for m in range(1, top + 1)))


def _median_tail(c: float, m: int, k: int) -> float:
    """P(more than half of m tip z beyond c on one side), integrated over the history."""
    from scipy.special import ndtr
    means, sds, weights = _nodes(k)
    up = ndtr(-(means + c * sds))       # P(x > mean + c·sd)
    down = ndtr(means - c * sds)        # P(x < mean − c·sd)
    return float(weights @ (_majority(up, m) + _majority(down, m)))


def _majority(p: NDArray[np.float64], m: int) -> NDArray[np.float64]:
    """P(more than half of m independent trials succeed), each with chance p."""
    q = 1.0 - p
    return np.asarray(sum(math.comb(m, j) * p**j * q**(m - j) for j in range(m // 2 + 1, m + 1)))


def _solve(tail: Callable[[float], float], alpha: float) -> float:
    """The c where the decreasing tail(c) is alpha (c in [0.5, 200])."""
    from scipy.optimize import brentq
    return float(brentq(lambda c: math.log(max(tail(c), 1e-300)) - math.log(alpha), 0.5, 200.0, xtol=1e-3))


@lru_cache(maxsize=2048)
def thresholds(k: int, tip: int = MAX_TIP, false_rate: float = FALSE_RATE_PER_1000,
               ) -> tuple[float, tuple[float, ...]]:
    """(c_s, (c_3 .. c_tip)) for a history of k values and a tip of ``tip`` commits: each
    rule's share of the per-look rate false_rate/1,000 (all of it to the suspect rule while
    the tip is too short to confirm), the confirmation's split evenly over its m."""
    alpha = false_rate / 1000.0
    ms = range(SUSPECT_TIP + 1, tip + 1)
    suspect_share = alpha / 2 if len(ms) else alpha
    c_s = _solve(lambda c: _suspect_tail(c, k, min(tip, SUSPECT_TIP)), suspect_share)
    share = alpha / 2 / max(len(ms), 1)
    return c_s, tuple(_solve(partial(_median_tail, m=m, k=k), share) for m in ms)


def tip_length(n: int) -> int:
    """Commits read as the tip of n values: up to MAX_TIP, while the history before them
    keeps at least MIN_HISTORY values and twice the tip's length (so that the history's
    level is known better than the tip's); 0 when n is too short for a look."""
    return max(0, min(MAX_TIP, n - MIN_HISTORY, max(1, n // 3)))


def _undecided(reason: str, k: int, level: float = math.nan, scale: float = math.nan) -> TipFinding:
    return TipFinding(UNDECIDED, -1, 0, level, scale, math.nan, math.nan, math.nan, k, reason)


def look(values: ArrayLike, *, since: int = 0, false_rate: float = FALSE_RATE_PER_1000) -> TipFinding:
    """The robot's look at the newest commits of ``values`` (one number per commit, NaN =
    not measured: skipped), with the history taken from index ``since`` on."""
    x = np.asarray(values, dtype=float).reshape(-1)
    where = np.flatnonzero(np.isfinite(x[since:])) + since
    tip = tip_length(where.size)
    if tip < 1:
        return _undecided(f"{where.size} values: a look needs {MIN_HISTORY} of history before "
                          "the newest commit", max(where.size - 1, 0))
    tip_at, past_at = where[-tip:], where[:-tip][-HISTORY_CAP:]
    k = past_at.size
    level, scale = _level_and_sd(x[past_at])
    if not scale > 0.0:
        return _undecided("the history has no spread to measure a step against", k, level, scale)
    z = (x[tip_at] - level) / scale
    c_s, c_m = thresholds(k, tip, false_rate)
    found = _confirmation(z, c_m)
    if found is not None:
        (m, c), status = found, CONFIRMED
    else:
        m, c = _suspect_commits(z, c_s), c_s
        status = SUSPECT if m else NONE
    if status == NONE:
        return TipFinding(NONE, -1, 0, level, scale, math.nan, math.nan, c_s, k)
    start = int(tip_at[-m])
    after = float(np.median(x[tip_at[-m:]]))
    return TipFinding(status, start, m, level, scale, after, float(z[-m:].mean()), c, k)


def _suspect_commits(z: NDArray[np.float64], c_s: float) -> int:
    """The m (1..SUSPECT_TIP) whose |mean z|·√m passes c_s most, 0 when none does."""
    score = [abs(float(z[-m:].mean())) * math.sqrt(m) for m in range(1, min(SUSPECT_TIP, z.size) + 1)]
    best = int(np.argmax(score))
    return best + 1 if score[best] > c_s else 0


def _confirmation(z: NDArray[np.float64], c_m: tuple[float, ...]) -> tuple[int, float] | None:
    """(m, c_m) of the confirmed new level that starts earliest while every commit from
    its start on is on its side, or None: more than half of the last m beyond c_m."""
    best = None
    for i, c in enumerate(c_m):
        m = SUSPECT_TIP + 1 + i
        tip = z[-m:]
        for sign in (1.0, -1.0):
            if (sign * tip > c).sum() > m // 2 and sign * tip[0] > c:
                best = (m, c)
    return best


def replay(values: ArrayLike, *, since: int = 0, first: int | None = None,
           false_rate: float = FALSE_RATE_PER_1000) -> list[TipFinding]:
    """The look a robot made at each commit from ``first`` (default: the first it could
    decide at) to the newest: element i is the look when commit first+i was the newest."""
    x = np.asarray(values, dtype=float).reshape(-1)
    begin = since + MIN_HISTORY + 1 if first is None else first
    return [look(x[:end + 1], since=since, false_rate=false_rate) for end in range(begin - 1, x.size)]
