"""Tail probabilities of the maximum of a standardised MOSUM process, and their thresholds.

`tail` is Siegmund's approximation of P(max |T| > u) over the positions of one window
(Siegmund & Yakir 2007, with the discrete-time correction ν); `threshold` inverts it;
`small_sample_factor` widens a threshold for a noise scale estimated from few points.
"""

from __future__ import annotations

import functools
import math


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


def small_sample_factor(n: int) -> float:
    """Factor on a Gaussian threshold for a noise scale estimated from n points.

    T uses an estimated sd, so it is nearer Student's t with ~n/4 df (the variogram's lag
    differences overlap) than Gaussian; the Cornish-Fisher first term u(1 + (u²+1)/(4ν))
    at the per-position level u is the usual correction. Near 1 from a few hundred points.
    """
    df = max(n / 4.0, 2.0)
    u = 3.5  # the typical threshold; the factor is insensitive to it
    return 1.0 + (u * u + 1.0) / (4.0 * df)


def normal_quantile(upper: float) -> float:
    """u with P(|N(0,1)| > u) = upper."""
    from scipy.special import ndtri
    return float(-ndtri(upper / 2))
