"""Change points of a commit series: one value per commit (the centre of its runs).

A commit series is not a series of samples. Samples of one command follow the machine:
a burst of load that comes and goes is noise, and mosum drops it (`mosum.TRANSIENT`).
Commits are versions of the code: an excursion of a few commits that comes back is a
regression and its fix, a level reached over several commits is a change spread over them.
So on commits (`changes`):

scale      positive values (times, rates) are read as their logs (`ratio_scale`): their
           noise grows with the level, a change is a ratio.
detection  mosum with its transient rule off (`mosum.search(transients=False)`), then binary
           segmentation between its points (`more_steps`: the self-normalised one-step test
           of each segment, or of the parts beside its best split, or Kendall's trend test
           of the segment, together at mosum's rate again).
           Error rates add (Bonferroni): at most 2 x mosum's 0.2 false points per 1,000
           points of change-free noise with short memory (docs/change-detection.md).
placement  each change is placed in its neighbouring segments where the commits deviate least
           from the median of their side (least absolute deviations: the least-squares
           place of one step made robust): one commit out of line does not move it.
p          `commit_p`: Welch's t-test between the commits either side (each commit one
           value: its runs are not independent of each other, the commits are), from the
           neighbouring change's new level to this one's first commit and from its new
           level to the next change. Not corrected for the search that placed the change.
spread     a change whose commits lie clearly between its two levels (each beyond
           BETWEEN_Z robust sds of the commits' noise from both, and a material share of
           the change, MATERIAL_SHARE, from each) is spread over them, and
           consecutive changes in one direction whose commits between lie between the outer
           levels are one change: `Spread` names each commit's share of the whole.
resolution a change is told only where both its sides are levels: a side with a commit of
           exactly 0 (`resolution.at_floor`) is the metric's resolution, not a level, and
           the change is dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from perflab.model.report.bisect import MATERIAL_SHARE
from perflab.stats.resolution import at_floor

#: A commit is between two levels when it is beyond this many of the commits' robust noise
#: sds from both: the one-sided normal 0.1% point, so a commit at one of the levels is taken
#: for between with at most a 0.1% chance (a change of 10 sds over 3 commits is then told
#: as spread about half the time: its commits between sit 3.3 sds from a level).
BETWEEN_Z = 3.090


@dataclass(frozen=True)
class CommitChange:
    """A change of a commit series: ``index`` the first commit of the new level (for a spread
    change the first commit that carries part of it); ``p_value`` `commit_p`'s; ``parts``
    (index, share of the whole change) of each commit of a spread change, () for one step;
    ``last`` the first commit at the new level (``index`` for one step)."""

    index: int
    p_value: float
    parts: tuple[tuple[int, float], ...] = ()

    @property
    def last(self) -> int:
        return self.parts[-1][0] if self.parts else self.index


def noise_sd(x: NDArray[np.float64]) -> float:
    """The commits' noise sd, robustly: the MAD of the first differences over √2 (a step is
    one large difference among many, an outlying commit two)."""
    from perflab.stats.mosum_noise import robust_sd
    return robust_sd(np.diff(x)) / math.sqrt(2.0) if x.size > 2 else math.nan


def ratio_scale(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """The values the search reads: log x when all are positive (times, rates: their noise
    grows with the level, as a machine's other load multiplies a time, so a slow level's
    spread read on the raw scale hides a step or makes one of its own commits "between"
    the levels), else x as it is."""
    return np.log(x) if x.size and bool(np.all(x > 0.0)) else x


def commit_p(before: NDArray[np.float64], after: NDArray[np.float64]) -> float:
    """Welch's t-test (bounded df, `welch_t`) between the commits either side of a change:
    each commit one value, so the p is one that this many commits can support (the runs of
    one commit share its build and its moment: pooled as independent samples they gave
    p < 1e-300 on 10 commits). NaN with fewer than 2 commits a side."""
    from perflab.stats.significance import welch_t
    return float(welch_t(before, after).p_value)


def _prefix_lad(v: list[float]) -> NDArray[np.float64]:
    """Entry i: Σ|v[j] − median(v[:i+1])| over j <= i (two heaps: O(m log m))."""
    import heapq
    low: list[float] = []    # the lower half, negated (a max-heap)
    high: list[float] = []
    sum_low = sum_high = 0.0
    out = np.empty(len(v))
    for i, a in enumerate(v):
        if not low or a <= -low[0]:
            heapq.heappush(low, -a)
            sum_low += a
        else:
            heapq.heappush(high, a)
            sum_high += a
        if len(low) > len(high) + 1:
            b = -heapq.heappop(low)
            sum_low -= b
            heapq.heappush(high, b)
            sum_high += b
        elif len(high) > len(low):
            b = heapq.heappop(high)
            sum_high -= b
            heapq.heappush(low, -b)
            sum_low += b
        med = -low[0]
        out[i] = (sum_high - med * len(high)) + (med * len(low) - sum_low)
    return out


def _place(x: NDArray[np.float64], lo: int, at: int, hi: int) -> int:
    """The split of x[lo:hi] with the least absolute deviations of each side from its median
    (ties: the nearest to ``at``): the least-squares place of one step made robust, so one
    commit out of line does not move it, nor do a few commits of the other level."""
    part = x[lo:hi].tolist()
    m = len(part)
    if m < 2 or not lo < at < hi:
        return at
    left = _prefix_lad(part)[:-1]                # splits k = 1 .. m−1
    right = _prefix_lad(part[::-1])[::-1][1:]
    cost = left + right
    best = np.flatnonzero(cost <= cost.min() + 1e-9 * (abs(cost.min()) + 1.0)) + 1 + lo
    return int(best[np.argmin(np.abs(best - at))])


def placed(x: NDArray[np.float64], found: list[int]) -> list[int]:
    """The points ``found`` (in any order, duplicates allowed) each placed in its
    neighbouring segments (`_place`), left to right; a point placed onto its predecessor goes."""
    cuts = sorted({i for i in found if 0 < i < x.size})
    out: list[int] = []
    for j, at in enumerate(cuts):
        lo = out[-1] if out else 0
        hi = cuts[j + 1] if j + 1 < len(cuts) else x.size
        if at <= lo:
            continue
        k = _place(x, lo, at, hi)
        if k > lo and (not out or k != out[-1]):
            out.append(k)
    return out


def _between(v: float, low: float, high: float, margin: float) -> bool:
    """v beyond ``margin`` from both levels, between them (low < high, in the change's sense)."""
    return v - low > margin and high - v > margin


def _material(v: float, before: float, after: float) -> bool:
    """v (a value as measured, not its log) a material part of the way from ``before`` to
    ``after`` and as far from ``after``: MATERIAL_SHARE of the change, bisect's bar for a
    commit that carries part of it (on a quiet machine a first slow commit 1.5% short of a
    4x step's level is beyond 3 sds of the noise from it, but carries nothing)."""
    share = (v - before) / (after - before) if after != before else 0.0
    return MATERIAL_SHARE <= share <= 1.0 - MATERIAL_SHARE


def _levels(x: NDArray[np.float64], lo: int, first: int, last: int, hi: int) -> tuple[float, float]:
    before = x[lo:first] if first > lo else x[lo:first + 1]
    after = x[last:hi] if hi > last else x[last - 1:hi]
    return float(np.median(before)), float(np.median(after))


def _extent(z: NDArray[np.float64], x: NDArray[np.float64], lo: int, at: int, hi: int,
            margin: float) -> tuple[int, int]:
    """(first, last) of the change placed at ``at`` in [lo, hi): the commits before ``at``
    and from it on that lie clearly between the levels either side (``z`` beyond ``margin``
    of both, ``x`` a material part of the way: `_material`), and the first commit after
    them (at the new level); (at, at) for one step. The levels are re-read without the
    commits between once."""
    first, last = at, at
    for _ in range(2):
        levels, raw = _levels(z, lo, first, last, hi), _levels(x, lo, first, last, hi)
        sign = 1.0 if levels[1] >= levels[0] else -1.0
        first = at
        while first - 1 > lo and _part(z[first - 1], x[first - 1], sign, levels, raw, margin):
            first -= 1
        last = at
        while last < hi - 1 and _part(z[last], x[last], sign, levels, raw, margin):
            last += 1
    return first, last


def _part(zi: float, xi: float, sign: float, levels: tuple[float, float], raw: tuple[float, float],
          margin: float) -> bool:
    """A commit (``zi`` as read, ``xi`` as measured) clearly between the change's ``levels``
    (``sign``: +1 when it goes up) and carrying a material part of it (``raw`` levels)."""
    return _between(sign * zi, sign * levels[0], sign * levels[1], margin) and _material(xi, *raw)


def _merged(z: NDArray[np.float64], x: NDArray[np.float64], cuts: list[int], margin: float) -> list[int]:
    """``cuts`` less each point that continues the one before it: the same direction, and the
    commits between the two (their median) clearly between the levels before the first and
    after the second (as `_extent` reads a commit) -- one change reached in steps, as a
    spread change."""
    cuts = list(cuts)
    i = 0
    while i + 1 < len(cuts):
        lo = cuts[i - 1] if i else 0
        hi = cuts[i + 2] if i + 2 < len(cuts) else z.size
        a, b = cuts[i], cuts[i + 1]
        before, mid, after = (float(np.median(z[s:e])) for s, e in ((lo, a), (a, b), (b, hi)))
        raw = [float(np.median(x[s:e])) for s, e in ((lo, a), (a, b), (b, hi))]
        sign = 1.0 if after >= before else -1.0
        if _between(sign * mid, sign * before, sign * after, margin) and _material(raw[1], raw[0], raw[2]) \
                and _not_a_level(sign * z[a:b]):
            del cuts[i + 1]
        else:
            i += 1
    return cuts


def _not_a_level(v: NDArray[np.float64]) -> bool:
    """The commits v (oriented: the change goes up) are no level of their own: too few to
    show one (3 or fewer: no trend test can reject at 5% on them), or rising by Kendall's
    tau at 5% one-sided. Two steps with a level between them stay two changes."""
    from scipy.stats import kendalltau
    if v.size <= 3:
        return True
    return bool(kendalltau(np.arange(v.size), v, alternative="greater").pvalue < 0.05)


def _parts(x: NDArray[np.float64], first: int, last: int, before: float,
           after: float) -> tuple[tuple[int, float], ...]:
    """Each commit's share of a change from ``before`` to ``after`` over first .. last: its
    step from the commit before (``before`` for the first; the last reaches ``after``)."""
    if last <= first or after == before:
        return ()
    path = [before, *x[first:last].tolist(), after]
    return tuple((first + i, (path[i + 1] - path[i]) / (after - before)) for i in range(last - first + 1))


def _one_step(x: NDArray[np.float64], a: int, b: int, alpha: float) -> int | None:
    """The step in x[a:b] when the self-normalised test (`selfnormalised`, the segment less
    its own line) rejects at ``alpha``; None otherwise, or when x[a:b] is too short."""
    from perflab.stats import selfnormalised
    m = b - a
    if m < 2 * selfnormalised.MIN_PART:
        return None
    g, k, _ = selfnormalised.one_step(x[a:b], np.array([m], dtype=np.intp))
    return a + int(k[0]) if selfnormalised.p_value(float(g[0]), m) < alpha and 0 < int(k[0]) < m else None


def _segment_step(x: NDArray[np.float64], a: int, b: int, alpha: float) -> int | None:
    """One more step in x[a:b] at ``alpha``: the segment's own (at half of it), else one in
    either part beside its best single split (an eighth each: the parts see an excursion
    that comes back, which one step over the whole segment fits badly), else a trend
    (a quarter: Kendall's tau of the commits against their order, `_trend_p`; a trend
    across commits is a change spread over them, placed where one step would be)."""
    from perflab.stats import selfnormalised
    found = _one_step(x, a, b, alpha / 2)
    if found is None and b - a >= 2 * selfnormalised.MIN_PART:
        split = a + int(selfnormalised.best_split(x[a:b], np.array([b - a], dtype=np.intp))[0])
        found = _one_step(x, a, split, alpha / 8)
        found = _one_step(x, split, b, alpha / 8) if found is None else found
        if found is None and _trend_p(x[a:b]) < alpha / 4:
            found = _place(x, a, split, b)
    return found


def _trend_p(v: NDArray[np.float64]) -> float:
    """Kendall's tau test of v against its order, two-sided, its variance widened by
    (1 + ρ)/(1 − ρ) for the lag-1 autocorrelation ρ >= 0 of v about its least-squares line
    (the AR(1) correction: a machine's drift over the commits' runs is correlated noise,
    which the independent test reads as a trend)."""
    from scipy.special import ndtr
    from scipy.stats import kendalltau
    m = v.size
    t = np.arange(m, dtype=float)
    tau = float(kendalltau(t, v).statistic)
    if not math.isfinite(tau):
        return 1.0
    r = v - np.polyval(np.polyfit(t, v, 1), t)
    rho = float(np.dot(r[1:], r[:-1]) / np.dot(r, r)) if np.dot(r, r) > 0.0 else 0.0
    rho = min(max(rho, 0.0), 0.95)
    sd = math.sqrt(2.0 * (2 * m + 5) / (9.0 * m * (m - 1)) * (1 + rho) / (1 - rho))
    return float(2.0 * ndtr(-abs(tau) / sd))


def more_steps(x: NDArray[np.float64], cuts: list[int], alpha: float) -> list[int]:
    """``cuts`` and the steps binary segmentation adds between them: each segment of m of
    the n commits tested at alpha·m/n (`_segment_step`: Bonferroni over the series, as
    mosum's own segment pass), again after each step found, until none is."""
    cuts = sorted(set(cuts))
    while True:
        bounds = [0, *cuts, x.size]
        new = {k for a, b in zip(bounds, bounds[1:])
               if (k := _segment_step(x, a, b, alpha * (b - a) / x.size)) is not None}
        if not new - set(cuts):
            return cuts
        cuts = sorted(set(cuts) | new)


def changes(x: NDArray[np.float64], *, found: list[int] | None = None,
            rate: float | None = None) -> list[CommitChange]:
    """The changes of the commit series x (finite values in commit order): see the module.
    ``found`` replaces the detection by these candidate points; ``rate`` is mosum's."""
    from perflab.stats.mosum import FALSE_RATE_PER_1000, search
    z = ratio_scale(x)
    if found is None:
        rate = rate or FALSE_RATE_PER_1000
        found = [f.index for f in search(z, rate=rate, transients=False)]
        found = more_steps(z, found, -math.expm1(-rate * z.size / 1000.0))
    cuts = _between_levels(x, placed(z, found))
    if not cuts:
        return []
    margin = BETWEEN_Z * noise_sd(z)
    if math.isfinite(margin) and margin > 0.0:
        cuts = _merged(z, x, cuts, margin)
    out = []
    for j, at in enumerate(cuts):
        lo = cuts[j - 1] if j else 0
        hi = cuts[j + 1] if j + 1 < len(cuts) else x.size
        parts: tuple[tuple[int, float], ...] = ()
        first = last = at
        if math.isfinite(margin) and margin > 0.0:
            first, last = _extent(z, x, lo, at, hi, margin)
            before, after = _levels(x, lo, first, last, hi)
            parts = _parts(x, first, last, before, after)
            if not parts:
                first = last = at
        out.append(CommitChange(first, commit_p(x[lo:first], x[last:hi]), parts))
    return out


def _between_levels(x: NDArray[np.float64], cuts: list[int]) -> list[int]:
    """``cuts`` without those a side of which is at the metric's resolution
    (`resolution.at_floor`), each side read between the cuts kept."""
    kept = list(cuts)
    while True:
        for j, at in enumerate(kept):
            lo = kept[j - 1] if j else 0
            hi = kept[j + 1] if j + 1 < len(kept) else x.size
            if at_floor(x[lo:at]) or at_floor(x[at:hi]):
                del kept[j]
                break
        else:
            return kept
