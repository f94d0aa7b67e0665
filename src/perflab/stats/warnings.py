"""Warnings as values: what a statistic could not assume, returned beside the result.

A `StatWarning` (defined in ``perflab.model.verdicts``) has a stable machine-readable
``kind`` (renderers may group or filter by it) and a one-line human ``message`` that carries the numbers. The codes:

=====================  ======================================================
no-samples             a side has no values (a point missing on one side)
single-sample          one value: no spread, no test
too-few-samples        fewer than 5 values, or fewer than a method needs
unequal-n              base and new have different sample sizes
non-finite             NaN or infinite values were dropped
nonpositive-hmean      a value <= 0 under a harmonic mean (undefined)
nonpositive-gmean      a value <= 0 under a geometric mean (undefined)
nonpositive-log        a value <= 0 where a test works on log values
nonpositive-centre     a centre <= 0, so a change in % is undefined
zero-spread            all values identical (timer resolution? cached result?)
high-cov               coefficient of variation above 10%
outliers               modified z-score above 3.5
bimodal                the values fall into two separated groups
trend                  the values drift along the repetition order
run-variance           separate runs: how run-to-run variance entered the test
runs-to-decide         separate runs left undecided: the replicate runs that would decide
opposite-estimate      the change of the centres and the test's interval point opposite ways
=====================  ======================================================
"""

from __future__ import annotations

from perflab.model.verdicts import StatWarning

NO_SAMPLES = "no-samples"
SINGLE_SAMPLE = "single-sample"
TOO_FEW_SAMPLES = "too-few-samples"
UNEQUAL_N = "unequal-n"
NON_FINITE = "non-finite"
NONPOSITIVE_HMEAN = "nonpositive-hmean"
NONPOSITIVE_GMEAN = "nonpositive-gmean"
NONPOSITIVE_LOG = "nonpositive-log"
NONPOSITIVE_CENTRE = "nonpositive-centre"
ZERO_SPREAD = "zero-spread"
HIGH_COV = "high-cov"
OUTLIERS = "outliers"
BIMODAL = "bimodal"
TREND = "trend"
RUN_VARIANCE = "run-variance"
RUNS_TO_DECIDE = "runs-to-decide"
OPPOSITE_ESTIMATE = "opposite-estimate"

__all__ = ["StatWarning"]
