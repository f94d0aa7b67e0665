"""Run-to-run variance: the part of a benchmark's noise that a single run cannot see.

Samples inside one run share the run's circumstances (process placement, caches, the
machine's state, the frequency it settled at), so two runs differ by more than their
samples suggest (Kalibera & Jones, "Rigorous benchmarking in reasonable time", 2013:
variance at each level, runs and iterations). On the log scale, a sample is

    log y_rj = mu + b_r + e_rj,   b_r ~ (0, sigma_b^2) per run,  e_rj ~ (0, sigma_w^2)

and the difference of two separate runs' mean logs has variance
sigma_w^2 (1/n_a + 1/n_b) + 2 sigma_b^2: the second term does not shrink with more
samples per run, only with more runs.

`between_runs` estimates sigma_b^2 from replicate runs (the one-way random-effects ANOVA
estimator, truncated at 0, with its degrees of freedom). Nothing inside one run can stand
in for it: the drift between blocks of one run measured 0 on a machine whose separate
runs of `sleep 0.010` differed by 14% (load phases shorter than a block, constant per run
placement), so without replicates the variance is unknown and said to be.
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

    @property
    def cov_pct(self) -> float:
        """The run-to-run spread as a CoV in % (sqrt(sigma_b^2) on the log scale)."""
        return 100.0 * math.sqrt(self.sigma2) if self.sigma2 >= 0 else math.nan


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
    return RunVariance(max(0.0, (ms_between - ms_within) / n0), float(k - 1), k, source)


def pooled(estimates: Sequence[RunVariance | None]) -> RunVariance | None:
    """Several estimates of the same sigma_b^2 pooled by their degrees of freedom."""
    known = [e for e in estimates if e is not None and e.df > 0]
    if not known:
        return None
    df = sum(e.df for e in known)
    return RunVariance(sum(e.sigma2 * e.df for e in known) / df, df, sum(e.runs for e in known),
                       known[0].source)
