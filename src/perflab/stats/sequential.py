"""Paired sequential classification for bisect: is a commit like the good end or the bad end?

Every run of a probed commit is paired with a run of one end taken right beside it (the
ends alternating good, bad, ...), and the ends with each other, so that drift of the
machine cancels. On log ratios, Wald's SPRT between "centre −Δ/2" (good) and "+Δ/2" (bad)
with Student t_3 noise of a pooled robust scale: called bad at LLR >= log((1−β)/α), good
at LLR <= log(β/(1−α)) after at least `min_n` pairs; at `max_n` by the LLR's sign, marked
low confidence. `check_ends` tests that the ends differ (robust one-sample t-test,
Bonferroni over the caller's looks) and that a probe would be called within `max_n`/2.
Method: docs/methods.md (bisect's paired classification); what was tried: bench/README.md.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

HUBER_K = 1.345
NOISE_DF = 3             # the noise model's Student t degrees of freedom (see the module doc)
HUBER_EFFICIENCY = 0.95  # asymptotic efficiency at the normal for k = 1.345
MAD_TO_SD = 1.4826
WINSOR_K = 2.5           # residuals beyond 2.5 MADs count as 2.5 MADs in the scale
WINSOR_CONSISTENCY = 0.97757  # E[min(Z², 2.5²)] for a standard normal Z
WINSOR_EFFICIENCY = 0.9  # degrees of freedom a winsorised residual is worth


class Call(str, enum.Enum):
    GOOD = "good"
    BAD = "bad"
    MORE = "more"      # keep sampling


@dataclass(frozen=True)
class EndsCheck:
    """Good vs bad, measured in pairs: do they differ, and can a probe be told apart?"""

    significant: bool
    decidable: bool       # a probe at either end is expected to be called within max_n / 2 pairs
    p_value: float        # the robust paired t-test on logs
    alpha_per_look: float
    ratio: float          # bad / good: exp(Δ)
    scale: float          # s, the sd of the log ratio of two runs
    pairs: int

    @property
    def delta(self) -> float:
        return math.log(self.ratio) if self.ratio > 0 else math.nan


@dataclass(frozen=True)
class Classification:
    """The state of the test after the probe's n pairs."""

    call: Call
    llr: float            # log likelihood ratio, bad over good (> 0 leans bad)
    confidence: float     # posterior probability of the call at even prior odds
    n: int                # pairs
    low_confidence: bool  # forced at max_n without reaching a bound
    position: float       # where the probe sits: 0 = at good, 1 = at bad (robust centre)


def log_values(values: ArrayLike) -> NDArray[np.float64]:
    """Finite positive values as logs; anything else is dropped."""
    x = np.asarray(values, dtype=float).reshape(-1)
    x = x[np.isfinite(x) & (x > 0)]
    return np.asarray(np.log(x), dtype=float)


def log_ratios(numerator: ArrayLike, denominator: ArrayLike) -> NDArray[np.float64]:
    """log(numerator_i / denominator_i) of paired values; pairs with a non-positive or
    non-finite value are dropped."""
    a = np.asarray(numerator, dtype=float).reshape(-1)
    b = np.asarray(denominator, dtype=float).reshape(-1)
    if a.size != b.size:
        raise ValueError(f"paired values differ in length: {a.size} and {b.size}")
    keep = np.isfinite(a) & np.isfinite(b) & (a > 0) & (b > 0)
    return np.asarray(np.log(a[keep]) - np.log(b[keep]), dtype=float)


def pooled_scale(groups: list[NDArray[np.float64]]) -> tuple[float, float, float]:
    """(sd, degrees of freedom, Huber efficiency) of the noise pooled over the groups with 2+ values.

    Residuals from each group's median (widened by sqrt(n/(n-1)): a median sits closer
    to its own sample than the true centre does) are winsorised at 2.5 MADs and their
    root mean square is made consistent for normal noise: nearly as efficient as the
    sd on clean data, while a slow outlier counts as 2.5 MADs, not as itself.
    The efficiency of Huber's centre is the sandwich estimate E[psi']^2 / E[psi^2] on
    these residuals (0.95 for normal noise, less when outliers are frequent), capped at
    0.95 so a lucky sample never claims more than normal noise gives.
    """
    usable = [g for g in groups if g.size >= 2]
    if not usable:
        return math.nan, 0.0, HUBER_EFFICIENCY
    residuals = np.concatenate([(g - np.median(g)) * math.sqrt(g.size / (g.size - 1)) for g in usable])
    mad = MAD_TO_SD * float(np.median(np.abs(residuals)))
    if mad == 0.0:  # quantised or constant data: the plain rms, else a tiny floor
        return float(np.sqrt(np.mean(residuals**2))) or 1e-9, 1.0, HUBER_EFFICIENCY
    clipped = np.clip(residuals, -WINSOR_K * mad, WINSOR_K * mad)
    scale = math.sqrt(float(np.mean(clipped**2)) / WINSOR_CONSISTENCY)
    df = max(1.0, WINSOR_EFFICIENCY * (residuals.size - len(usable)))
    z = residuals / scale
    psi = np.clip(z, -HUBER_K, HUBER_K)
    slope = float(np.mean(np.abs(z) < HUBER_K))
    efficiency = min(HUBER_EFFICIENCY, slope * slope / max(float(np.mean(psi * psi)), 1e-12))
    return scale, df, max(efficiency, 0.05)


