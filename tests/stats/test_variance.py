"""Run-to-run variance: the ANOVA estimator, and how it enters the two-sample test."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perflab.model.records import Direction, MeanKind
from perflab.model.verdicts import Verdict
from perflab.stats import compare, decide, welch_t
from perflab.stats.variance import RunVariance, between_runs, paired_runs, pooled


def _runs(rng, k: int, n: int, sigma_b: float, sigma_w: float) -> list[np.ndarray]:
    return [np.exp(rng.normal(sigma_b * rng.standard_normal(), sigma_w, n)) for _ in range(k)]


def test_between_runs_recovers_the_run_level_variance():
    rng = np.random.default_rng(7)
    estimates = [between_runs(_runs(rng, 8, 20, 0.03, 0.05)).sigma2 for _ in range(300)]
    assert np.mean(estimates) == pytest.approx(0.03**2, rel=0.2)  # unbiased up to the truncation at 0
    none = between_runs(_runs(rng, 8, 20, 0.0, 0.05))
    assert none.sigma2 < 0.01**2 and none.df == 7 and none.runs == 8
    assert between_runs([np.ones(5)]) is None and between_runs([[1.0], [2.0]]) is None


def test_pooled_weights_by_degrees_of_freedom():
    a, b = RunVariance(1.0, 3, 4, "x"), RunVariance(4.0, 1, 2, "x")
    assert pooled([a, b, None]).sigma2 == pytest.approx(7 / 4) and pooled([None]) is None


def test_welch_adds_the_run_variance_and_its_degrees_of_freedom():
    base, new = [1.0, 1.01, 0.99, 1.0], [1.05, 1.06, 1.04, 1.05]
    plain = welch_t(base, new, log=True)
    wider = welch_t(base, new, log=True, run_variance=RunVariance(0.03**2, 4, 5, "x"))
    assert wider.p_value > plain.p_value and wider.ci_high - wider.ci_low > plain.ci_high - plain.ci_low
    assert wider.df < plain.df


@pytest.mark.parametrize("sigma_b", [0.0, 0.005, 0.01, 0.03])
def test_the_run_as_unit_keeps_the_level_with_few_calibration_runs(sigma_b):
    """5 calibration runs of 25 samples, then A/A pairs of separate runs: the test's false
    rate is its nominal 5% whatever the run effect, also where the truncated sigma_b^2 is
    often 0 (sigma_b^2 near sigma_w^2 / n) and adding it to the pair's variance is liberal."""
    rng = np.random.default_rng(5)
    trials, marked = 3000, 0
    for _ in range(trials):
        calibration = between_runs(_runs(rng, 5, 25, sigma_b, 0.05))
        a, b = _runs(rng, 2, 25, sigma_b, 0.05)
        marked += welch_t(a, b, log=True, run_variance=calibration).p_value < 0.05
    assert marked / trials <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / trials)  # 3 binomial sd


def test_separate_runs_aa_false_marks_hold_with_a_known_run_variance():
    """Two separate runs of one thing, whose levels differ by a run effect of 3%: treating
    samples as independent marks far more than 5%; adding the run variance does not."""
    rng = np.random.default_rng(11)
    known = RunVariance(0.03**2, 20, 21, "replicate runs")
    naive = modelled = 0
    trials = 400
    for _ in range(trials):
        a, b = _runs(rng, 2, 25, 0.03, 0.02)
        kw = dict(direction=Direction.LOWER, mean_kind=MeanKind.ARITHMETIC, noise_floor=0.0)
        naive += compare(a, b, **kw).significant
        modelled += compare(a, b, separate_runs=True, run_variance=known, **kw).significant
    assert naive / trials > 0.3
    assert modelled / trials <= 0.08   # 5% nominal, binomial slack for 400 trials


def test_unknown_run_variance_leaves_the_row_undecided_and_says_so():
    """No rule stands in for run-to-run variance: a large change between two runs whose
    variance nothing measured is undecided, not called (perflab's comparisons always give a
    prior, a default at least; docs/separate-runs.md)."""
    kw = dict(direction=Direction.LOWER, mean_kind=MeanKind.ARITHMETIC)
    a = [1.0, 1.001, 0.999, 1.0, 1.0005, 0.9995]
    b = [x * 1.5 for x in a]
    alone = compare(a, b, **kw)
    apart = compare(a, b, separate_runs=True, **kw)
    assert alone.verdict is Verdict.REGRESSION
    assert apart.verdict is Verdict.UNDECIDED and not apart.significant and not apart.judgeable
    assert decide([apart])[0].verdict is Verdict.UNDECIDED
    assert any(w.kind == "run-variance" and "unknown" in w.message and "perflab calibrate" in w.message
               for w in apart.warnings)
    assert math.isfinite(apart.change_pct)


def test_sides_pooling_many_runs_test_the_run_means_and_keep_a_finite_interval():
    """History's segments pool thousands of runs per side: the difference of their means
    has sigma_b^2 (1/r_a + 1/r_b), not 2 sigma_b^2, and a difference of mean squares must
    not drive Satterthwaite's df to ~0 (it gave a 1e133-wide interval and an overflow)."""
    from perflab.stats.variance import run_shares
    rng = np.random.default_rng(3)
    before, after = _runs(rng, 3000, 5, 0.0, 0.01), _runs(rng, 2000, 5, 0.0, 0.01)
    estimate = between_runs(before + after)
    a, b = np.concatenate(before), np.concatenate(after) * 1.05
    shares = (run_shares([5] * 3000), run_shares([5] * 2000))
    assert shares == pytest.approx((1 / 3000, 1 / 2000))
    variance, df = estimate.difference_variance(a.size, b.size, 0.0, 1.0, shares)
    assert variance == pytest.approx(estimate.ms_between * (1 / 3000 + 1 / 2000) / 5)
    assert df == pytest.approx(estimate.df)
    result = welch_t(a, b, log=True, run_variance=estimate, run_shares=shares)
    assert math.exp(result.ci_low) == pytest.approx(1.05, rel=0.002) and result.p_value < 1e-9
    # one run per side is the unit as before: 2 MS_between / n0 for runs of n0 values
    variance, df = estimate.difference_variance(5, 5, 0.0, 1.0)
    assert variance == pytest.approx(2 * estimate.ms_between / 5) and df == pytest.approx(estimate.df)


def test_runs_measured_in_pairs_cancel_what_a_round_shares():
    """Rounds whose machine state moves both of their runs by up to 30%: between the runs
    of each side that is run-to-run variance (ANOVA), read as pairs it cancels; the paired
    estimate is half the variance of the rounds' differences, on R - 1 df."""
    rng = np.random.default_rng(9)
    states = rng.normal(0, 0.3, 4)
    good = [np.exp(s + rng.normal(0, 0.01, 5)) for s in states]
    bad = [1.5 * np.exp(s + rng.normal(0, 0.01, 5)) for s in states]
    paired = paired_runs(good, bad)
    assert paired is not None and paired.df == 3 and paired.runs == 4
    d = [np.log(b).mean() - np.log(a).mean() for a, b in zip(good, bad)]
    assert np.isclose(paired.sigma2, np.var(d, ddof=1) / 2)
    unpaired = between_runs(good)
    assert unpaired is not None and paired.sigma2 < unpaired.sigma2 / 100
    assert paired_runs(good[:1], bad[:1]) is None
