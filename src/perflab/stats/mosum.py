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

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from perflab.stats import selfnormalised

#: Half-width of the Hampel filter's running median: runs of up to this many wild values
#: are outliers, not a regime.
HAMPEL_HALF = 4
#: Values beyond this many robust sds of the running median are outliers (Hampel's 3).
HAMPEL_CLIP = 3.0
#: The shortest segment reported: a longer run than the Hampel median can remove.
MIN_SEGMENT = HAMPEL_HALF + 1
#: The smallest and largest MOSUM half-windows; the largest bounds what a trend can fake.
MIN_WINDOW = 8
MAX_WINDOW = 256
#: Lags over which the noise's own autocorrelation is estimated (its memory); the first,
#: MAD look uses half of them. Measured on bench/changepoints_accuracy.py: 8 took seasons
#: (period 10-100) for steps, 32 lost steps 30 points apart in the inflated variance.
MEMORY = 16
#: The first look (`_steps`) searches windows up to this: its candidates only serve to take
#: the steps out of the variogram (lags up to MEMORY), and a step that only a wider window
#: finds is too small to inflate those lags. Measured: the same points on every family and
#: real set of bench/changepoints_accuracy.py, 0.4 ms less of 8.7 on 10,000 points; up to
#: 2·MEMORY lost one true step in 200 on bench/changepoints_vs_otava's series.
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


def _running_median(x: NDArray[np.float64], half: int, mode: str = "nearest") -> NDArray[np.float64]:
    """The median of the 2·half + 1 values around each; `mode` extends x past its ends
    (scipy.ndimage's): "nearest" repeats an end value, "mirror" reflects."""
    from scipy.ndimage import median_filter
    return np.asarray(median_filter(x, size=2 * half + 1, mode=mode), dtype=float)


def _robust_sd(v: NDArray[np.float64]) -> float:
    """1.4826·MAD, or the mean absolute deviation's Gaussian equivalent when the MAD is 0."""
    dev = np.abs(v - np.median(v))
    mad = float(np.median(dev))
    if mad > 0.0:
        return 1.4826 * mad
    return float(dev.mean()) * math.sqrt(math.pi / 2)


