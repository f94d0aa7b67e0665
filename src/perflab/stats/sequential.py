"""Sequential classification of a commit's samples as like-good or like-bad (for bisect).

The test (Wald's sequential probability ratio test, made robust and honest about the
ends being estimates):

* Work on log values: times and rates are ratio-scale, their noise multiplicative.
* Centres are Huber M-estimates (k = 1.345, 95% efficient under normal noise), the noise
  scale the pooled rms of residuals winsorised at 2.5 MADs: one slow outlier on a busy
  machine moves neither by more than a bounded amount.
* H_good: the commit's centre equals the good end's, H_bad: the bad end's. The ends are
  samples too, so under H_e the commit's centre estimate x is predicted as
  x ~ m_e + s·sqrt((1/n + 1/n_e)/eff)·t_df (eff: Huber's efficiency on the pooled residuals) (a flat prior on the end's true centre,
  Student's t for the estimated scale). The log likelihood ratio of the two predictions
  is compared with Wald's bounds log((1-beta)/alpha) (bad) and log(beta/(1-alpha)) (good).
* Confidence is the posterior probability of the call at equal prior odds,
  1/(1+exp(-|LLR|)): at the bounds with alpha = beta = 0.01 it is 99%.
* A commit is sampled at least `min_n` times; at `max_n` without a decision it is called
  by the sign of the LLR and marked low-confidence ("undecided at max").

`check_ends` is the first step of a bisect: do good and bad differ? Welch's t-test on
logs in spirit, made robust the same way: the difference of the two Huber centres over
its standard error s·sqrt((1/n_g + 1/n_b)/eff), Student's t with the pooled scale's
degrees of freedom, at alpha / looks per look (Bonferroni over the looks the caller may
take); and whether a commit sitting exactly at one end could be called within `probe_n`
samples. (Plain Welch on logs lets one slow run hide a 5% step on a busy machine.)
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray


HUBER_K = 1.345
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
class Classification:
    """The state of the test after the commit's n samples."""

    call: Call
    llr: float           # log likelihood ratio, bad over good (> 0 leans bad)
    confidence: float    # posterior probability of the call at equal prior odds
    n: int
    low_confidence: bool  # forced at max_n without reaching a bound
    centre: float         # the commit's centre (geometric-mean-like, original scale)
    scale: float          # the pooled noise sd of the log values used


@dataclass(frozen=True)
class EndsCheck:
    """Good vs bad before bisecting: do they differ, and can a commit be told apart?"""

    significant: bool
    decidable: bool       # a commit at either end's centre would be called within probe_n samples
    p_value: float        # the robust t-test on logs
    alpha_per_look: float
    ratio: float          # bad centre / good centre
    scale: float          # pooled sd of the logs


def log_values(values: ArrayLike) -> NDArray[np.float64]:
    """Finite positive values as logs; anything else is dropped."""
    x = np.asarray(values, dtype=float).reshape(-1)
    x = x[np.isfinite(x) & (x > 0)]
    return np.log(x)


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


def robust_t_p(difference: float, se: float, df: float) -> float:
    """Two-sided p of a difference of Huber centres over its standard error, Student's t."""
    from scipy import special  # lazily: importing scipy costs start-up time
    if not se > 0:
        return 0.0 if difference != 0 else math.nan
    return float(2 * special.stdtr(df, -abs(difference / se)))


def _log_t_density(z: float, df: float) -> float:
    """log of Student's t density (df may be fractional); normal when df is huge."""
    return (math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
            - (df + 1) / 2 * math.log1p(z * z / df))


def _llr(x: float, n: int, m_good: float, n_good: int, m_bad: float, n_bad: int,
         scale: float, df: float, efficiency: float) -> float:
    se_good = scale * math.sqrt((1 / n + 1 / n_good) / efficiency)
    se_bad = scale * math.sqrt((1 / n + 1 / n_bad) / efficiency)
    return (_log_t_density((x - m_bad) / se_bad, df) - math.log(se_bad)
            - _log_t_density((x - m_good) / se_good, df) + math.log(se_good))


@dataclass(frozen=True)
class SequentialTest:
    """Sequential good-vs-bad classifier: alpha = P(call bad | good), beta = P(call good | bad)."""

    alpha: float = 0.01
    beta: float = 0.01
    min_n: int = 3
    max_n: int = 30

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

    def classify(self, good: ArrayLike, bad: ArrayLike, sample: ArrayLike) -> Classification:
        """Call the commit's `sample` good or bad, or ask for more (see the module doc)."""
        g, b, x = log_values(good), log_values(bad), log_values(sample)
        if g.size < 2 or b.size < 2:
            raise ValueError("each end needs 2 or more positive values")
        scale, df, eff = pooled_scale([g, b, x])
        m_good, m_bad = huber_centre(g, scale), huber_centre(b, scale)
        if x.size == 0:
            return Classification(Call.MORE, 0.0, 0.5, 0, False, math.nan, scale)
        centre = huber_centre(x, scale)
        llr = _llr(centre, x.size, m_good, g.size, m_bad, b.size, scale, df, eff)
        confidence = 1.0 / (1.0 + math.exp(-min(abs(llr), 700.0)))
        leaning = Call.BAD if llr > 0 else Call.GOOD
        if x.size >= self.min_n and (llr >= self.upper or llr <= self.lower):
            return Classification(leaning, llr, confidence, x.size, False, math.exp(centre), scale)
        if x.size >= self.max_n:
            return Classification(leaning, llr, confidence, x.size, True, math.exp(centre), scale)
        return Classification(Call.MORE, llr, confidence, x.size, False, math.exp(centre), scale)

    def check_ends(self, good: ArrayLike, bad: ArrayLike, *, alpha: float = 0.01, looks: int = 1,
                   probe_n: int = 10) -> EndsCheck:
        """Do good and bad differ (robust t on logs at alpha/looks), and can commits be called?"""
        g, b = log_values(good), log_values(bad)
        per_look = alpha / max(1, looks)
        if g.size < 2 or b.size < 2:
            return EndsCheck(False, False, math.nan, per_look, math.nan, math.nan)
        scale, df, eff = pooled_scale([g, b])
        m_good, m_bad = huber_centre(g, scale), huber_centre(b, scale)
        p_value = robust_t_p(m_bad - m_good, scale * math.sqrt((1 / g.size + 1 / b.size) / eff), df)
        significant = bool(p_value < per_look)  # NaN compares False
        n = max(self.min_n, min(probe_n, self.max_n))
        at_good = _llr(m_good, n, m_good, g.size, m_bad, b.size, scale, df, eff)
        at_bad = _llr(m_bad, n, m_good, g.size, m_bad, b.size, scale, df, eff)
        decidable = at_good <= self.lower and at_bad >= self.upper
        return EndsCheck(significant, decidable, p_value, per_look,
                         math.exp(m_bad - m_good), scale)
