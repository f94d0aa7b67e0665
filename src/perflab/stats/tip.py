"""The tip detector: do the newest commits of a history differ from the history before them?

A robot looks once per new commit. At a look, for each m = 1 .. MAX_TIP, the tip is the
newest m commits and the history the values before them (from ``since``, the last change
already known, at most the newest HISTORY_CAP, at least MIN_HISTORY), standardised by the
history's mean and sd: z = (x − mean) / sd. Two rules:

  suspect    m = 1 or 2: |mean of the m z|·√m > c_s, the m z on one side. One or two
             commits out of line; a single outlying commit is only this (the robot may
             rerun it).
  confirmed  m = 3 .. MAX_TIP: more than half of the m z, the first of them included, lie
             beyond c_m on one side -- a new level that holds from its first commit (a
             median rule: one spike among them neither makes nor breaks it).
  placement  a confirmed level starts where the standardised two-sample statistic
             (newest m against the history before them, m = 3 .. MAX_TIP) is largest in
             its direction: the least-squares place of one step (`split_statistic`).

Calibration (the per-look false-alarm rate): under the null (history and tip i.i.d.
normal, any mean and sd) the chance that a look raises either state is at most
``false_rate``/1,000: half to each rule, split evenly over the tests the look runs (fewer
while the series is young; Bonferroni: the tests overlap, so the true rate is below it). Each test's tail is
exact for its history length k: a scaled Student t with k − 1 df for the suspect rule;
for the median rule a binomial tail of normal tails, integrated over the law of the
history's mean and sd by quadrature. So the uncertainty of a short history is paid for in
its bars, which are higher the shorter it is. (A winsorised level and sd found more of the
steps in real noise but needed simulated bars, seconds per history length: bench/README.md.)
A robot that looks at every new commit then
raises at most false_rate false alerts per 1,000 commits of change-free normal noise,
however long it watches. Heavier tails, drift and memory in real noise raise it:
bench/tip_latency.py measures it on the real recordings.

Times and rates (all values positive, noise in proportion to the level) are read twice, on
their values and on their logs, each at half the rate: a step up stands out in the low
level's sd, a way back from a high level only on the logs. The stated rate then holds for
noise up to ~10% of the level, normal or lognormal, not at 20-30% (bench/tip_null.py).

Short histories are answered honestly: fewer than MIN_HISTORY values before the newest
commit, or no spread in them, is "undecided", not "no change".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache, partial

import numpy as np
from numpy.typing import ArrayLike, NDArray

from perflab.stats.resolution import at_floor

#: Expected false alerts per 1,000 looks (new commits) on change-free normal noise:
#: half the target of at most 1 per 1,000 on real recordings, the other half left for
#: the tails and memory of real noise, which the normal model does not hold.
FALSE_RATE_PER_1000 = 0.5
#: The newest commits read against the history at each look.
MAX_TIP = 10
#: Commits the suspect rule reads (m = 1 .. SUSPECT_TIP); the confirmation reads the rest.
SUSPECT_TIP = 2
#: The fewest history values a look decides on (below: "undecided"): an sd of 2 degrees of
#: freedom; the bars of so short a history are very high (a step of tens of sds).
MIN_HISTORY = 3
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


def _median_tail(c: float, m: int, k: int) -> float:
    """P(more than half of m tip z beyond c on one side), integrated over the history."""
    from scipy.special import ndtr
    means, sds, weights = _nodes(k)
    up = ndtr(-(means + c * sds))       # P(x > mean + c·sd)
    down = ndtr(means - c * sds)        # P(x < mean − c·sd)
    return float(weights @ (_majority(up, m) + _majority(down, m)))


def _majority(p: NDArray[np.float64], m: int) -> NDArray[np.float64]:
    """P(more than half of m independent trials succeed), each with chance p: the binomial's
    upper tail past m // 2 (scipy's bdtrc: a third of the time of summing its terms)."""
    from scipy.special import bdtrc
    return np.asarray(bdtrc(m // 2, m, p), dtype=float)


def _solve(tail: Callable[[float], float], alpha: float) -> float:
    """The c where the decreasing tail(c) is alpha (c in [0.5, 2000])."""
    from scipy.optimize import brentq
    return float(brentq(lambda c: math.log(max(tail(c), 1e-300)) - math.log(alpha), 0.5, 2000.0, xtol=1e-3))


def _shares(top: int, false_rate: float) -> tuple[float, float]:
    """(each suspect test's, each confirmation test's) share of the per-look rate when the
    look can read a tip of up to ``top`` commits: half to each rule (all to the suspect rule
    while the tip is too short to confirm), split evenly over the tests it runs."""
    alpha = false_rate / 1000.0
    suspects, confirms = min(top, SUSPECT_TIP), max(top - SUSPECT_TIP, 0)
    if not confirms:
        return alpha / suspects, 0.0
    return alpha / 2 / suspects, alpha / 2 / confirms


@lru_cache(maxsize=4096)
def suspect_bar(k: int, m: int, false_rate: float = FALSE_RATE_PER_1000, top: int = MAX_TIP) -> float:
    """c_s for a tip of m commits after a history of k, in a look of up to ``top`` commits
    (√m·(tip mean − history mean)/sd is a Student t with k − 1 df scaled by √(1 + m/k))."""
    from scipy.stats import t
    share, _ = _shares(top, false_rate)
    return float(t.isf(share / 2, k - 1) * math.sqrt(1.0 + m / k))


@lru_cache(maxsize=4096)
def confirm_bar(k: int, m: int, false_rate: float = FALSE_RATE_PER_1000, top: int = MAX_TIP) -> float:
    """c_m for a tip of m commits after a history of k, in a look of up to ``top`` commits."""
    _, share = _shares(top, false_rate)
    return _solve(partial(_median_tail, m=m, k=k), share)


def solve_long_history_bars(false_rate: float = FALSE_RATE_PER_1000) -> None:
    """Solve now the bars of every look at a history of HISTORY_CAP commits or more (the
    same for any longer one), at the rate of each scale a look reads: a server's first look
    at a long series then solves nothing (0.04 s on a first alert page)."""
    for rate in (false_rate, false_rate / 2):
        for m in range(1, MAX_TIP + 1):
            (suspect_bar if m <= SUSPECT_TIP else confirm_bar)(HISTORY_CAP, m, rate, MAX_TIP)


def _undecided(reason: str, k: int) -> TipFinding:
    return TipFinding(UNDECIDED, -1, 0, math.nan, math.nan, math.nan, math.nan, math.nan, k, reason)


def look(values: ArrayLike, *, since: int = 0, false_rate: float = FALSE_RATE_PER_1000) -> TipFinding:
    """The robot's look at the newest commits of ``values`` (one number per commit, NaN =
    not measured: skipped), with the history taken from index ``since`` on."""
    x = np.asarray(values, dtype=float).reshape(-1)
    where = np.flatnonzero(np.isfinite(x[max(since, 0):])) + max(since, 0)
    top = min(MAX_TIP, where.size - MIN_HISTORY)
    if top < 1:
        return _undecided(f"{where.size} values: a look needs {MIN_HISTORY} of history before "
                          "the newest commit", max(where.size - 1, 0))
    v = x[where]
    if not bool((v > 0).all()):
        return _at_resolution(_look_on(v, v, where, top, false_rate), x, max(since, 0))
    # Times and rates (positive; noise in proportion to the level) are read on their values,
    # where a step up stands out in the low level's sd, and on their logs, where a way back
    # is as large as the way up; each at half the rate (Bonferroni). Each half is exact only
    # for noise normal on its scale: the look keeps its rate for noise up to ~10% of the
    # level, not at 20-30% (bench/tip_null.py; the rules tried instead: bench/README.md).
    logs = np.log(v)
    on_values = _look_on(v, logs, where, top, false_rate / 2)
    on_logs = _look_on(logs, logs, where, top, false_rate / 2)
    rank = {CONFIRMED: 2, SUSPECT: 1}
    if rank.get(on_logs.status, 0) <= rank.get(on_values.status, 0):
        return on_values
    return replace(on_logs, level=math.exp(on_logs.level), level_after=float(np.median(v[-on_logs.commits:])))


def _at_resolution(found: TipFinding, x: NDArray[np.float64], since: int) -> TipFinding:
    """``found``, or undecided when its history or its new commits hold an exact zero: the
    metric at its resolution (`resolution.at_floor`), no level to step from or to."""
    if found.status in (SUSPECT, CONFIRMED) and (at_floor(x[since:found.start]) or at_floor(x[found.start:])):
        return _undecided("values of 0: the metric is at its resolution", found.history)
    return found


def _look_on(v: NDArray[np.float64], logs: NDArray[np.float64], where: NDArray[np.intp], top: int,
             false_rate: float) -> TipFinding:
    """The look on one scale of the values, ``v``; a confirmed level is placed on ``logs``."""
    confirmed = suspect = None
    for m in range(1, top + 1):
        past = v[:-m][-HISTORY_CAP:]
        level, sd = _level_and_sd(past)
        if not sd > 0.0:
            continue
        z = (v[-m:] - level) / sd
        if m <= SUSPECT_TIP:
            c = suspect_bar(past.size, m, false_rate, top)
            mean_z = float(z.mean())
            score = abs(mean_z) * math.sqrt(m)
            # the m commits out of line are out on one side: a commit on the other side of the
            # history is not part of a spike (a subset of the rule's region: its rate only falls)
            one_side = bool((z * math.copysign(1.0, mean_z) > 0).all())
            if score > c and one_side and (suspect is None or score / c > suspect[0]):
                suspect = (score / c, m, level, sd, c, past.size)
            continue
        c = confirm_bar(past.size, m, false_rate, top)
        for sign in (1.0, -1.0):
            if sign * z[0] > c and int((sign * z > c).sum()) > m // 2:
                confirmed = (sign, m, level, sd, c, past.size)
    if confirmed is not None:
        confirmed = _placed(v, logs, top, confirmed[0], false_rate)
    found, status = (confirmed, CONFIRMED) if confirmed else (suspect, SUSPECT)
    if found is None:
        past = v[:-1][-HISTORY_CAP:]
        level, sd = _level_and_sd(past)
        if not sd > 0.0:
            return _undecided("the history has no spread to measure a step against", past.size)
        return TipFinding(NONE, -1, 0, level, sd, math.nan, math.nan, suspect_bar(past.size, 1, false_rate, top),
                          past.size)
    _, m, level, sd, c, k = found
    tip = v[-m:]
    return TipFinding(status, int(where[-m]), m, level, sd, float(np.median(tip)),
                      float((tip.mean() - level) / sd), c, k)


def split_statistic(v: NDArray[np.float64], top: int) -> NDArray[np.float64]:
    """For m = 0 .. top (entry m; 0 and 1 .. SUSPECT_TIP are NaN): the standardised
    two-sample statistic (mean of the newest m − mean of the HISTORY_CAP values before them)
    ·√(a·m/(a + m)), a the history's size -- the likelihood ratio of one shift in a
    Gaussian mean; its argmax is the least-squares place of the step (binary segmentation's
    and the CUSUM estimator's)."""
    out = np.full(top + 1, np.nan)
    for m in range(SUSPECT_TIP + 1, top + 1):
        past, tip = v[:-m][-HISTORY_CAP:], v[-m:]
        out[m] = (tip.mean() - past.mean()) * math.sqrt(past.size * m / (past.size + m))
    return out


def _placed(v: NDArray[np.float64], logs: NDArray[np.float64], top: int, sign: float,
            false_rate: float) -> tuple[float, int, float, float, float, int]:
    """The confirmed new level's length m: where the split statistic in its direction is
    largest (the rule that confirmed it says a level holds, not where it starts), with the
    history's level and sd before it and the median rule's bar there. The statistic reads
    ``logs`` (of positive values: a step is a ratio, the noise about even either side)."""
    m = int(np.nanargmax(sign * split_statistic(logs, top)))
    past = v[:-m][-HISTORY_CAP:]
    level, sd = _level_and_sd(past)
    return sign, m, level, sd, confirm_bar(past.size, m, false_rate, top), past.size


def replay(values: ArrayLike, *, since: int = 0, first: int | None = None,
           false_rate: float = FALSE_RATE_PER_1000) -> list[TipFinding]:
    """The look a robot made at each commit from ``first`` (default: the first it could
    decide at) to the newest: element i is the look when commit first+i was the newest."""
    x = np.asarray(values, dtype=float).reshape(-1)
    begin = max(since, 0) + MIN_HISTORY + 1 if first is None else first
    return [look(x[:end + 1], since=since, false_rate=false_rate) for end in range(begin - 1, x.size)]


def watch(values: ArrayLike, *, since: int = 0, false_rate: float = FALSE_RATE_PER_1000) -> list[TipFinding]:
    """The looks of a robot that looked at every commit and remembers what it confirmed:
    element i is the look when commit since + MIN_HISTORY + i was the newest, its history
    starting at the last level confirmed before it (a level, once confirmed, is the history
    the next is read against; a suspect moves nothing)."""
    x = np.asarray(values, dtype=float).reshape(-1)
    looks: list[TipFinding] = []
    begin = max(since, 0)
    for end in range(max(since, 0) + MIN_HISTORY + 1, x.size + 1):
        found = look(x[:end], since=begin, false_rate=false_rate)
        looks.append(found)
        if found.status == CONFIRMED and found.start > begin:
            begin = found.start
    return looks


def confirmed_starts(values: ArrayLike, *, since: int = 0,
                     false_rate: float = FALSE_RATE_PER_1000) -> list[int]:
    """The new levels a robot looking at every commit confirmed (`watch`), in order."""
    starts: list[int] = []
    for found in watch(values, since=since, false_rate=false_rate):
        if found.status == CONFIRMED and found.start not in starts:
            starts.append(found.start)
    return starts