def hampel(x: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(x with values beyond HAMPEL_CLIP robust sds of the running median replaced by it
    (Hampel's identifier), the residuals)."""
    med = _running_median(x, HAMPEL_HALF)
    resid = x - med
    limit = HAMPEL_CLIP * _robust_sd(resid)
    return np.where(np.abs(resid) > limit, med, x), resid


#: Robust scales and centres of longer arrays are taken from this many evenly spaced
#: elements (their error is then ~2%): a 10,000-point series costs a fifth as much.
THIN = 2048


def _thin(v: NDArray[Any]) -> NDArray[Any]:
    return v[::-(-v.size // THIN)] if v.size > THIN else v


def _row_medians(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """np.median(a, axis=1, keepdims=True), from one partition."""
    w = a.shape[1]
    lo, hi = (w - 1) // 2, w // 2
    part = np.partition(a, [lo, hi], axis=1)
    return np.asarray((part[:, lo:lo + 1] + part[:, hi:hi + 1]) / 2, dtype=float)


def variogram(z: NDArray[np.float64], top: int, mad: bool = False) -> NDArray[np.float64]:
    """V(d) for d = 0..top: winsorised variance of the lag-d differences about their median
    (with `mad`, their squared 1.4826·MAD: blind to heavy tails, but a step touching many
    of the differences of a short series barely moves it).

    Centred on the median so a linear trend (a constant shift of the differences) does not
    count as noise; winsorised at 3 robust sds so the few differences that straddle a step
    count little. Estimated at lags up to MEMORY (and n/8, so that one step touches at
    most an eighth of the differences); beyond, the noise is taken as
    uncorrelated (V = its mean over MEMORY/2..MEMORY): long-lag estimates from a short
    series are too noisy to difference, and a long memory is what a trend is.
    """
    last = max(1, min(top, MEMORY // 2 if mad else MEMORY, z.size // 8))
    # all lags at once, over the same (thinned) start positions: one row per lag
    start = _thin(np.arange(z.size - last))
    lags = np.arange(1, last + 1)
    diff = z[start[None, :] + lags[:, None]] - z[start][None, :]
    # The winsorised variance is a mean over all the differences; its centre and clipping
    # scale only bound it, so past 1,024 differences a lag they come from ~512 of them (a
    # 5% error in a 3-sd clip moves the variance ~0.1%): half the variogram's time on long
    # series. The MAD variogram's scale is its variance, from all of them.
    few = diff if mad or diff.shape[1] <= 1024 else diff[:, ::-(-diff.shape[1] // 512)]
    centre = _row_medians(few)
    dev = np.abs(few - centre)
    scale = 1.4826 * _row_medians(dev)
    # quantised values: the MAD may be 0, then the mean absolute deviation's equivalent
    scale = np.where(scale > 0.0, scale, dev.mean(axis=1, keepdims=True) * math.sqrt(math.pi / 2))
    rows = scale[:, 0] ** 2 if mad else np.mean(np.clip(diff - centre, -3.0 * scale, 3.0 * scale) ** 2, axis=1)
    values = np.concatenate([[0.0], rows])
    if top <= last:
        return values
    sill = float(values[last // 2:].mean())
    return np.concatenate([values, np.full(top - last, sill)])


def mosum_sd(v: NDArray[np.float64], h: int) -> float:
    """Null sd of D_h from the variogram v (needs len(v) >= 2h): exact for stationary noise.

    Never below the sd for uncorrelated noise of the same variance (V/2, V averaged over
    lags h..2h−1): the alternating weights amplify sampling error, so a chance dip of the
    estimated V at one lag can shrink the sd tenfold on a short series (seen: Gaussian
    noise, 100 points, sd 0.04 instead of 0.44). Noise more predictable than white noise
    (negative autocorrelation) is then judged as white: conservative.
    """
    d = np.arange(1, 2 * h)
    w = np.where(d <= h, 2 * h - 3 * d, -(2 * h - d)).astype(float)  # Σ c_i c_{i+d}
    var = -float(np.dot(w, v[1:2 * h])) / (h * h)
    white = float(np.mean(v[h:2 * h])) / h
    var = max(var, white)
    return math.sqrt(var) if var > 0.0 else 0.0


def _pdf(u: float) -> float:
    return math.exp(-u * u / 2) / math.sqrt(2 * math.pi)


def _cdf(u: float) -> float:
    return 0.5 * math.erfc(-u / math.sqrt(2))


def _nu(x: float) -> float:
    """Siegmund's discrete-overshoot correction ν(x) (≈ exp(−0.583x) for small x)."""
    if x <= 0.0:
        return 1.0
    half = x / 2
    return (2 / x) * (_cdf(half) - 0.5) / (half * _cdf(half) + _pdf(half))


def tail(u: float, positions: int, h: int) -> float:
    """P(max |T| over `positions` MOSUM positions of half-window h > u) under the null."""
    c = 1.5 / h
    expected = 2.0 * positions * c * u * _pdf(u) * _nu(u * math.sqrt(2 * c))
    return float(-math.expm1(-expected)) if u > 0 else 1.0


@functools.lru_cache(maxsize=256)
def threshold(alpha: float, positions: int, h: int) -> float:
    """The u with tail(u) = alpha (bisection to 1e-9; tail falls in u past ~1)."""
    lo, hi = 1.0, 20.0
    for _ in range(45):
        mid = (lo + hi) / 2
        if tail(mid, positions, h) > alpha:
            lo = mid
        else:
            hi = mid
    return hi


def _small_sample(n: int) -> float:
    """Factor on a Gaussian threshold for a noise scale estimated from n points.

    T uses an estimated sd, so it is nearer Student's t with ~n/4 df (the variogram's lag
    differences overlap) than Gaussian; the Cornish-Fisher first term u(1 + (u²+1)/(4ν))
    at the per-position level u is the usual correction. Near 1 from a few hundred points.
    """
    df = max(n / 4.0, 2.0)
    u = 3.5  # the typical threshold; the factor is insensitive to it
    return 1.0 + (u * u + 1.0) / (4.0 * df)


def windows(n: int) -> list[int]:
    """Half-windows used on n points: 8, 16, ... while 6h <= n; one of n//5 for 10..47 points."""
    out, h = [], MIN_WINDOW
    while 6 * h <= n and h <= MAX_WINDOW:
        out.append(h)
        h *= 2
    if not out and n >= 10:
        out = [n // 5]  # a short history: one window, as wide as leaves room to search
    return out


def _local_median(v: NDArray[np.float64], h: int) -> NDArray[np.float64]:
    """About the median of v over [i−2h, i+2h) at each i, in O(n): the running median (5
    blocks) of the medians of blocks of h, spread back over the blocks' positions."""
    blocks = -(-v.size // h)
    padded = np.concatenate([v, np.full(blocks * h - v.size, v[-1])])  # the last block's own
    ordered = np.sort(padded.reshape(blocks, h), axis=1)  # for short rows 3x faster than np.median
    block = (ordered[:, (h - 1) // 2] + ordered[:, h // 2]) / 2
    return np.repeat(_running_median(block, 2), h)[:v.size]


def tau_count(n: int, h: int) -> int:
    return n - 2 * h + 1


def _level(d: NDArray[np.float64], limit: float) -> float:
    """The level of D outside the bumps of steps: its median, recomputed without the values
    more than `limit` from it (a linear trend's b·h; 0 without a trend). A plain median is
    pulled toward a bump that covers much of a short series and then fakes steps beside it;
    short-lag slopes are too imprecise once multiplied by a wide window."""
    d = _thin(d)
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
    `cache` keeps what
    depends on z alone between the searches of one series; `liberal` scales by the MAD
    variogram and searches the windows up to FIRST_LOOK (a first look: its detections are
    only candidates, re-tested by search).
    """
    from scipy.ndimage import maximum_filter1d
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
        cache["spread"] = np.abs(z - _running_median(z, HAMPEL_HALF))
    spread = cache["spread"]
    overall = float(np.median(spread))
    out: list[Detection] = []
    for h in scales:
        sd = mosum_sd(v, h)
        if not sd > 0.0:
            continue
        u = threshold(per_test, tau_count(n, h), h) * _small_sample(n)
        tau = np.arange(h, n - h + 1)
        d = (s[2 * h:] - 2 * s[h:n - h + 1] + s[:n - 2 * h + 1]) / h  # at tau, tau ± h
        # The level is read away from the bumps of the steps found at smaller scales; where
        # they cover most of this scale's positions, it has nothing left to add.
        away = np.ones(d.size, dtype=bool)
        for o in out:  # |tau − index| < h, tau = h + position
            away[max(0, o.index - 2 * h + 1):max(0, o.index)] = False
        if away.sum() < d.size // 4:
            continue
        baseline = np.full(d.size, _level(d[away], sd * u))
        wider: float | NDArray[np.float64] = 1.0
        if overall > 0.0 and kind == "mean":
            if h not in cache:
                cache[h] = np.maximum(_local_median(spread, h)[h:n - h + 1] / overall, 1.0)
            wider = cache[h]
        t = (d - baseline) / (sd * wider)
        a = np.abs(t)
        # local maxima over ±h/2 that exceed u: one candidate per bump
        peak = (a > u) & (a >= maximum_filter1d(a, size=h + 1, mode="nearest"))
        candidates = np.flatnonzero(peak)
        if out and candidates.size:  # already found, better located, at a smaller scale
            known = np.sort([o.index for o in out])
            pos = tau[candidates]
            right = np.searchsorted(known, pos)
            gap_right = np.abs(known[np.minimum(right, known.size - 1)] - pos)
            gap_left = np.abs(pos - known[np.maximum(right - 1, 0)])
            candidates = candidates[np.minimum(gap_left, gap_right) >= h]
        previous = -n
        for i in candidates:
            if tau[i] - previous < h:
                continue  # the same bump at this scale (candidates are in order)
            previous = int(tau[i])
            at = _locate(s, int(tau[i]), h, n)
            p = min(1.0, tail(float(a[i]), tau.size, h) * searched * tests)
            local_sd = sd * (wider[i] if isinstance(wider, np.ndarray) else wider)
            out.append(Detection(at, kind, h, float(a[i]), float(d[i] - baseline[i]),
                                 float(local_sd), p))
    return out


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


def long_run_variance(v: NDArray[np.float64]) -> float:
    """σ² Σ ρ(d) over all lags from the variogram v (V(d) = 2(γ(0) − γ(d)), γ(d) = 0 past
    its last lag, V there its sill): the variance of a mean of m values is this / m.
    Never below γ(0) (white noise), for the reason given in `mosum_sd`."""
    sill = float(np.mean(v[v.size // 2:]))
    gamma = (sill - v[1:]) / 2
    return max(sill / 2 + 2 * float(np.sum(gamma)), sill / 2)


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


def hac_variance(e: NDArray[np.float64]) -> float:
    """Long-run variance of the noise e (residuals, no steps): Bartlett lag-window estimate
    with Andrews' (1991) AR(1) plug-in bandwidth 1.1447·(4ρ²n/((1−ρ)²(1+ρ)²))^(1/3), on e
    winsorised at 3 robust sds (a few wild values are not memory).

    Unlike the variogram (`long_run_variance`, lags up to MEMORY), the window grows with
    the noise's own lag-1 correlation and with n, so slowly decaying correlation (AR(1)
    ρ = 0.9, long memory) is counted as far as the series can show it.
    """
    scale = _robust_sd(_thin(e))
    if not scale > 0.0:
        return 0.0
    e = np.clip(e - np.median(_thin(e)), -3 * scale, 3 * scale)
    e = e - e.mean()
    n = e.size
    g0 = float(np.dot(e, e)) / n
    if not g0 > 0.0:
        return 0.0
    rho = min(max(float(np.dot(e[1:], e[:-1])) / n / g0, 0.0), 0.97)  # 0.97: the window stays < n
    a1 = 4 * rho * rho / ((1 - rho) ** 2 * (1 + rho) ** 2)
    band = min(int(1.1447 * (a1 * n) ** (1 / 3)) + 1, n // 2)
    if band <= 32:  # a few lags: their products directly, cheaper than the FFT
        acov = np.array([g0 * n] + [float(np.dot(e[k:], e[:-k])) for k in range(1, band)]) / n
    else:
        f = np.fft.rfft(e, 2 * n)
        acov = np.fft.irfft(f * np.conj(f), 2 * n)[:band] / n
    w = 1.0 - np.arange(band) / band
    return float(acov[0] + 2 * np.dot(w[1:], acov[1:]))


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
    u = _normal_quantile(alpha / (2 * n))
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


def _normal_quantile(upper: float) -> float:
    """u with P(|N(0,1)| > u) = upper."""
    from scipy.special import ndtri
    return float(-ndtri(upper / 2))


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


def _steps(z: NDArray[np.float64], kind: str, share: float, parts: int) -> list[Detection]:
    """The steps in the mean of z (already robustified) labelled `kind`.

    A first look with the MAD variogram at windows up to FIRST_LOOK gives candidates; the
    noise is then estimated without every candidate (winsorised variogram, each segment
    less its median) and the series searched again, plus one more step per segment
    between the points (`_segment_steps`). `share` is the α of each of the two passes,
    `parts` the Bonferroni factor of the p-values.
    """
    cache: dict[str | int, NDArray[np.float64]] = {}
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
    scale = _robust_sd(r)
    if not scale > 0.0:
        return np.zeros(x.size)
    y = np.log(np.maximum(r, scale / 10))
    # Hampel's identifier on the upper side only: the floor bounds the lower tail, and
    # replacing low values by running medians (correlated) made the noise of this series
    # positively correlated, its long-run variance 1.4 instead of 1.17 (Gaussian noise).
    # Mirrored ends: a spike at the first value is two wild differences there, which
    # "nearest" would repeat into the median.
    med = _running_median(y, HAMPEL_HALF, mode="mirror")
    limit = HAMPEL_CLIP * _robust_sd(y - med)
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
          alpha: float) -> list[Detection]:
    """Of the points found in z (the robustified x): those inside [min_segment,
    n − min_segment], the stronger of two closer than min_segment, less the transients of
    x, confirmed in z (`_confirmed`)."""
    n = x.size
    kept = _apart([f for f in found if min_segment <= f.index <= n - min_segment], min_segment)
    kept = _drop_transients(x, sorted(kept, key=lambda f: f.index))
    return _confirmed(z, kept, alpha) if kept else kept


def search(x: NDArray[np.float64], *, rate: float = FALSE_RATE_PER_1000,
           min_segment: int = MIN_SEGMENT, spread: bool = False) -> list[Detection]:
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
    z, _ = hampel(x)
    tests = 2 if spread else 1
    # α is split between the statistics, and for each half to the MOSUM scans, half to the
    # segment pass (`_segment_steps`)
    share, parts = alpha / tests / 2, tests * 2
    found = _steps(z, "mean", share, parts)
    # the level's points go through the transient rule on x itself (its medians)
    kept = _kept(x, z, found, min_segment, alpha / tests)
    if spread:
        y = log_spread(x, [k.index for k in kept])
        found = _steps(y, "spread", share, parts)
        # of a level's point and a spread's closer than a segment, the less significant
        # goes: a spread change also widens the level's statistics, which may then see a
        # step at the same place
        kept = _apart(kept + _kept(y, y, found, min_segment, alpha / tests), min_segment)
    return sorted(kept, key=lambda f: f.index)
