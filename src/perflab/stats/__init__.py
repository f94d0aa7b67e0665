"""Pure numerics on arrays of samples: no I/O, no printing, no database.

Modules, one job each (modelled on golang.org/x/perf benchmath):
  warnings      StatWarning: what a statistic could not assume, returned as a value
  rows          samples stacked by size, so a statistic of many is taken along a few blocks' rows
  summary       centres (amean, hmean, gmean, median), spread, best-N% means, percentiles
  checks        detectors: sample size, zero spread, high CoV, outliers, bimodality, trend
  distributions the few distribution functions the comparison needs, from scipy.special
  intervals     confidence intervals: mean (t), median (order statistics), ratio (bootstrap)
  significance  Welch's t, Mann-Whitney U, Mann-Kendall, Benjamini-Hochberg
  rules         the mmtests band rule and the lkp-tests range rule
  benchmath     benchstat's statistics, exactly (x/perf benchmath's AssumeNothing)
  resolution    why a row must not be judged even when its test rejects
  variance      run-to-run variance: the noise a single run cannot see
  host_prior    a host's prior of run-to-run variance, fitted by empirical Bayes (limma's)
  separate_runs the moderated test of two separate runs, borrowing the host's variance
  difference    compare one row, decide the verdicts of a report under FDR control
  compare_tests the tests of a row, one module each: welch-log, mann-whitney, mmtests, lkp
  methods       the code of a registered method (model/methods.py), imported by name on first use
  changepoints  change points in a history: detect() by a detector of the registry
  detectors     the detectors, one module each: mosum, e-divisive (Otava), pelt, binseg
  segment_tests segment statistics from prefix sums, Welch's test of neighbouring segments
  energy        E-divisive candidates (the energy statistic in sliding windows)
  penalised     PELT and seeded binary segmentation (penalised least squares)
  mosum         the default detector: robust multiscale moving sums, calibrated per point
  mosum_noise   its noise model: Hampel filter, variogram, null sd, long-run variances
  mosum_tail    its thresholds: Siegmund's tail of the maximum of the standardised MOSUM
  selfnormalised  Shao & Zhang's self-normalised test for one step in a segment (mosum's)
  commit_series a commit series' changes: excursions kept, steps placed robustly, p per commit
  tip           the tip detector: do the newest commits differ from the history before them?
  rerun         does an alerted step reproduce when both its commits are measured again?
  sequential    bisect's paired SPRT: is a commit like the good end or the bad end?
  sequential_ab the always-valid A/B stop rule of an interleaved run (a confidence sequence)

The package imports a submodule only when one of its names is first used (PEP 562): scipy and
numpy stay out of commands that need none of it (`perflab --help`, `runs`).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perflab.stats.changepoints import detect
    from perflab.stats.checks import (
        bimodality_ratio,
        check_bimodal,
        check_cov,
        check_outliers,
        check_sample_size,
        check_spread,
        check_trend,
        modified_z_scores,
    )
    from perflab.stats.detectors.points import ChangePoint
    from perflab.stats.difference import Difference, compare, decide
    from perflab.stats.intervals import Interval, bootstrap_ratio_ci, mean_ci, median_ci
    from perflab.stats.rules import RuleResult, lkp_range_rule, mmtests_band_rule
    from perflab.stats.significance import (
        FdrResult,
        WelchResult,
        benjamini_hochberg,
        mann_kendall,
        mann_whitney,
        spearman_trend,
        welch_t,
    )
    from perflab.stats.summary import (
        Summary,
        amean,
        best_mean,
        centre,
        clean,
        cov,
        gmean,
        hmean,
        median,
        percentiles,
        stddev,
        summarize,
    )
    from perflab.stats.warnings import StatWarning

_SUBMODULE_OF = {
    "ChangePoint": "detectors.points",
    "detect": "changepoints",
    "bimodality_ratio": "checks",
    "check_bimodal": "checks",
    "check_cov": "checks",
    "check_outliers": "checks",
    "check_sample_size": "checks",
    "check_spread": "checks",
    "check_trend": "checks",
    "modified_z_scores": "checks",
    "Difference": "difference",
    "compare": "difference",
    "decide": "difference",
    "Interval": "intervals",
    "bootstrap_ratio_ci": "intervals",
    "mean_ci": "intervals",
    "median_ci": "intervals",
    "RuleResult": "rules",
    "lkp_range_rule": "rules",
    "mmtests_band_rule": "rules",
    "FdrResult": "significance",
    "WelchResult": "significance",
    "benjamini_hochberg": "significance",
    "mann_kendall": "significance",
    "mann_whitney": "significance",
    "spearman_trend": "significance",
    "welch_t": "significance",
    "Summary": "summary",
    "amean": "summary",
    "best_mean": "summary",
    "centre": "summary",
    "clean": "summary",
    "cov": "summary",
    "gmean": "summary",
    "hmean": "summary",
    "median": "summary",
    "percentiles": "summary",
    "stddev": "summary",
    "summarize": "summary",
    "StatWarning": "warnings",
}


def __getattr__(name: str) -> Any:
    if name not in _SUBMODULE_OF:
        raise AttributeError(f"module 'perflab.stats' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"perflab.stats.{_SUBMODULE_OF[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ChangePoint", "Difference", "FdrResult", "Interval", "RuleResult",
    "StatWarning",
    "Summary", "WelchResult", "amean", "benjamini_hochberg", "best_mean",
    "bimodality_ratio", "bootstrap_ratio_ci", "centre", "check_bimodal", "check_cov",
    "check_outliers", "check_sample_size", "check_spread", "check_trend", "clean", "compare",
    "cov", "decide", "detect", "gmean", "hmean", "lkp_range_rule", "mann_kendall", "mann_whitney",
    "mean_ci", "median", "median_ci", "mmtests_band_rule", "modified_z_scores",
    "percentiles",
    "spearman_trend", "stddev", "summarize", "welch_t",
]
