"""Confidence intervals: of a mean (t), of a median (order statistics), of a ratio of centres
(bootstrap), of the factor between two samples that inverts Mann-Whitney (Hodges-Lehmann)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from perflab.model.records import MeanKind
from perflab.stats.distributions import norm_ppf
from perflab.stats.rows import by_size
from perflab.stats.significance import mann_whitney_is_exact
from perflab.stats.summary import linearise
from perflab.stats.warnings import NONPOSITIVE_GMEAN, NONPOSITIVE_HMEAN, TOO_FEW_SAMPLES, StatWarning


@dataclass(frozen=True)
class Interval:
    """A confidence interval [low, high] and the confidence it really has."""

    low: float
    high: float
    confidence: float
    warnings: tuple[StatWarning, ...] = ()


def _undefined(confidence: float, why: str) -> Interval:
    return Interval(math.nan, math.nan, confidence, (StatWarning(TOO_FEW_SAMPLES, why),))


def mean_ci(values: ArrayLike, confidence: float = 0.95) -> Interval:
    """Student t interval of the arithmetic mean: mean ± t(n−1)·sd/√n.

    Assumes independent values with a near-normal mean (normal data, or n large enough
    for the central limit theorem). NaN with fewer than 2 values.
    """
    from scipy import special  # lazily: importing scipy costs start-up time
    x = np.asarray(values, dtype=float).reshape(-1)
    if x.size < 2:
        return _undefined(confidence, f"{x.size} value(s): a confidence interval of the mean needs 2 or more")
    half = float(special.stdtrit(x.size - 1, 0.5 + confidence / 2)) * x.std(ddof=1) / math.sqrt(x.size)
    mean = float(x.mean())
    return Interval(mean - half, mean + half, confidence)


def median_ci(values: ArrayLike, confidence: float = 0.95) -> Interval:
    """Distribution-free interval of the median from order statistics (as benchstat).

    [x_(k), x_(n−k+1)] covers the population median with probability
    1 − 2·P(B <= k−1), B ~ Binomial(n, 1/2), whatever the distribution (continuous,
    independent values). Takes the narrowest such interval whose coverage is at least
    `confidence`. When n is too small for that (n < 6 at 95%), returns [min, max] with
    the lower confidence it really has and a warning. NaN if empty.
    """
    return median_ci_rows([np.asarray(values, dtype=float).reshape(-1)], confidence)[0]


def median_ci_rows(samples: Sequence[np.ndarray], confidence: float = 0.95) -> list[Interval]:
    """`median_ci` of each 1-D sample: the samples of one size are sorted together."""
    out: list[Interval] = [Interval(math.nan, math.nan, confidence)] * len(samples)
    for rows, block in by_size(samples):
        n = block.shape[1]
        if n == 0:
            for i in rows:
                out[i] = _undefined(confidence, "no values: no confidence interval of the median")
            continue
        ordered = np.sort(block, axis=1)
        k, coverage = _median_order(n, confidence)
        warnings: tuple[StatWarning, ...] = ()
        if k == 0:
            needed = math.ceil(1 - math.log2(1 - confidence))
            why = (f"{n} value(s): a {100 * confidence:g}% interval of the median needs {needed} or more; "
                   f"[min, max] covers only {100 * coverage:.1f}%")
            ends, warnings = (0, n - 1), (StatWarning(TOO_FEW_SAMPLES, why),)
        else:
            ends = (k - 1, n - k)
        for i, low, high in zip(rows, ordered[:, ends[0]].tolist(), ordered[:, ends[1]].tolist()):
            out[i] = Interval(low, high, coverage, warnings)
    return out


@functools.lru_cache(maxsize=256)
def _median_order(n: int, confidence: float) -> tuple[int, float]:
    """The largest k whose [x_(k), x_(n−k+1)] covers the median with at least
    ``confidence``, and its coverage; (0, coverage of [min, max]) when none does. Cached:
    a report's rows mostly share their n."""
    from scipy import special  # lazily: importing scipy costs start-up time
    k = np.arange(1, (n + 1) // 2 + 1)
    coverage = 1.0 - 2.0 * special.bdtr(k - 1, n, 0.5)
    enough = np.flatnonzero(coverage >= confidence)
    if enough.size == 0:
        return 0, max(float(coverage[0]), 0.0)
    return int(k[enough[-1]]), float(coverage[enough[-1]])


def bootstrap_ratio_ci(base: ArrayLike, new: ArrayLike, *, mean_kind: MeanKind = MeanKind.ARITHMETIC,
                       confidence: float = 0.95, resamples: int = 2000, seed: int = 0) -> Interval:
    """Percentile bootstrap interval of centre(new)/centre(base), the centres of `mean_kind`.

    Resamples each side independently (`resamples` times, seeded, vectorised). Assumes
    independent values and that each sample represents its distribution; the percentile
    interval is too narrow for small samples (noticeably below n ≈ 10). NaN with fewer
    than 2 values on a side or when a centre is undefined (hmean/gmean of a value <= 0).
    """
    a = np.asarray(base, dtype=float).reshape(-1)
    b = np.asarray(new, dtype=float).reshape(-1)
    if a.size < 2 or b.size < 2:
        return _undefined(confidence,
                          f"{a.size} base and {b.size} new values: a bootstrap interval needs 2 or more per side")
    if mean_kind is not MeanKind.ARITHMETIC and (np.any(a <= 0) or np.any(b <= 0)):
        code = NONPOSITIVE_HMEAN if mean_kind is MeanKind.HARMONIC else NONPOSITIVE_GMEAN
        why = f"values <= 0: the {mean_kind.value} and its bootstrap interval are undefined"
        return Interval(math.nan, math.nan, confidence, (StatWarning(code, why),))
    # Resample f(x) and average: the same as the kind's mean of the resampled values.
    forward, back = linearise(mean_kind)
    fa, fb = forward(a), forward(b)
    rng = np.random.default_rng(seed)
    base_centres = back(fa[rng.integers(0, a.size, (resamples, a.size))].mean(axis=1))
    new_centres = back(fb[rng.integers(0, b.size, (resamples, b.size))].mean(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = new_centres / base_centres
    if not np.all(np.isfinite(ratios)):
        return Interval(math.nan, math.nan, confidence)
    low, high = np.quantile(ratios, [0.5 - confidence / 2, 0.5 + confidence / 2])
    return Interval(float(low), float(high), confidence)


#: The most pairwise differences `hodges_lehmann_ratio_ci` takes (8 bytes each): 1,000 values a side
HL_MAX_PAIRS = 1_000_000


@functools.lru_cache(maxsize=64)
def mann_whitney_null_cdf(m: int, n: int) -> NDArray[np.float64]:
    """P(U <= u) for u = 0..m·n, U the Mann-Whitney statistic of m and n values under the
    null (no ties): the counts of U are the coefficients of the Gaussian binomial
    [m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), built one factor at a time
    (float: the counts reach C(m+n, m); the lower tail, read here, stays exact integers).
    Cached (a report's rows share their sizes); do not modify the array returned."""
    m, n = min(m, n), max(m, n)   # U's null distribution is symmetric in the two sizes
    size = m * n + 1
    counts = np.zeros(size)
    counts[0] = 1.0
    for i in range(1, m + 1):
        if n + i < size:
            counts[n + i:] -= counts[:size - (n + i)].copy()   # times (1 - q^(n+i))
        # divided by (1 - q^i): counts[u] += counts[u - i] in order, i.e. a running sum
        # along each residue class mod i (the columns of the padded array)
        padded = np.zeros(-(-size // i) * i)
        padded[:size] = counts
        counts = np.cumsum(padded.reshape(-1, i), axis=0).reshape(-1)[:size]
    cdf = np.cumsum(counts) / math.comb(m + n, m)
    cdf.flags.writeable = False
    return cdf


def hodges_lehmann_ratio_ci(base: ArrayLike, new: ArrayLike, confidence: float = 0.95) -> Interval:
    """The interval of the factor c with new ~ c·base that inverts the two-sided Mann-Whitney
    test (Hodges & Lehmann 1963; R's wilcox.test conf.int, on logs): exp of
    [D_(k), D_(mn+1-k)], D the sorted m·n differences log new_j - log base_i, k the largest
    with P(U <= k-1) <= (1 - confidence)/2. Exact (for continuous values) with m·n <= 2,500
    and no ties, as `significance.mann_whitney`'s test (`mann_whitney_is_exact`); else k from the normal
    approximation with the tie correction. Its coverage holds at any n when the change is a
    common factor (a shift of the logs), where the percentile bootstrap's is too low
    below n ~ 10. NaN when the sizes cannot reach the confidence (3 vs 3 at 95%), a value
    is <= 0, or m·n > HL_MAX_PAIRS (the caller then takes the bootstrap).
    """
    a = np.asarray(base, dtype=float).reshape(-1)
    b = np.asarray(new, dtype=float).reshape(-1)
    m, n = a.size, b.size
    if m == 0 or n == 0 or m * n > HL_MAX_PAIRS or np.any(a <= 0) or np.any(b <= 0):
        return Interval(math.nan, math.nan, confidence)
    tail = (1.0 - confidence) / 2
    if mann_whitney_is_exact(a, b):
        cdf = mann_whitney_null_cdf(m, n)
        k = int(np.count_nonzero(cdf <= tail))      # P(U <= k-1) <= tail for u = 0..k-1
        real = 1.0 - 2.0 * float(cdf[k - 1]) if k >= 1 else 0.0
    else:
        _, tie_sizes = np.unique(np.concatenate([a, b]), return_counts=True)
        total = m + n
        ties = float(np.sum(tie_sizes.astype(float) ** 3 - tie_sizes))
        variance = m * n / 12.0 * (total + 1 - ties / (total * (total - 1)))
        k = int(math.floor(m * n / 2.0 - norm_ppf(1 - tail) * math.sqrt(max(variance, 0.0))))
        real = confidence
    if k < 1:
        return _undefined(confidence, f"{m} vs {n} values: a {100 * confidence:g}% interval that inverts "
                                      "Mann-Whitney needs more (the test cannot reject at these sizes)")
    d = (np.log(b)[None, :] - np.log(a)[:, None]).reshape(-1)
    low, high = np.partition(d, (k - 1, m * n - k))[[k - 1, m * n - k]]
    return Interval(float(np.exp(low)), float(np.exp(high)), real)
