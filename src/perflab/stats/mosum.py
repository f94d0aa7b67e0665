"""Robust multiscale MOSUM change-point search, calibrated to a false-alarm rate per point.

`search(x, rate=...)` returns the change points (`Detection`: index, kind "mean" or
"spread", p-value corrected for the search) of a series, expecting at most ``rate`` false
points per 1,000 points of change-free noise with short memory (autocorrelation, trends,
seasons, heavy tails and outliers included; long memory is not calibrated). Moving-sum
differences (Eichinger & Kirch 2018) of Hampel-filtered values, standardised by the
noise's own variogram, thresholds from Siegmund & Yakir's (2007) tail of their maximum;
segments are at least MIN_SEGMENT long. Positions are indices into the finite values given.
Method: docs/methods.md (mosum); figures and what was tried: bench/README.md, "Method history".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from perflab.stats import selfnormalised
from perflab.stats.mosum_noise import (
    HAMPEL_CLIP,
    HAMPEL_HALF,
    MEMORY,
    hac_variance,
    hampel,
    local_median,
    long_run_variance,
    mosum_sd,
    robust_sd,
    running_median,
    thin,
    variogram,
)
from perflab.stats.mosum_tail import normal_quantile, small_sample_factor, tail, threshold

#: The shortest segment reported: a longer run than the Hampel median can remove.
MIN_SEGMENT = HAMPEL_HALF + 1
#: The smallest and largest MOSUM half-windows; the largest bounds what a trend can fake.
MIN_WINDOW = 8
MAX_WINDOW = 256
#: The first look (`_steps`) searches windows up to this: its candidates only serve to take
#: the steps out of the variogram (lags up to MEMORY), and a step that only a wider window
#: finds is too small to inflate those lags (bench/README.md, "mosum's calibration").
FIRST_LOOK = 4 * MEMORY
#: The confirmation (`_confirmed`) detrends by the series' common slope only where that
#: slope is beyond this many of its standard errors; a trend nearer 0 is taken as none.
TREND_T = 3.0
#: Default false-alarm rate: expected false change points per 1,000 points of noise.
FALSE_RATE_PER_1000 = 0.2
#: An excursion shorter than this (two smallest windows) that returns to the level it left
#: is a transient -- a longer outlier run than the Hampel filter removes -- not two changes.
TRANSIENT = 2 * MIN_WINDOW


@dataclass(frozen=True)
class Detection:
    """One change found by `search`: position (first index of the new regime) and test."""

    index: int
    kind: str          # "mean" or "spread"
    window: int        # h of the scale that found it
    statistic: float   # standardised |T|
    magnitude: float   # trend-corrected mean(after) − mean(before) of the clipped values
    sd: float          # the null sd of that difference (from the variogram)
    p_value: float     # search-corrected tail probability


def windows(n: int) -> list[int]:
    """Half-windows used on n points: 8, 16, ... while 6h <= n; one of n//5 for 10..47 points."""
    out, h = [], MIN_WINDOW
    while 6 * h <= n and h <= MAX_WINDOW:
        out.append(h)
        h *= 2
    if not out and n >= 10:
        out = [n // 5]  # a short history: one window, as wide as leaves room to search
    return out


def tau_count(n: int, h: int) -> int:
    return n - 2 * h + 1


def _level(d: NDArray[np.float64], limit: float) -> float:
    """The level of D outside the bumps of steps: its median, recomputed without the values
    more than `limit` from it (a linear trend's b·h; 0 without a trend). A plain median is
    pulled toward a bump that covers much of a short series and then fakes steps beside it;
    short-lag slopes are too imprecise once multiplied by a wide window."""
    d = thin(d)
    level = float(np.median(d))
    inside = np.ones(d.size, dtype=bool)
    for _ in range(3):
        now = np.abs(d - level) <= limit
        if now.sum() < d.size // 4 or np.array_equal(now, inside):
            break  # too little left, or the same values as the last median: settled
        inside = now
        level = float(np.median(d[inside]))
    return level


def _locate(s: NDArray[np.float64], peak: int, h: int, n: int) -> int:
    """The split of [peak−h, peak+h) with the largest standardised mean difference (the
    least-squares location of one step): sharper than the MOSUM peak, which noise shifts."""
    lo, hi = max(0, peak - h), min(n, peak + h)
    t = np.arange(lo + 1, hi)
    left, right = (s[t] - s[lo]) / (t - lo), (s[hi] - s[t]) / (hi - t)
    score = np.abs(right - left) * np.sqrt((t - lo) * (hi - t) / (hi - lo))
    return int(t[np.argmax(score)])


def _scan(z: NDArray[np.float64], kind: str, alpha: float, tests: int,
          v: NDArray[np.float64] | None = None, cache: dict[str | int, NDArray[np.float64]] | None = None,
          liberal: bool = False) -> list[Detection]:
    """Detections of one statistic (z already robustified), smallest window first.

    `alpha` is this statistic's share of the false-alarm budget; `tests` the number of
    statistics searched (the p-values' Bonferroni factor with the window sizes); `v` the
    variogram that scales the test, to lag 2h of the largest window (default z's own);
    `cache` keeps what depends on z alone between the searches of one series; `liberal`
    scales by the MAD variogram and searches the windows up to FIRST_LOOK (a first look: its
    detections are only candidates, re-tested by search).
    """
    n = z.size
    scales = windows(n)
    if not scales or np.ptp(z) == 0.0:
        return []
    searched = len(scales)  # the Bonferroni factor, the same in both looks
    if liberal:
        scales = [h for h in scales if h <= FIRST_LOOK]  # the first is at most 9
    if v is None:
        v = variogram(z, 2 * scales[-1], mad=liberal)
    s = np.concatenate([[0.0], np.cumsum(z - np.median(z))])
    per_test = alpha / searched
    # Local noise: where the noise is wider than its median over the series (a change in
    # spread), the sd is widened in proportion, never narrowed, so a noisy stretch is not
    # taken for steps in the mean and quiet noise keeps the calibrated thresholds. Not for
    # the spread statistic: log|r|'s spread does not depend on the scale (the point of the
    # log), and widening it where the regimes meet hid the very change it looks for.
    cache = {} if cache is None else cache
    if "spread" not in cache:
        cache["spread"] = np.abs(z - running_median(z, HAMPEL_HALF))
    spread = cache["spread"]
    # values equal to their running median (its own, or one the Hampel filter set them to)
    # carry no spread: on a short series they were most values, and the median of the rest
    # of nothing widened every window
    overall = float(np.median(spread[spread > 0.0])) if np.any(spread > 0.0) else 0.0
    out: list[Detection] = []
    for h in scales:
        out += _scan_window(z, s, v, h, kind, per_test, searched * tests, out, cache, spread, overall)
    return out


def _scan_window(z: NDArray[np.float64], s: NDArray[np.float64], v: NDArray[np.float64], h: int, kind: str,
                 per_test: float, factor: int, out: list[Detection], cache: dict[str | int, NDArray[np.float64]],
                 spread: NDArray[np.float64], overall: float) -> list[Detection]:
    """The detections of half-window h (``s``: prefix sums of z less its median) at level
    ``per_test``, away from those ``out`` found at smaller scales; p-values times ``factor``."""
    from scipy.ndimage import maximum_filter1d
    n = z.size
    sd = mosum_sd(v, h)
    if not sd > 0.0:
        return []
    u = threshold(per_test, tau_count(n, h), h) * small_sample_factor(n)
    tau = np.arange(h, n - h + 1)
    d = (s[2 * h:] - 2 * s[h:n - h + 1] + s[:n - 2 * h + 1]) / h  # at tau, tau ± h
    # The level is read away from the bumps of the steps found at smaller scales; where
    # they cover most of this scale's positions, it has nothing left to add.
    away = np.ones(d.size, dtype=bool)
    for o in out:  # |tau − index| < h, tau = h + position
        away[max(0, o.index - 2 * h + 1):max(0, o.index)] = False
    if away.sum() < d.size // 4:
        return []
    baseline = np.full(d.size, _level(d[away], sd * u))
    wider: float | NDArray[np.float64] = 1.0
    if overall > 0.0 and kind == "mean":
        if h not in cache:
            cache[h] = np.maximum(local_median(spread, h)[h:n - h + 1] / overall, 1.0)
        wider = cache[h]
    t = (d - baseline) / (sd * wider)
    a = np.abs(t)
    # local maxima over ±h/2 that exceed u: one candidate per bump
    peak = (a > u) & (a >= maximum_filter1d(a, size=h + 1, mode="nearest"))
    candidates = _away_from(np.flatnonzero(peak), tau, out, h)
    found: list[Detection] = []
    previous = -n
    for i in candidates:
        if tau[i] - previous < h:
            continue  # the same bump at this scale (candidates are in order)
        previous = int(tau[i])
        at = _locate(cache.get("located", s), int(tau[i]), h, n)
        p = min(1.0, tail(float(a[i]), tau.size, h) * factor)
        local_sd = sd * (wider[i] if isinstance(wider, np.ndarray) else wider)
        found.append(Detection(at, kind, h, float(a[i]), float(d[i] - baseline[i]), float(local_sd), p))
    return found


def _away_from(candidates: NDArray[np.intp], tau: NDArray[np.intp], out: list[Detection],
               h: int) -> NDArray[np.intp]:
    """The candidates at least h from every point already found (better located, at a smaller scale)."""
    if not out or not candidates.size:
        return candidates
    known = np.sort([o.index for o in out])
    pos = tau[candidates]
    right = np.searchsorted(known, pos)
    gap_right = np.abs(known[np.minimum(right, known.size - 1)] - pos)
    gap_left = np.abs(pos - known[np.maximum(right - 1, 0)])
    return np.asarray(candidates[np.minimum(gap_left, gap_right) >= h], dtype=np.intp)


def _drop_transients(x: NDArray[np.float64], found: list[Detection]) -> list[Detection]:
    """`found` (in order) less the pairs that bound a transient: an excursion shorter than
    TRANSIENT after which the series is back at its level before it -- the medians of up
    to 2·TRANSIENT values either side differ by less than half the excursion's height
    (its median less theirs). Shortest excursions first; the neighbours of a removed pair
    are paired anew. A size rule, not a test: on real series the levels around a burst
    differ "significantly" by fractions of a percent (slow drift), which says nothing
    about whether the burst was a change."""
    found = list(found)
    kept: set[tuple[int, int]] = set()
    while True:
        pairs = [(b.index - a.index, i) for i, (a, b) in enumerate(zip(found, found[1:]))
                 if b.index - a.index < TRANSIENT and (a.index, b.index) not in kept]
        if not pairs:
            return found
        _, i = min(pairs)
        a, b = found[i].index, found[i + 1].index
        lo = found[i - 1].index if i else 0
        hi = found[i + 2].index if i + 2 < len(found) else x.size
        before = float(np.median(x[max(lo, a - 2 * TRANSIENT):a]))
        after = float(np.median(x[b:min(hi, b + 2 * TRANSIENT)]))
        height = abs(float(np.median(x[a:b])) - (before + after) / 2)
        if abs(after - before) < height / 2:
            del found[i:i + 2]
        else:
            kept.add((a, b))  # a step with an overshoot: both points stand


def _common_slope(z: NDArray[np.float64], segs: list[tuple[int, int]]) -> tuple[float, float]:
    """The least-squares slope of z within the segments [a, b), each about its own level
    (the series' trend, which goes on across its steps), and Σ(t − t̄)² within them: the
    slope's variance is the noise's over it."""
    num = den = 0.0
    for a, b in segs:
        t = np.arange(a, b) - (a + b - 1) / 2
        num += float(np.dot(t, z[a:b]))
        den += float(np.dot(t, t))
    return (num / den if den > 0.0 else 0.0), den


def _confirmed(z: NDArray[np.float64], found: list[Detection], alpha: float) -> list[Detection]:
    """`found` (in order, of one statistic z) less the points whose two neighbouring
    segments do not differ: the weakest fails first, its segments merge, the rest are re-tested.

    The test: the segments' mean difference on top of their common slope (where beyond
    TREND_T of its se, its error then counted), in sds from the larger of the long-run
    variance of the variogram of z less every point found and `hac_variance` of the
    residuals about the current segments, against the Bonferroni bound over every split of
    the series, at the search's whole α (a filter only removes points: it spends nothing).
    Figures and what was tried: bench/README.md, "mosum's confirmation".
    """
    n = z.size
    # the noise without every point found, once: the fullest segmentation's serves every round
    floor = long_run_variance(_noise_variogram(z, {f.index for f in found}))
    u = normal_quantile(alpha / (2 * n))
    kept = list(found)
    while kept:
        bounds = np.array([0, *(f.index for f in kept), n])
        slope, stt = _common_slope(z, list(zip(bounds[:-1], bounds[1:])))
        y = z - slope * np.arange(n)
        length = np.diff(bounds)
        means = np.add.reduceat(y, bounds[:-1]) / length
        lrv = max(floor, hac_variance(y - np.repeat(means, length)))
        if not lrv > 0.0:
            return kept
        # With a trend, the difference's variance is the two means' and the slope's carried
        # over the distance between the segments' centres (t within a segment is orthogonal
        # to its mean): σ²·Δc²/Σ(t − t̄)², as large as the means' for a few long segments.
        # A slope within TREND_T of its se is no trend shown: the means are compared as
        # they are, without that cost.
        carried = np.zeros(length.size - 1)
        if abs(slope) * math.sqrt(stt / lrv) >= TREND_T:
            carried = np.diff((bounds[:-1] + bounds[1:] - 1) / 2) ** 2 / stt
        else:
            means = np.add.reduceat(z, bounds[:-1]) / length
        score = np.abs(np.diff(means)) / np.sqrt(lrv * (1.0 / length[:-1] + 1.0 / length[1:] + carried))
        weakest = int(np.argmin(score))
        if score[weakest] > u:
            break
        del kept[weakest]
    return kept


def _segment_steps(z: NDArray[np.float64], found: list[Detection], alpha: float,
                   tests: int, v: NDArray[np.float64], kind: str = "mean") -> list[Detection]:
    """One step more in each segment between the points found (the whole series when
    there are none), where the self-normalised test (`selfnormalised`: one step on top of
    the segment's own line) rejects at α·m/n for a segment of m of the n values
    (Bonferroni over the series' length). Fixed windows lose steps closer than 2h and see
    little of a short series; the test needs no noise estimate (docs/methods.md). The
    reported sd of the step is from the long-run variance (`long_run_variance` of v).
    """
    n = z.size
    bounds = [0, *sorted(f.index for f in found), n]
    segments = [(a, b) for a, b in zip(bounds, bounds[1:]) if b - a >= 2 * MIN_SEGMENT]
    if not segments:
        return []
    # all segments in one call: a call per segment cost ~75 µs of small-array overhead
    lengths = np.array([b - a for a, b in segments], dtype=np.intp)
    g, at, y = selfnormalised.one_step(np.concatenate([z[a:b] for a, b in segments]), lengths)
    lrv = long_run_variance(v)
    out = []
    start = 0
    for (a, b), gi, k in zip(segments, g.tolist(), at.tolist()):
        m = b - a
        p = selfnormalised.p_value(gi, m)
        if p < alpha * m / n:
            gap = float(y[start + k:start + m].mean() - y[start:start + k].mean())
            sd = math.sqrt(max(lrv, 0.0) * (1.0 / k + 1.0 / (m - k)))
            out.append(Detection(a + k, kind, m, math.sqrt(gi), gap, sd, min(1.0, p * n / m * tests)))
        start += m
    return out


def _without_steps(z: NDArray[np.float64], cuts: set[int]) -> NDArray[np.float64]:
    """z less its median between consecutive cuts (cuts closer than MIN_SEGMENT to the
    previous one are skipped: a tiny segment less its own median would hide noise)."""
    bounds = [0]
    for c in sorted(cuts):
        if c - bounds[-1] >= MIN_SEGMENT and z.size - c >= MIN_SEGMENT:
            bounds.append(c)
    bounds.append(z.size)
    return np.concatenate([z[a:b] - np.median(z[a:b]) for a, b in zip(bounds, bounds[1:])])


def _noise_variogram(z: NDArray[np.float64], cuts: set[int]) -> NDArray[np.float64]:
    """The variogram of z less its level between `cuts` (`_without_steps`), to lag 2h of
    the widest window: the noise the scans and the confirmation are scaled by."""
    return variogram(_without_steps(z, cuts), 2 * max(windows(z.size), default=MIN_WINDOW))


def _steps(z: NDArray[np.float64], kind: str, share: float, parts: int,
           edges: NDArray[np.float64] | None = None) -> list[Detection]:
    """The steps in the mean of z (already robustified) labelled `kind`; the scans locate
    each step in ``edges`` (the series robustified keeping its steps' edges: `hampel`) when given.

    A first look with the MAD variogram at windows up to FIRST_LOOK gives candidates; the
    noise is then estimated without every candidate (winsorised variogram, each segment
    less its median) and the series searched again, plus one more step per segment
    between the points (`_segment_steps`). `share` is the α of each of the two passes,
    `parts` the Bonferroni factor of the p-values.
    """
    cache: dict[str | int, NDArray[np.float64]] = {}
    if edges is not None:
        cache["located"] = np.concatenate([[0.0], np.cumsum(edges)])
    found = _scan(z, kind, share, parts, cache=cache, liberal=True)
    # no candidate: the series' best single split stands in for one, so that a step
    # there does not count as noise in the variogram
    split = {f.index for f in found} or {_best_split(z)}
    v = _noise_variogram(z, split)
    if found or max(windows(z.size), default=0) > FIRST_LOOK:  # else nothing more to find
        found = _scan(z, kind, share, parts, v=v, cache=cache)
    more = _segment_steps(z, found, share, parts, v, kind)
    found += [f for f in more if all(abs(f.index - o.index) >= MIN_SEGMENT for o in found)]
    return found


def _best_split(z: NDArray[np.float64]) -> int:
    """The least-squares location of one step in z (the standardised CUSUM's argmax)."""
    return int(selfnormalised.best_split(z, np.array([z.size], dtype=np.intp))[0])


def log_spread(x: NDArray[np.float64], cuts: list[int]) -> NDArray[np.float64]:
    """log|x[t] − x[t−1]| at each t (t = 0: as t = 1), the difference across each of `cuts`
    (the level changes) replaced by its successor's, floored at a tenth of the differences'
    robust sd (log 0 is not a spread: quantised values repeat), then Hampel-filtered.

    A change in the noise's spread by a factor f at t is a step of log f in the mean of
    this series at t, whatever the level and its trend (a difference removes both, and
    shares a value with its neighbours only: memory of one lag, where residuals about a
    running median share the median across its whole window and so looked like long
    memory). A spike is a run of two wild differences, and the Hampel filter removes runs
    of up to HAMPEL_HALF: a single spike moves nothing.
    """
    r = np.abs(np.diff(x, prepend=x[:1]))
    r[0] = r[1] if r.size > 1 else 0.0
    for c in cuts:
        if 0 < c < r.size - 1:
            r[c] = r[c + 1]
    scale = robust_sd(r)
    if not scale > 0.0:
        return np.zeros(x.size)
    y = np.log(np.maximum(r, scale / 10))
    # Hampel's identifier on the upper side only: the floor bounds the lower tail, and
    # replacing low values by running medians (correlated) made the noise of this series
    # positively correlated, its long-run variance 1.4 instead of 1.17 (Gaussian noise).
    # Mirrored ends: a spike at the first value is two wild differences there, which
    # "nearest" would repeat into the median.
    med = running_median(y, HAMPEL_HALF, mode="mirror")
    limit = HAMPEL_CLIP * robust_sd(y - med)
    return np.where(y - med > limit, med, y)


def _apart(found: list[Detection], min_segment: int) -> list[Detection]:
    """`found` less each point closer than min_segment to a more significant one (in order
    of significance)."""
    kept: list[Detection] = []
    for f in sorted(found, key=lambda f: (f.p_value, -f.statistic)):
        if all(abs(f.index - k.index) >= min_segment for k in kept):
            kept.append(f)
    return kept


def _kept(x: NDArray[np.float64], z: NDArray[np.float64], found: list[Detection], min_segment: int,
          alpha: float, transients: bool = True) -> list[Detection]:
    """Of the points found in z (the robustified x): those inside [min_segment,
    n − min_segment], the stronger of two closer than min_segment, less the transients of
    x (with ``transients``), confirmed in z (`_confirmed`)."""
    n = x.size
    kept = sorted(_apart([f for f in found if min_segment <= f.index <= n - min_segment], min_segment),
                  key=lambda f: f.index)
    if transients:
        kept = _drop_transients(x, kept)
    return _confirmed(z, kept, alpha) if kept else kept


def search(x: NDArray[np.float64], *, rate: float = FALSE_RATE_PER_1000,
           min_segment: int = MIN_SEGMENT, spread: bool = False, transients: bool = True) -> list[Detection]:
    """Changes in the mean (and, with `spread`, in the noise's spread) of finite x, in order.

    `rate` is the false-alarm rate the thresholds are set for: expected false change points
    per 1,000 points of change-free noise, α = 1 − exp(−rate·n/1000) per series, half to
    each statistic when `spread`. Segments are at least `min_segment` long: of two closer
    points the less significant goes (of either kind).
    """
    n = x.size
    if n < 2 * min_segment or np.ptp(x) == 0.0:
        return []
    alpha = -math.expm1(-rate * n / 1000.0)
    z, located = hampel(x)
    tests = 2 if spread else 1
    # α is split between the statistics, and for each half to the MOSUM scans, half to the
    # segment pass (`_segment_steps`)
    share, parts = alpha / tests / 2, tests * 2
    found = _steps(z, "mean", share, parts, located)
    # the level's points go through the transient rule on x itself (its medians)
    kept = _kept(x, z, found, min_segment, alpha / tests, transients)
    if spread:
        y = log_spread(x, [k.index for k in kept])
        found = _steps(y, "spread", share, parts)
        # of a level's point and a spread's closer than a segment, the less significant
        # goes: a spread change also widens the level's statistics, which may then see a
        # step at the same place
        kept = _apart(kept + _kept(y, y, found, min_segment, alpha / tests), min_segment)
    return sorted(kept, key=lambda f: f.index)
