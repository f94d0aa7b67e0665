"""Self-normalised test for one step in the mean of a segment, on top of a line.

Shao & Zhang's (2010, JASA) G = max over splits of CUSUM² over a normaliser of the partial
sums within each side: both scale with the noise's long-run variance, so G needs no noise
estimate (it holds on short segments and next to steps found elsewhere). The segment is
first detrended around its least-squares single step (`best_split`); the null law of that
whole procedure on Gaussian white noise is tabulated by `bench/sn_null_table.py`
(NULL_QUANTILES; Shao & Zhang's published critical values do not apply once a line is
fitted). Method: docs/methods.md (self-normalised test); figures: bench/README.md.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

#: Each side of a split, and each part the slope is fitted on, holds at least this many
#: values (mosum.MIN_SEGMENT: the shortest segment reported).
MIN_PART = 5


def _layout(lengths: NDArray[np.intp]) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.float64]]:
    """For segments of these lengths laid end to end: each value's segment, each segment's
    first index, and each value's index within its segment."""
    seg = np.repeat(np.arange(lengths.size), lengths)
    first = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.intp)
    return seg, first, np.arange(seg.size, dtype=float) - first[seg]


def _before(v: NDArray[np.float64], seg: NDArray[np.intp], first: NDArray[np.intp],
            ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(the sum of the values before each within its segment, each segment's total): one
    cumulative sum over all segments, less its value at each segment's start."""
    c = np.cumsum(v)
    ex = c - v
    at_first = ex[first]
    last = np.concatenate([first[1:], [v.size]]) - 1
    return ex - at_first[seg], c[last] - at_first


def _argmax(score: NDArray[np.float64], seg: NDArray[np.intp], first: NDArray[np.intp],
            ) -> NDArray[np.intp]:
    """Each segment's index (within it) of its largest score, the first if tied."""
    top = np.maximum.reduceat(score, first)
    hits = np.flatnonzero(score == top[seg])
    _, which = np.unique(seg[hits], return_index=True)
    return np.asarray(hits[which] - first, dtype=np.intp)


def _centred(values: NDArray[np.float64], seg: NDArray[np.intp], lengths: NDArray[np.intp],
             ) -> NDArray[np.float64]:
    """The values less their segment's mean (the sums below then stay small)."""
    return np.asarray(values - (np.bincount(seg, values, lengths.size) / lengths)[seg], dtype=float)


def _split(y: NDArray[np.float64], seg: NDArray[np.intp], first: NDArray[np.intp],
           t: NDArray[np.float64], m: NDArray[np.float64]) -> NDArray[np.intp]:
    """`best_split` of centred y in a known layout (m: each value's segment length)."""
    s, _ = _before(y, seg, first)  # at split k: the sum of the k values left of it
    score = np.abs(s) / np.sqrt(np.maximum(t * (m - t), 1.0))
    return _argmax(np.where(t > 0, score, -1.0), seg, first)


def best_split(values: NDArray[np.float64], lengths: NDArray[np.intp]) -> NDArray[np.intp]:
    """For each segment (`values` holds segments of `lengths` end to end), the
    least-squares location of one step (the standardised CUSUM's argmax): the first index
    of the right part, in 1..m−1."""
    seg, first, t = _layout(lengths)
    return _split(_centred(values, seg, lengths), seg, first, t, lengths[seg].astype(float))


def _sum_squares(j: NDArray[np.float64]) -> NDArray[np.float64]:
    """Σ i² for i = 0..j−1."""
    return np.asarray((j - 1) * j * (2 * j - 1) / 6, dtype=float)


def detrended(values: NDArray[np.float64], lengths: NDArray[np.intp]) -> NDArray[np.float64]:
    """Each segment less the slope fitted within its two parts either side of
    `best_split`, each part about its own mean (a part shorter than MIN_PART left out).
    O(m) per segment: each part's Σ(t − t̄)·y and Σ(t − t̄)² from running sums and closed
    forms."""
    seg, first, t = _layout(lengths)
    y = _centred(values, seg, lengths)  # the slope ignores the level
    k = _split(y, seg, first, t, lengths[seg].astype(float))
    p0, total0 = _before(y, seg, first)
    p1, total1 = _before(t * y, seg, first)
    at = first + k
    kf, mf = k.astype(float), lengths.astype(float)
    left = (kf, kf * (kf - 1) / 2, _sum_squares(kf), p0[at], p1[at])
    right = (mf - kf, (mf * (mf - 1) - kf * (kf - 1)) / 2, _sum_squares(mf) - _sum_squares(kf),
             total0 - p0[at], total1 - p1[at])
    num, den = np.zeros(lengths.size), np.zeros(lengths.size)
    for count, st, stt, sy, sty in (left, right):
        used = count >= MIN_PART
        safe = np.maximum(count, 1.0)
        num += np.where(used, sty - st / safe * sy, 0.0)
        den += np.where(used, stt - st * st / safe, 0.0)
    slope = np.divide(num, den, out=np.zeros(lengths.size), where=den > 0.0)
    return np.asarray(values - slope[seg] * t, dtype=float)


def statistic(values: NDArray[np.float64], lengths: NDArray[np.intp],
              ) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """Shao & Zhang's G of each segment (as given: detrend first; each at least
    2·MIN_PART long) over the splits k in [MIN_PART, m − MIN_PART], and the k where it is
    largest (the first index after the split). O(m) per segment from running sums."""
    seg, first, k = _layout(lengths)  # every position k as the split before it
    m = lengths[seg].astype(float)
    y = _centred(values, seg, lengths)  # G ignores the level
    s, total = _before(y, seg, first)  # s = S_k, the sum of the k values left of the split
    d2 = (s - k / m * total[seg]) ** 2 / m
    # left side: Σ_{t≤k} (S_t − (t/k)·S_k)², expanded into running sums (Σ t² closed)
    after = s + y  # S_{k+1}: summed over the positions before k it gives t = 1..k
    ratio = s / np.maximum(k, 1.0)
    left = (_before(after * after, seg, first)[0] - 2 * ratio * _before((k + 1) * after, seg, first)[0]
            + ratio * ratio * _sum_squares(k + 1))
    # right side: R_j = Σ y[j:] = S_m − S_j for j = k..m−1, about its share of R_k; sums
    # over j >= k are the segment's total less the part before k, Σ (m − j)² closed
    tail = total[seg] - s
    q2, total2 = _before(tail * tail, seg, first)
    q1, total1 = _before((m - k) * tail, seg, first)
    share = tail / (m - k)
    right = ((total2[seg] - q2) - 2 * share * (total1[seg] - q1)
             + share * share * _sum_squares(m - k + 1))
    g = d2 / np.maximum((left + right) / (m * m), 1e-300)
    g = np.where((k >= MIN_PART) & (k <= m - MIN_PART), g, -1.0)
    best = _argmax(g, seg, first)
    return g[first + best], best


def one_step(values: NDArray[np.float64], lengths: NDArray[np.intp],
             ) -> tuple[NDArray[np.float64], NDArray[np.intp], NDArray[np.float64]]:
    """The whole test of each segment, as the null table was drawn: (G, the split k, the
    detrended values) of `statistic` after `detrended`."""
    if lengths.size and int(lengths.min()) < 2 * MIN_PART:
        raise ValueError(f"segments of fewer than {2 * MIN_PART} values have no split to test")
    flat = detrended(values, lengths)
    g, k = statistic(flat, lengths)
    return g, k, flat


def rows(block: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """A 2-D block of equal segments, one per row, as (values, lengths)."""
    return block.ravel(), np.full(block.shape[0], block.shape[1], dtype=np.intp)


# The upper quantiles of G after `detrended` on Gaussian white noise, one row per segment
# length (NULL_SIZES), one column per tail probability (NULL_P): written by
# `bench/sn_null_table.py --draws 1000000 --seed 2026`. Past m ≈ 14 the rows hardly
# change with m (the law is pivotal); the shortest have a heavier tail.
NULL_SIZES = (10, 11, 12, 13, 14, 16, 20, 24, 32, 48, 64, 128, 256, 512, 1024)
NULL_P = (0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 5e-3, 2e-3, 1e-3, 5e-4, 2e-4, 1e-4)
NULL_QUANTILES: tuple[tuple[float, ...], ...] = (
    (4.5, 15.4, 36.1, 70.7, 147.0, 220.9, 312.1, 461.0, 612.5, 804.6, 1093.4, 1392.1),  # m = 10
    (7.0, 27.0, 64.2, 114.2, 198.0, 276.9, 370.4, 522.6, 670.3, 852.3, 1121.9, 1370.8),  # m = 11
    (8.8, 39.9, 82.9, 135.4, 217.5, 292.8, 383.3, 529.1, 660.7, 827.3, 1059.5, 1263.5),  # m = 12
    (10.4, 49.6, 94.2, 146.3, 226.8, 300.6, 388.1, 523.1, 643.3, 778.5, 986.1, 1177.8),  # m = 13
    (11.6, 55.9, 100.9, 152.0, 230.3, 300.7, 381.7, 505.5, 623.6, 757.8, 937.1, 1125.9),  # m = 14
    (14.1, 63.6, 108.3, 158.6, 234.3, 299.6, 374.2, 488.5, 586.6, 693.7, 850.8, 1038.8),  # m = 16
    (18.0, 70.2, 114.6, 163.3, 234.8, 296.6, 365.9, 467.0, 552.9, 653.2, 811.7, 939.1),  # m = 20
    (19.8, 71.9, 115.7, 163.5, 234.5, 294.7, 361.1, 455.0, 533.3, 619.2, 760.9, 881.1),  # m = 24
    (21.1, 73.2, 118.0, 166.3, 237.8, 296.7, 361.2, 450.7, 527.3, 610.9, 734.7, 827.0),  # m = 32
    (20.4, 72.9, 119.7, 170.3, 243.3, 303.8, 368.6, 461.1, 535.7, 612.9, 724.7, 824.4),  # m = 48
    (19.3, 72.6, 120.8, 173.4, 248.8, 310.7, 377.5, 470.7, 549.3, 630.2, 740.6, 835.0),  # m = 64
    (16.6, 69.8, 121.0, 175.1, 253.4, 316.9, 384.6, 480.7, 560.9, 640.4, 769.0, 859.5),  # m = 128
    (14.1, 65.1, 118.4, 174.7, 255.9, 321.5, 392.5, 492.0, 571.9, 661.3, 777.6, 883.1),  # m = 256
    (12.2, 59.6, 114.3, 172.8, 255.9, 323.7, 394.4, 494.4, 577.0, 667.4, 786.8, 897.8),  # m = 512
    (10.4, 53.7, 108.7, 167.8, 252.4, 321.4, 393.5, 500.2, 582.8, 665.0, 799.2, 908.3),  # m = 1024
)

_LOG_P = np.log(NULL_P)


def p_value(g: float, m: int) -> float:
    """P(G > g) under the null for a segment of m values: interpolated in log p between
    the tabulated quantiles of the largest tabulated length <= m; past the last (1e-4),
    the tail goes on exponentially at the slope of its last decade."""
    row = NULL_QUANTILES[max(0, int(np.searchsorted(NULL_SIZES, m, side="right")) - 1)]
    logp = _LOG_P
    if g >= row[-1]:
        slope = (logp[-1] - logp[-4]) / (row[-1] - row[-4])
        return float(math.exp(logp[-1] + slope * (g - row[-1])))
    return float(math.exp(np.interp(g, [0.0, *row], [0.0, *logp])))
