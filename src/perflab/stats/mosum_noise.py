"""The noise model of the mosum search: outliers, the variogram, the null sd of a MOSUM.

`hampel` clips outliers (Hampel's identifier on a running median); `variogram` estimates
V(d) = E(z[t+d] − z[t])² robustly up to MEMORY lags; `mosum_sd` is the exact null sd of a
moving-sum difference from it; `long_run_variance` (from the variogram) and `hac_variance`
(Bartlett window, Andrews' bandwidth) scale the tests of segments. Method: docs/methods.md.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: Half-width of the Hampel filter's running median: runs of up to this many wild values
#: are outliers, not a regime.
HAMPEL_HALF = 4


#: Values beyond this many robust sds of the running median are outliers (Hampel's 3).
HAMPEL_CLIP = 3.0


#: Lags over which the noise's own autocorrelation is estimated (its memory); the first,
#: MAD look uses half of them. Fewer take seasons for steps, more lose close steps in the
#: inflated variance (bench/README.md, "mosum's calibration").
MEMORY = 16


def running_median(x: NDArray[np.float64], half: int, mode: str = "nearest") -> NDArray[np.float64]:
    """The median of the 2·half + 1 values around each; `mode` extends x past its ends
    (scipy.ndimage's): "nearest" repeats an end value, "mirror" reflects."""
    from scipy.ndimage import median_filter
    return np.asarray(median_filter(x, size=2 * half + 1, mode=mode), dtype=float)


def robust_sd(v: NDArray[np.float64]) -> float:
    """1.4826·MAD, or the mean absolute deviation's Gaussian equivalent when the MAD is 0."""
    dev = np.abs(v - np.median(v))
    mad = float(np.median(dev))
    if mad > 0.0:
        return 1.4826 * mad
    return float(dev.mean()) * math.sqrt(math.pi / 2)


def hampel(x: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """x with values beyond HAMPEL_CLIP robust sds of the running median replaced by it
    (Hampel's identifier); and the same keeping a value within that limit of the median of
    the HAMPEL_HALF values before it, or of those after it (to locate steps in): at a step
    the centred window straddles both levels, and its median (then any value between them,
    an outlier of the new level's included) would replace the step's first values."""
    med = running_median(x, HAMPEL_HALF)
    resid = x - med
    limit = HAMPEL_CLIP * robust_sd(resid)
    wild = np.abs(resid) > limit
    kept = wild.copy()
    n, h = x.size, HAMPEL_HALF
    if n > 2 * h:
        from numpy.lib.stride_tricks import sliding_window_view
        side = np.median(sliding_window_view(x, h), axis=1)   # side[i]: the median of x[i:i + h]
        kept[h:] &= np.abs(x[h:] - side[:n - h]) > limit      # not like the values before
        kept[:n - h] &= np.abs(x[:n - h] - side[1:]) > limit  # nor like those after
    return np.where(wild, med, x), np.where(kept, med, x)


#: Robust scales and centres of longer arrays are taken from this many evenly spaced
#: elements (their error is then ~2%): a 10,000-point series costs a fifth as much.
THIN = 2048


def thin(v: NDArray[Any]) -> NDArray[Any]:
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
    start = thin(np.arange(z.size - last))
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


def local_median(v: NDArray[np.float64], h: int) -> NDArray[np.float64]:
    """About the median of v over [i−2h, i+2h) at each i, in O(n): the running median (5
    blocks) of the medians of blocks of h, spread back over the blocks' positions."""
    blocks = -(-v.size // h)
    padded = np.concatenate([v, np.full(blocks * h - v.size, v[-1])])  # the last block's own
    ordered = np.sort(padded.reshape(blocks, h), axis=1)  # for short rows 3x faster than np.median
    block = (ordered[:, (h - 1) // 2] + ordered[:, h // 2]) / 2
    return np.repeat(running_median(block, 2), h)[:v.size]


def long_run_variance(v: NDArray[np.float64]) -> float:
    """σ² Σ ρ(d) over all lags from the variogram v (V(d) = 2(γ(0) − γ(d)), γ(d) = 0 past
    its last lag, V there its sill): the variance of a mean of m values is this / m.
    Never below γ(0) (white noise), for the reason given in `mosum_sd`."""
    sill = float(np.mean(v[v.size // 2:]))
    gamma = (sill - v[1:]) / 2
    return max(sill / 2 + 2 * float(np.sum(gamma)), sill / 2)


def hac_variance(e: NDArray[np.float64]) -> float:
    """Long-run variance of the noise e (residuals, no steps): Bartlett lag-window estimate
    with Andrews' (1991) AR(1) plug-in bandwidth 1.1447·(4ρ²n/((1−ρ)²(1+ρ)²))^(1/3), on e
    winsorised at 3 robust sds (a few wild values are not memory).

    Unlike the variogram (`long_run_variance`, lags up to MEMORY), the window grows with
    the noise's own lag-1 correlation and with n, so slowly decaying correlation (AR(1)
    ρ = 0.9, long memory) is counted as far as the series can show it.
    """
    scale = robust_sd(thin(e))
    if not scale > 0.0:
        return 0.0
    e = np.clip(e - np.median(thin(e)), -3 * scale, 3 * scale)
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
