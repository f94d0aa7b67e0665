"""A host's prior of run-to-run variance, fitted by empirical Bayes as limma does.

Each replicate group (k runs of one benchmark, point and metric on one host) gives
s_g^2 = MS_between / n0 (`stats.variance.between_runs`) on d_g = k - 1 df, with its
within-run part w_g = MS_within / n0 as covariate. `fit_prior` fits the scaled inverse
chi-square prior sigma_g^2 ~ s0^2 d0 / chi^2_d0 (Smyth 2004, sec. 6: moments of log s_g^2
as limma's fitFDist; a line in log w, kept when its slope is significant at TREND_ALPHA, as
limma-trend). `moderated` is the posterior (d0 s0^2 + d s^2) / (d0 + d) on d0 + d df; with no
replicates (d = 0), the prior alone. (The between-run part (MS_between - MS_within) / n0 is
not the data: it is often <= 0, and limma's offsets of zero variances collapse d0.)
Method: docs/methods.md (run-to-run variance).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perflab.stats.distributions import f_sf, nct_sf, norm_ppf, t_ppf, t_sf

#: limma's offset of zero variances (fitFDist): x = max(x, ZERO_OFFSET * median(x)). A group
#: whose runs agree within their own noise has s^2 <= 0; offsetting widens the spread of
#: log s^2, so d0 comes out smaller: the conservative side.
ZERO_OFFSET = 1e-5
#: A trend in the within-run variance is used when its slope's two-sided p is below this.
TREND_ALPHA = 0.05
#: Fewer groups than this fit no prior (the variance of log s^2 needs 2+ residual df).
MIN_GROUPS = 3


@dataclass(frozen=True)
class Spread:
    """One replicate group: the variance of a run's mean log (s^2, df) and its within-run part."""

    s2: float            # MS_between / n0: sigma_b^2 + sigma_w^2 / n0
    df: float            # k - 1
    within: float        # MS_within / n0: the within-run part of s2 (the trend's covariate)
    n0: float            # the runs' mean size (unbalanced ANOVA)


@dataclass(frozen=True)
class Prior:
    """A scaled inverse chi-square prior of a run mean's variance: s0^2 (a line in the
    within-run part when trended) and d0."""

    s0_squared: float            # at the groups' mean covariate when trended
    d0: float                    # prior degrees of freedom (finite: at most the data's)
    groups: int                  # replicate groups it was fitted on
    data_df: float               # their degrees of freedom in all
    slope: float = 0.0           # of E log s^2 in log within-run variance (0: no trend)
    centre: float = 0.0          # the covariate's mean (log within-run variance)
    low: float = -math.inf       # the covariate's range among the groups (log of the
    high: float = math.inf       # within-run part); kept with or without a trend

    def scale(self, within: float = math.nan) -> float:
        """s0^2 for runs whose mean log has within-run part ``within`` (sigma_w^2 / n)."""
        if self.slope == 0.0 or not within > 0 or not math.isfinite(self.low):
            return self.s0_squared
        x = min(max(math.log(within), self.low), self.high)   # no extrapolation past the data
        return self.s0_squared * math.exp(self.slope * (x - self.centre))

    @property
    def cov_pct(self) -> float:
        """The prior's typical run-to-run spread, sqrt(s0^2) of logs, in %."""
        return 100.0 * math.sqrt(self.s0_squared)


def spread(groups: Sequence[np.ndarray]) -> Spread | None:
    """The variance of a run's mean log value (each array one run) and its within-run part;
    None with fewer than 2 runs of 2+ positive values."""
    from perflab.stats.variance import between_runs
    anova = between_runs(groups)
    if anova is None:
        return None
    return Spread(anova.ms_between / anova.n0, anova.df, anova.ms_within / anova.n0, anova.n0)


def trigamma_inverse(x: float) -> float:
    """y with trigamma(y) = x, x > 0 (Newton's method from 0.5 + 1/x, as limma's trigammaInverse)."""
    from scipy.special import polygamma
    if x > 1e7:
        return 1.0 / math.sqrt(x)
    if x < 1e-6:
        return 1.0 / x
    y = 0.5 + 1.0 / x
    for _ in range(50):
        tri = float(polygamma(1, y))
        step = tri * (1.0 - tri / x) / float(polygamma(2, y))
        y += step
        if -step / y < 1e-8:
            break
    return y


