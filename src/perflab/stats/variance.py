"""Run-to-run variance: the part of a benchmark's noise that a single run cannot see.

Kalibera & Jones (2013): log y_rj = mu + b_r + e_rj, b_r ~ (0, sigma_b^2) per run and
e_rj ~ (0, sigma_w^2), so two separate runs' mean logs differ with variance
sigma_w^2 (1/n_a + 1/n_b) + 2 sigma_b^2, whose second term shrinks only with more runs.
`between_runs` estimates sigma_b^2 from replicate runs (one-way random-effects ANOVA,
truncated at 0) and keeps the mean squares, with which `difference_variance` tests with
the run as the unit (exactly Student's t on k - 1 df under the normal model). Without
replicates the variance is unknown and said to be: nothing inside one run stands in for it.
Method: docs/methods.md (run-to-run variance); figures: bench/README.md, "Method history".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike


@dataclass(frozen=True)
class RunVariance:
    """sigma_b^2 on the log scale, its degrees of freedom, and where it came from."""

    sigma2: float
    df: float
    runs: int            # how many runs (or blocks) it was estimated from
    source: str          # "replicate runs", "drift inside the runs", ...
    ms_between: float = math.nan   # the ANOVA's mean squares of the logs (df, and
    ms_within: float = math.nan    # within_df), and its mean run size n0; NaN when the
    within_df: float = math.nan    # estimate came from elsewhere
    n0: float = math.nan
    paired: bool = False           # from rounds of two runs back to back (``paired_runs``)

    @property
    def cov_pct(self) -> float:
        """The run-to-run spread as a CoV in % (sqrt(sigma_b^2) on the log scale)."""
        return 100.0 * math.sqrt(self.sigma2) if self.sigma2 >= 0 else math.nan

    def difference_variance(self, n_a: int, n_b: int, own: float, own_df: float,
                            shares: tuple[float, float] = (1.0, 1.0)) -> tuple[float, float]:
        """(variance, df) of the difference of two sides' mean logs of n_a and n_b values.

        A side pooled from runs of m_j values has mean-log variance
        sigma_w^2 / n + sigma_b^2 * s, with s = sum (m_j / n)^2 its ``shares`` (1 for one
        run, 1/r for r runs of equal size: history's segments). From the mean squares,
        untruncated: ((s_a + s_b)/n0) MS_between + (1/n_a + 1/n_b - (s_a + s_b)/n0) MS_within,
        Satterthwaite's df over the two (exactly MS_between's chi-square, k - 1 df, when
        the sides are single runs of n0 values). When the second coefficient is negative
        (runs larger than the estimate's n0) it is dropped: a difference of mean squares
        can come out near 0 and Satterthwaite's df with it (a 1e133-wide interval), and
        MS_between alone overstates the variance, so the test stays conservative. Never
        below `own`, the pair's own variance of the difference (df `own_df`): two runs
        are not known better than their samples say. Without mean squares:
        own + (s_a + s_b) sigma_b^2, combined the same way. ``paired``: the sides are R
        rounds of pairs, and their difference has the variance of the rounds' mean difference
        alone, 2 sigma_b^2 / R on R - 1 df (Student's paired t); ``own`` holds whatever moved
        the machine between rounds, which the pairs cancel.
        """
        if self.paired:
            return 2 * self.sigma2 / self.runs, self.df
        runs_weight = shares[0] + shares[1]
        if not math.isfinite(self.ms_between):
            if self.sigma2 <= 0:
                return own, own_df
            extra = runs_weight * self.sigma2
            return own + extra, (own + extra) ** 2 / (own**2 / own_df + extra**2 / self.df)
        c_between = runs_weight / self.n0
        c_within = max(1 / n_a + 1 / n_b - c_between, 0.0)
        variance = c_between * self.ms_between + c_within * self.ms_within
        if variance <= own:
            return own, own_df
        df = variance**2 / ((c_between * self.ms_between) ** 2 / self.df
                            + (c_within * self.ms_within) ** 2 / self.within_df)
        return variance, df


def run_shares(sizes: Sequence[int]) -> float:
    """sum (m_j / n)^2 over the runs a side pools, of m_j values each (see `difference_variance`)."""
    total = sum(sizes)
    return sum((m / total) ** 2 for m in sizes) if total else 1.0


def _logs(values: ArrayLike) -> np.ndarray:
    x = np.asarray(values, dtype=float).reshape(-1)
    x = x[np.isfinite(x)]
    return np.asarray(np.log(x[x > 0]), dtype=float)


def between_runs(groups: Sequence[ArrayLike], source: str = "replicate runs") -> RunVariance | None:
    """sigma_b^2 from two or more runs of the same thing (each group one run's values).

    One-way random-effects ANOVA on the logs: (MS_between - MS_within) / n0, with n0 the
    unbalanced-design mean group size, truncated at 0; df = runs - 1. None with fewer
    than 2 runs of 2+ positive values.
    """
    logs = [g for g in (_logs(v) for v in groups) if g.size >= 2]
    k = len(logs)
    if k < 2:
        return None
    sizes = np.array([g.size for g in logs], dtype=float)
    total = sizes.sum()
    grand = sum(g.sum() for g in logs) / total
    ss_between = float(sum(n * (g.mean() - grand) ** 2 for n, g in zip(sizes, logs)))
    ss_within = float(sum(((g - g.mean()) ** 2).sum() for g in logs))
    ms_between = ss_between / (k - 1)
    ms_within = ss_within / (total - k)
    n0 = (total - (sizes**2).sum() / total) / (k - 1)
    return RunVariance(max(0.0, (ms_between - ms_within) / n0), float(k - 1), k, source,
                       ms_between, ms_within, float(total - k), n0)


def pooled(estimates: Sequence[RunVariance | None]) -> RunVariance | None:
    """Several estimates of the same sigma_b^2 pooled by their degrees of freedom."""
    known = [e for e in estimates if e is not None and e.df > 0]
    if not known:
        return None
    df = sum(e.df for e in known)
    within_df = sum(e.within_df for e in known)

    def by_df(field: str, weight: str = "df") -> float:  # NaN if any estimate lacks it
        return float(sum(getattr(e, field) * getattr(e, weight) for e in known)
                     / sum(getattr(e, weight) for e in known))

    return RunVariance(by_df("sigma2"), df, sum(e.runs for e in known), known[0].source,
                       by_df("ms_between"), by_df("ms_within", "within_df"), within_df, by_df("n0"))


def paired_runs(base_runs: Sequence[ArrayLike], new_runs: Sequence[ArrayLike],
                source: str = "runs measured in pairs") -> RunVariance | None:
    """sigma_b^2 from runs measured in pairs (round i: ``base_runs[i]`` beside
    ``new_runs[i]``, back to back): half the variance of the rounds' differences of mean
    logs, on R - 1 df. Two sides pooled from the R rounds then differ with the variance of
    the rounds' mean difference (var(d_i) / R, Student's paired t): whatever the machine's
    state did to both runs of a round cancels, as in stats/rerun.py. None below 2 rounds
    of positive values on both sides."""
    d = []
    for a, b in zip(base_runs, new_runs):
        la, lb = _logs(a), _logs(b)
        if la.size and lb.size:
            d.append(float(lb.mean() - la.mean()))
    if len(d) < 2:
        return None
    return RunVariance(float(np.var(d, ddof=1)) / 2, float(len(d) - 1), len(d), source, paired=True)
