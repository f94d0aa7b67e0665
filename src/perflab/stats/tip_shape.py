"""How much higher a tip bar must stand when the noise is normal on the other scale.

The tip detector (stats/tip.py) reads positive values on two scales, each test exact for
noise normal on its own scale. Timing noise may be normal on either (or between), so each
test must hold its share under both: a composite null. The values' tests meet noise that
is normal on the logs (lognormal values: a long upper tail); the logs' tests meet noise
normal on the values (a long lower tail after the log). For each way (up, down) and rule
the bar is the exact one times

    factor = max(1, c_other / c_normal),

c the bar at the test's share once the history's level and sd are known (a long history):
c_normal the normal quantile's, c_other the same test's under the other family at the
history's shape (its CV, or the sd of its logs). The finite-history exact bar carries the
uncertainty of a short history; the factor carries the other family's tail. The shape is
rounded up to a grid of 2% steps (a bar a hair high, never low) so that looks share them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

#: The other family of each scale, by the name of the scale the test reads.
ON_VALUES, ON_LOGS = "values", "logs"
_Z = np.linspace(-12.0, 12.0, 4001)   # the standard normal's grid: its 1e-33 tails
_STEP = 1.02                          # the shape grid's ratio
_SMALLEST = 1e-3                      # below: the two scales agree to 1e-3 of the bar
_HIGHEST = 200.0                      # sds: a bar beyond it is no bar


def shape(history: NDArray[np.float64], scale: str) -> float:
    """The other family's shape on ``scale`` from positive history values: for the values'
    tests (noise normal on the logs) the sd of the logs; for the logs' tests (noise normal
    on the values) the CV. NaN when it cannot be read."""
    if history.size < 2:
        return math.nan
    if scale == ON_VALUES:
        return float(np.log(history).std(ddof=1))
    return float(history.std(ddof=1) / history.mean())


def factor(scale: str, shape_: float, way: int, m: int, share: float) -> float:
    """The bar's factor (>= 1) for the test of the mean (m <= 2) or the majority (m >= 3) of
    m tip values beyond the bar on ``way`` (+1 up, -1 down), at ``share`` per way."""
    if not math.isfinite(shape_) or shape_ < _SMALLEST:
        return 1.0
    rounded = _STEP ** math.ceil(math.log(shape_) / math.log(_STEP))
    return _factor(scale, round(rounded, 12), way, m, share)


@lru_cache(maxsize=8192)
def _factor(scale: str, shape_: float, way: int, m: int, share: float) -> float:
    return max(1.0, _bar(_other(scale, shape_), way, m, share) / _bar(_NORMAL, way, m, share))


@dataclass(frozen=True)
class _Family:
    """A family on the test's scale: y (standardised: mean 0, sd 1) at the standard normal
    points z, increasing in z; z starts where the values turn positive (below, the logs are
    not read, so the family is the normal conditioned on positive values)."""

    z: NDArray[np.float64]
    y: NDArray[np.float64]

    def weights(self) -> NDArray[np.float64]:
        w = np.exp(-0.5 * self.z**2)
        return w / w.sum()

    def beyond(self, t: float | NDArray[np.float64], way: int) -> NDArray[np.float64]:
        """P(one value beyond t on ``way``), read on the normal's tail (y is increasing)."""
        from scipy.special import ndtr
        z = np.interp(t, self.y, self.z, left=-np.inf, right=np.inf)
        kept = 1.0 - ndtr(self.z[0])
        return np.asarray((ndtr(-z) if way > 0 else ndtr(z) - ndtr(self.z[0])) / kept)


def _standardised(z: NDArray[np.float64], y: NDArray[np.float64]) -> _Family:
    w = np.exp(-0.5 * z**2)
    w /= w.sum()
    mean = float(w @ y)
    return _Family(z, (y - mean) / math.sqrt(float(w @ (y - mean) ** 2)))


_NORMAL = _standardised(_Z, _Z)


@lru_cache(maxsize=512)
def _other(scale: str, shape_: float) -> _Family:
    """The other family on the test's scale at the history's shape."""
    if scale == ON_VALUES:
        return _standardised(_Z, np.exp(shape_ * _Z))                 # lognormal values, σ = shape
    z = np.linspace(max(-12.0, -1.0 / shape_ + 1e-9), 12.0, _Z.size)   # normal values 1 + cv·z > 0
    return _standardised(z, np.log1p(shape_ * z))


def _tail(f: _Family, c: float, way: int, m: int) -> float:
    """P(the test passes c on ``way``) for m values of the standardised family f."""
    if m == 1:
        return float(f.beyond(way * c, way))
    if m == 2:   # the mean of two: the second beyond what the first leaves, over the first
        return float(f.weights() @ f.beyond(way * c * math.sqrt(2.0) - f.y, way))
    p = float(f.beyond(way * c, way))
    return float(sum(math.comb(m, j) * p**j * (1 - p) ** (m - j) for j in range(m // 2 + 1, m + 1)))


def _bar(f: _Family, way: int, m: int, share: float) -> float:
    """The c at which the test's tail on ``way`` is ``share`` (inf: a tail that long
    nowhere reaches it within _HIGHEST sds)."""
    from scipy.optimize import brentq

    def excess(c: float) -> float:
        return math.log(max(_tail(f, c, way, m), 1e-300)) - math.log(share)
    if excess(_HIGHEST) > 0:
        return math.inf
    return float(brentq(excess, 0.0, _HIGHEST, xtol=1e-4))
