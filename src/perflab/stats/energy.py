"""E-divisive candidates, as Otava (Hunter) finds them: the energy statistic in sliding windows.

`e_divisive_cuts` splits windows of a series recursively at the maximum of the energy
statistic while Welch's test between the sides passes, then merges the weakest cuts away
(`segment_tests.merge_weakest`). `stats.detectors.e_divisive` is the method's entry.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from perflab.stats.segment_tests import merge_weakest, prefix_sums, split_p

#: The shortest segment e_divisive will split off (a t-test needs 2 per side; 3 keeps
#: single outliers from being paired into a "regime").
E_DIVISIVE_MIN_SEGMENT = 3


#: Pairwise-distance cells computed at once when batching E-divisive windows (~16 MB).
_BATCH_CELLS = 2_000_000


def energy_statistic(x: ArrayLike) -> NDArray[np.float64]:
    """The E-divisive (Matteson & James 2014, α = 1) divergence q̂(τ) for every split τ.

    Element τ is the statistic for x[:τ] vs x[τ:], (m·n/(m+n))·(2/(mn)·Σ|xᵢ−yⱼ|
    − Σ_{i<k}|xᵢ−xₖ|/C(m,2) − Σ_{j<l}|yⱼ−yₗ|/C(n,2)); NaN where a side has fewer than 2
    values (τ < 2 or τ > len−2). O(len²) memory: meant for windows, not whole histories.
    """
    v = np.asarray(x, dtype=float).reshape(-1)
    q = np.full(v.size + 1, math.nan)
    if v.size >= 4:
        q[2:v.size - 1] = _energy_batch(v[None, :], 2)[0]
    return q


def _energy_batch(windows: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    """q̂(τ) for τ = k .. w−k of each row of `windows` (shape b × w), as energy_statistic."""
    w = windows.shape[1]
    d = windows[:, :, None] - windows[:, None, :]
    np.abs(d, out=d)
    row = d @ np.ones(w)                                  # Σ_j |x_i − x_j|
    low = np.einsum("bij,ij->bi", d, np.tri(w, k=-1))    # Σ_{j<i} |x_i − x_j|
    head_row = np.cumsum(row, axis=1)                     # Σ_{i<τ} Σ_j   (at τ−1)
    head_pairs = np.cumsum(low, axis=1)                   # Σ_{j<i<τ}     (at τ−1)
    tau = np.arange(k, w - k + 1)
    within_left = head_pairs[:, tau - 1]                  # pairs inside x[:τ]
    to_all = head_row[:, tau - 1]                         # x[:τ] against everything
    within_all = head_pairs[:, -1]
    between = to_all - 2 * within_left
    within_right = within_all[:, None] - within_left - between
    m, n = tau.astype(float), (w - tau).astype(float)
    return np.asarray(m * n / (m + n) * (2 * between / (m * n) - within_left / (m * (m - 1) / 2)
                                         - within_right / (n * (n - 1) / 2)), dtype=float)


def _bisect(x: NDArray[np.float64], s1: NDArray[np.float64], s2: NDArray[np.float64], lo: int, hi: int,
            max_pvalue: float, out: list[int]) -> None:
    """Recursive E-divisive bisection of x[lo:hi], keeping splits whose t-test passes."""
    k = E_DIVISIVE_MIN_SEGMENT
    if hi - lo < 2 * k:
        return
    q = _energy_batch(x[None, lo:hi], k)[0]
    best = int(np.argmax(q))
    if not q[best] > 0:
        return
    tau = lo + k + best
    if split_p(s1, s2, lo, tau, hi) <= max_pvalue:
        out.append(tau)
        _bisect(x, s1, s2, lo, tau, max_pvalue, out)
        _bisect(x, s1, s2, tau, hi, max_pvalue, out)


def _window_candidates(x: NDArray[np.float64], s1: NDArray[np.float64], s2: NDArray[np.float64], window: int,
                       max_pvalue: float) -> list[int]:
    """Candidates from windows of `window` values overlapping by half.

    The first split of every window is found and tested in batches (most windows hold
    no change and stop there); only windows whose first split passes recurse.
    """
    n, k = x.size, E_DIVISIVE_MIN_SEGMENT
    step = max(window // 2, 1)
    starts = np.arange(0, n - window + 1, step)
    if starts[-1] != n - window:
        starts = np.append(starts, n - window)
    all_windows = np.lib.stride_tricks.sliding_window_view(x, window)
    per_batch = max(1, _BATCH_CELLS // (window * window))
    out: list[int] = []
    for first in range(0, starts.size, per_batch):
        lo = starts[first:first + per_batch]
        q = _energy_batch(all_windows[lo], k)
        best = np.argmax(q, axis=1)
        positive = q[np.arange(lo.size), best] > 0
        tau = lo + k + best
        p = split_p(s1, s2, lo, tau, lo + window)
        for i in np.flatnonzero(positive & (p <= max_pvalue)):
            t, start = int(tau[i]), int(lo[i])
            out.append(t)
            _bisect(x, s1, s2, start, t, max_pvalue, out)
            _bisect(x, s1, s2, t, start + window, max_pvalue, out)
    return out


def e_divisive_cuts(x: NDArray[np.float64], window: int, max_pvalue: float,
                     min_magnitude: float) -> list[int]:
    if x.size < 2 * E_DIVISIVE_MIN_SEGMENT or np.ptp(x) == 0.0:
        return []
    _, s1, s2 = prefix_sums(x)
    if x.size <= window:
        candidates: list[int] = []
        _bisect(x, s1, s2, 0, x.size, max_pvalue, candidates)
    else:
        candidates = _window_candidates(x, s1, s2, window, max_pvalue)
    return merge_weakest(x, candidates, max_pvalue, min_magnitude)


def check_e_divisive(window: int, max_pvalue: float) -> None:
    if window < 2 * E_DIVISIVE_MIN_SEGMENT:
        raise ValueError(f"window must be >= {2 * E_DIVISIVE_MIN_SEGMENT}, got {window}")
    if not 0.0 < max_pvalue <= 1.0:
        raise ValueError(f"max_pvalue must be in (0, 1], got {max_pvalue}")