def huber_centre(x: NDArray[np.float64], scale: float, iterations: int = 30) -> float:
    """Huber's M-estimate of location with a known scale, started at the median."""
    if x.size == 0:
        return math.nan
    mu = float(np.median(x))
    if not scale > 0:
        return mu
    bound = HUBER_K * scale
    for _ in range(iterations):
        new = float(np.mean(np.clip(x, mu - bound, mu + bound)))
        if abs(new - mu) <= 1e-12 * (1 + abs(mu)):
            break
        mu = new
    return mu


def _log_t(u: NDArray[np.float64]) -> NDArray[np.float64]:
    """log of Student's t_ν density at u, up to a constant (it cancels in a ratio)."""
    return -(NOISE_DF + 1) / 2 * np.log1p(u * u / NOISE_DF)


def robust_t_p(difference: float, se: float, df: float) -> float:
    """Two-sided p of a Huber centre over its standard error, Student's t."""
    from scipy import special  # lazily: importing scipy costs start-up time
    if not se > 0:
        return 0.0 if difference != 0 else math.nan
    return float(2 * special.stdtr(df, -abs(difference / se)))


@dataclass(frozen=True)
class SequentialTest:
    """Paired sequential good-vs-bad classifier: alpha = P(call bad | good), beta = P(call good | bad).

    ``min_n`` and ``max_n`` count pairs (a run of the probe and a run of an end).
    """

    alpha: float = 0.01
    beta: float = 0.01
    min_n: int = 3
    max_n: int = 60

    def __post_init__(self) -> None:
        if not (0 < self.alpha < 0.5 and 0 < self.beta < 0.5):
            raise ValueError("alpha and beta must lie in (0, 0.5)")
        if not 1 <= self.min_n <= self.max_n:
            raise ValueError("need 1 <= min_n <= max_n")

    @property
    def upper(self) -> float:
        return math.log((1 - self.beta) / self.alpha)

    @property
    def lower(self) -> float:
        return math.log(self.beta / (1 - self.alpha))

    @property
    def confidence(self) -> float:
        """The stated confidence of a call made at a bound."""
        return 1.0 - max(self.alpha, self.beta)

    def expected_pairs(self, delta: float, scale: float) -> float:
        """Pairs a probe exactly at one end needs on average to reach its bound: each pair
        adds about Δ²·I/2 to the expected |LLR|, I = (ν+1)/((ν+3)s²) the Fisher
        information of a t_ν location."""
        if not (math.isfinite(delta) and scale > 0) or delta == 0:
            return math.inf
        information = (NOISE_DF + 1) / ((NOISE_DF + 3) * scale * scale)
        return max(self.upper, -self.lower) / (delta * delta * information / 2)

    def check_ends(self, good: ArrayLike, bad: ArrayLike, *, alpha: float = 0.01,
                   looks: int = 1) -> EndsCheck:
        """Do good and bad differ? ``good[i]`` and ``bad[i]`` are a pair run side by side."""
        d = log_ratios(bad, good)
        per_look = alpha / max(1, looks)
        if d.size < 2:
            return EndsCheck(False, False, math.nan, per_look, math.nan, math.nan, int(d.size))
        scale, df, eff = pooled_scale([d])
        delta = huber_centre(d, scale)
        p_value = robust_t_p(delta, scale / math.sqrt(d.size * eff), df)
        significant = bool(p_value < per_look)  # NaN compares False
        decidable = self.expected_pairs(delta, scale) <= self.max_n / 2
        return EndsCheck(significant, decidable, p_value, per_look, math.exp(delta), scale, int(d.size))

    def classify(self, ends: EndsCheck, probe: ArrayLike, reference: ArrayLike,
                 reference_is_bad: ArrayLike) -> Classification:
        """Call the probe good or bad, or ask for more (see the module doc).

        ``probe[i]`` was run beside ``reference[i]``, a run of the bad end where
        ``reference_is_bad[i]``, else of the good end.
        """
        delta = ends.delta
        if not math.isfinite(delta) or delta == 0:
            raise ValueError("the ends must differ (a finite, non-zero step)")
        p = np.asarray(probe, dtype=float).reshape(-1)
        r = np.asarray(reference, dtype=float).reshape(-1)
        is_bad = np.asarray(reference_is_bad, dtype=bool).reshape(-1)
        if not p.size == r.size == is_bad.size:
            raise ValueError("probe, reference and reference_is_bad differ in length")
        keep = np.isfinite(p) & np.isfinite(r) & (p > 0) & (r > 0)
        z, is_bad = np.log(p[keep]) - np.log(r[keep]), is_bad[keep]
        if z.size == 0:
            return Classification(Call.MORE, 0.0, 0.5, 0, False, math.nan)
        # the scale: the ends' pairs and the probe's, each group around its own centre
        scale, _ = self._scale(ends, z, is_bad)
        w = z + np.where(is_bad, delta / 2, -delta / 2)
        llr = float((_log_t((w - delta / 2) / scale) - _log_t((w + delta / 2) / scale)).sum())
        position = 0.5 + huber_centre(w, scale) / delta
        confidence = 1.0 / (1.0 + math.exp(-min(abs(llr), 700.0)))
        leaning = Call.BAD if llr > 0 else Call.GOOD
        n = int(z.size)
        if n >= self.min_n and (llr >= self.upper or llr <= self.lower):
            return Classification(leaning, llr, confidence, n, False, position)
        if n >= self.max_n:
            return Classification(leaning, llr, confidence, n, True, position)
        return Classification(Call.MORE, llr, confidence, n, False, position)

    @staticmethod
    def _scale(ends: EndsCheck, z: NDArray[np.float64], is_bad: NDArray[np.bool_]) -> tuple[float, float]:
        """(scale, its degrees of freedom): the ends' scale, pooled with the probe's residuals
        once it has enough pairs."""
        groups = [z[~is_bad], z[is_bad]]
        probe_scale, probe_df, _ = pooled_scale(groups)
        ends_df = max(1.0, WINSOR_EFFICIENCY * (ends.pairs - 1))
        if not math.isfinite(probe_scale) or probe_df < 2:
            return ends.scale, ends_df
        pooled = math.sqrt((ends_df * ends.scale ** 2 + probe_df * probe_scale ** 2) / (ends_df + probe_df))
        return pooled, ends_df + probe_df


