"""Pure numerics on arrays of samples: no I/O, no printing, no database.

Modules, one job each (modelled on golang.org/x/perf benchmath):
  warnings      StatWarning: what a statistic could not assume, returned as a value
  summary       centres (amean, hmean, gmean, median), spread, best-N% means, percentiles
  checks        detectors: sample size, zero spread, high CoV, outliers, bimodality, trend
  intervals     confidence intervals: mean (t), median (order statistics), ratio (bootstrap)
  changepoints  change points in a history: detect() by mosum, E-divisive (Otava), PELT, binseg
  mosum         the default detector: robust multiscale moving sums, calibrated per point
  selfnormalised  Shao & Zhang's self-normalised test for one step in a segment (mosum's)
  significance  Welch's t, Mann-Whitney U, Mann-Kendall, Benjamini-Hochberg
  rules         the mmtests band rule and the lkp-tests range rule
  difference    compare one row, decide the verdicts of a report under FDR control
  sequential    bisect's paired SPRT: is a commit like the good end or the bad end?
  sequential_ab the always-valid A/B stop rule of an interleaved run (a confidence sequence)
"""

from perflab.stats.changepoints import ChangePoint, binseg, detect, e_divisive, oriented, pelt
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
from perflab.stats.difference import METHOD_NAMES, Difference, Method, compare, decide
from perflab.stats.intervals import Interval, bootstrap_ratio_ci, mean_ci, median_ci
from perflab.stats.rules import RuleResult, lkp_range_rule, mmtests_band_rule
from perflab.stats.significance import (
    FdrResult,
    WelchResult,
    benjamini_hochberg,
    mann_kendall,
    mann_whitney,
    min_attainable_p,
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

__all__ = [
    "METHOD_NAMES", "ChangePoint", "Difference", "FdrResult", "Interval", "Method", "RuleResult",
    "StatWarning",
    "Summary", "WelchResult", "amean", "benjamini_hochberg", "best_mean", "binseg",
    "bimodality_ratio", "bootstrap_ratio_ci", "centre", "check_bimodal", "check_cov",
    "check_outliers", "check_sample_size", "check_spread", "check_trend", "clean", "compare",
    "cov", "decide", "detect", "e_divisive", "gmean", "hmean", "lkp_range_rule", "mann_kendall", "mann_whitney",
    "mean_ci", "median", "median_ci", "min_attainable_p", "mmtests_band_rule", "modified_z_scores", "oriented",
    "pelt", "percentiles",
    "spearman_trend", "stddev", "summarize", "welch_t",
]