def fit_prior(s2: Sequence[float], df: Sequence[float], covariate: Sequence[float] | None = None) -> Prior | None:
    """(s0^2, d0) of the scaled inverse chi-square that the groups' variances s2 (on df
    degrees of freedom each) are drawn from: limma's fitFDist (method of moments on log s2).
    ``covariate``: each group's within-run part, for a trend (see the module). d0 is
    capped at the groups' own total df: a prior never knows more than its data. None with
    fewer than MIN_GROUPS usable groups."""
    from scipy.special import digamma, polygamma
    x = np.asarray(s2, dtype=float)
    d = np.asarray(df, dtype=float)
    ok = np.isfinite(x) & (d > 0)
    x, d = np.maximum(x[ok], 0.0), d[ok]
    if x.size < MIN_GROUPS:
        return None
    median = float(np.median(x))
    x = np.maximum(x, ZERO_OFFSET * (median if median > 0 else float(x.max()) or 1.0))
    e = np.log(x) - digamma(d / 2) + np.log(d / 2)
    g = e.size
    slope, centre, low, high, residual_df = 0.0, 0.0, -math.inf, math.inf, g - 1
    fitted = np.full(g, e.mean())
    z = np.log(np.asarray(covariate, dtype=float)[ok]) if covariate is not None else np.empty(0)
    if z.size and np.all(np.isfinite(z)):
        centre, low, high = float(z.mean()), float(z.min()), float(z.max())
        if g >= MIN_GROUPS + 1 and high > low:
            b, a = np.polyfit(z, e, 1)
            residuals = e - (a + b * z)
            se = math.sqrt(float(residuals @ residuals) / (g - 2) / float(((z - z.mean()) ** 2).sum()))
            if se > 0 and 2 * t_sf(abs(b) / se, g - 2) < TREND_ALPHA:
                slope, residual_df, fitted = float(b), g - 2, a + b * z
    excess = float(((e - fitted) ** 2).sum() / residual_df - np.mean(polygamma(1, d / 2)))
    cap = float(d.sum())
    d0 = min(2.0 * trigamma_inverse(excess), cap) if excess > 0 else cap
    level = float(fitted.mean())   # the line's value at the covariate's mean, when trended
    s0 = math.exp(level + float(digamma(d0 / 2)) - math.log(d0 / 2))
    return Prior(s0, d0, g, cap, slope, centre, low, high)


def metric_kind(metric: str, unit: str, higher_is_better: bool) -> str:
    """The kind of a metric, which a host prior is fitted per: wall time, CPU time, rate, count.
    Their run-to-run variances differ in kind (CPU time does not see waiting; rates are
    inverse times of work done), so they do not share a prior."""
    if metric in ("user", "system") or "cpu" in metric.split(".")[-1] and unit in TIME_UNITS:
        return "cpu time"
    if unit in TIME_UNITS:
        return "wall time"
    return "rate" if higher_is_better else "count"


TIME_UNITS = frozenset({"s", "ms", "us", "µs", "ns", "usecs", "msecs", "secs"})


def moderated(prior: Prior, s2: float = math.nan, df: float = 0.0, within: float = math.nan) -> tuple[float, float]:
    """(posterior variance, its df): (d0 s0^2 + d s^2) / (d0 + d) on d0 + d df, s0^2 at
    ``within`` when trended; the prior alone when there are no replicates (df 0)."""
    scale = prior.scale(within)
    if not df > 0 or not math.isfinite(s2):
        return scale, prior.d0
    return (prior.d0 * scale + df * max(s2, 0.0)) / (prior.d0 + df), prior.d0 + df


def beyond_prior(prior: Prior, s2: float, df: float, within: float = math.nan) -> float:
    """Upper-tail p of a benchmark's own s^2 under the prior: s^2 / s0^2 ~ F(d, d0)."""
    if not df > 0 or not math.isfinite(s2):
        return math.nan
    return f_sf(max(s2, 0.0) / prior.scale(within), df, prior.d0)


def runs_to_decide(variance: float, prior_df: float, change: float, *, alpha: float = 0.05,
                   power: float = 0.8, limit: int = 1000) -> int | None:
    """Replicate runs per side that would call a change of ``change`` (relative, e.g. 0.02)
    with ``power`` at two-sided ``alpha``, ``variance`` a run mean's: r runs a side make the
    difference's variance 2 variance / r on prior_df + 2 (r - 1) df. None beyond ``limit``."""
    effect = abs(math.log1p(change))
    unit = 2 * variance
    if unit == 0:
        return 1
    if effect == 0:
        return None

    def enough(r: int) -> bool:
        df = prior_df + 2 * (r - 1)
        return nct_sf(t_ppf(1 - alpha / 2, df), df, effect / math.sqrt(unit / r)) >= power

    # the normal approximation's r is a lower bound (t's tails are wider): step up from it
    r = max(1, math.ceil(unit * (norm_ppf(1 - alpha / 2) + norm_ppf(power)) ** 2 / effect**2))
    while r <= limit:
        if enough(r):
            return r
        r = r + 1 if r < 16 else math.ceil(r * 1.05)
    return None