@dataclass(frozen=True)
class EndsDistance:
    """The probe against each end measured beside it: like neither end?

    Two robust one-sample t-tests of the probe's log ratios, those against good runs and
    those against bad runs (Huber centres over their standard errors with the pooled
    scale, Student's t with its degrees of freedom: the ends' and the probe's). ``neither`` is set when both
    reject at ``alpha``: "between" the ends, or "beyond old" / "beyond new".
    """

    neither: str | None
    vs_old: float          # log(probe / old), NaN without a pair against old
    vs_new: float
    p_old: float
    p_new: float
    alpha: float


def ends_distance(ends: EndsCheck, probe: ArrayLike, reference: ArrayLike, reference_is_bad: ArrayLike,
                  alpha: float) -> EndsDistance:
    """Is the probe significantly apart from both ends (see EndsDistance)?"""
    p = np.asarray(probe, dtype=float).reshape(-1)
    r = np.asarray(reference, dtype=float).reshape(-1)
    is_bad = np.asarray(reference_is_bad, dtype=bool).reshape(-1)
    keep = np.isfinite(p) & np.isfinite(r) & (p > 0) & (r > 0)
    z, is_bad = np.log(p[keep]) - np.log(r[keep]), is_bad[keep]
    # the t's degrees of freedom are the pooled scale's: the ends' pairs and the probe's own
    scale, df = SequentialTest._scale(ends, z, is_bad)
    centres, ps = [], []
    for side in (z[~is_bad], z[is_bad]):
        centre = huber_centre(side, scale)
        ps.append(robust_t_p(centre, scale / math.sqrt(side.size * HUBER_EFFICIENCY), df)
                  if side.size else math.nan)
        centres.append(centre)
    vs_old, vs_new = centres
    neither = None
    if ps[0] < alpha and ps[1] < alpha:
        step = ends.delta
        if np.sign(vs_old) != np.sign(step):
            neither = "beyond old"
        elif np.sign(vs_new) == np.sign(step):
            neither = "beyond new"
        else:
            neither = "between"
    return EndsDistance(neither, vs_old, vs_new, ps[0], ps[1], alpha)


def position_error(ends: EndsCheck, probe: ArrayLike, reference: ArrayLike, reference_is_bad: ArrayLike) -> float:
    """The standard error of a probe's position (0 = at good, 1 = at bad): its Huber centre's
    over the step (the pooled scale over sqrt(n x efficiency), in units of Δ). NaN without pairs."""
    p = np.asarray(probe, dtype=float).reshape(-1)
    r = np.asarray(reference, dtype=float).reshape(-1)
    is_bad = np.asarray(reference_is_bad, dtype=bool).reshape(-1)
    keep = np.isfinite(p) & np.isfinite(r) & (p > 0) & (r > 0)
    z, is_bad = np.log(p[keep]) - np.log(r[keep]), is_bad[keep]
    if not z.size or not math.isfinite(ends.delta) or ends.delta == 0:
        return math.nan
    scale, _ = SequentialTest._scale(ends, z, is_bad)
    return scale / (abs(ends.delta) * math.sqrt(z.size * HUBER_EFFICIENCY))
