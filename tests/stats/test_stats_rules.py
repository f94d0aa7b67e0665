"""The mmtests band rule and the lkp-tests range rule on small worked examples."""

import numpy as np

from perflab.model.records import MeanKind
from perflab.stats import lkp_range_rule, mmtests_band_rule

BASE = [10.0, 11.0, 12.0]  # mean 11, sd 1


def test_mmtests_band_rule():
    # band = 1.96·(1 + 1) = 3.92
    far = mmtests_band_rule(BASE, [20.0, 21.0, 22.0])
    assert far.changed and far.sign == 1 and far.rule == "mmtests band rule"
    assert mmtests_band_rule(BASE, [14.0, 15.0, 16.0]).changed          # |Δ| = 4 > 3.92
    assert not mmtests_band_rule(BASE, [13.9, 14.9, 15.9]).changed      # |Δ| = 3.9
    lower = mmtests_band_rule(BASE, [6.0, 7.0, 8.0])
    assert lower.changed and lower.sign == -1
    # it uses the row's mean: hmean of [1, 2, 4] is 12/7
    h = mmtests_band_rule([1.0, 2.0, 4.0], [10.0, 10.0, 10.0], MeanKind.HARMONIC)
    assert h.changed and "hmean" in h.detail
    too_few = mmtests_band_rule([1.0], [2.0, 3.0])
    assert not too_few.changed and too_few.warnings[0].kind == "too-few-samples"


def test_mmtests_band_rule_is_stricter_than_a_t_test():
    # 30 runs, 2 sd apart: any t-test says yes (p ~ 1e-30), the band rule says no
    rng = np.random.default_rng(0)
    a = rng.normal(100, 1, 30)
    assert not mmtests_band_rule(a, a + 2.0).changed


def test_lkp_range_rule_disjoint():
    up = lkp_range_rule(BASE, [13.0, 14.0, 15.0])
    assert up.changed and up.sign == 1 and up.rule == "lkp-tests range rule"
    down = lkp_range_rule(BASE, [7.0, 8.0, 9.0])
    assert down.changed and down.sign == -1
    # the ranges overlap, but min(new) 11.5 > median(base) 11 and median(new) 12.5 > max(base) 12
    assert lkp_range_rule(BASE, [11.5, 12.5, 13.5]).changed
    # min(new) 10.5 is not above median(base) 11
    assert not lkp_range_rule(BASE, [10.5, 12.5, 13.0]).changed


def test_lkp_range_rule_ratio_thresholds():
    # disjoint, but the medians differ by 0.6% < 1%
    assert not lkp_range_rule([100.0, 100.2, 100.4], [100.6, 100.8, 101.0]).changed
    # disjoint, medians 2.5% apart: a change for performance stats, not for others (5%)
    base, new = [100.0, 101.0, 102.0], [103.0, 103.5, 104.0]
    assert lkp_range_rule(base, new).changed
    assert not lkp_range_rule(base, new, performance_stat=False).changed


def test_lkp_range_rule_uses_upper_middle_element_and_trims_at_32():
    # even n: the "mean" is x[n//2], here 3 (not the median 2.5), so min(new) = 2.8 is not above it
    assert not lkp_range_rule([1.0, 2.0, 3.0, 4.0], [2.8, 5.0, 6.0, 7.0]).changed
    assert lkp_range_rule([1.0, 2.0, 3.0, 4.0], [3.2, 5.0, 6.0, 7.0]).changed
    base = np.arange(32.0)
    new = np.arange(100.0, 132.0)
    new[5] = -5.0  # one wild run
    assert lkp_range_rule(base, new).changed              # 32 runs: one trimmed at each end
    assert not lkp_range_rule(base[:31], new[:31]).changed  # 31 runs: no trimming


def test_lkp_range_rule_needs_three_runs_on_one_side():
    two = lkp_range_rule([1.0, 1.1], [2.0, 2.1])
    assert not two.changed and two.warnings[0].kind == "too-few-samples"
    assert lkp_range_rule([1.0, 1.1, 1.05], [2.0]).changed
    assert not lkp_range_rule([], [2.0, 2.1, 2.2]).changed


def test_mmtests_on_separate_runs_applies_the_noise_floor_it_states():
    """Separate runs widen a rule's noise floor by their run-to-run spread; a change the band
    rule flags inside that floor is not called (issue 41: -4.14% starred beside a 18.7% floor)."""
    from perflab.model.records import Direction, MeanKind
    from perflab.model.verdicts import Verdict
    from perflab.stats.difference import compare
    from perflab.stats.variance import RunVariance
    rng = np.random.default_rng(5)
    base = 1.0 * np.exp(rng.normal(0, 0.001, 20))
    new = 1.0414 * np.exp(rng.normal(0, 0.001, 20))
    spread = RunVariance(0.0045, 4.0, 5, "replicate runs")   # a run's level varies by 6.7%
    row = compare(base, new, direction=Direction.LOWER, mean_kind=MeanKind.ARITHMETIC, method="mmtests",
                  separate_runs=True, run_variance=spread)
    assert row.rule is not None and row.rule.changed             # the band rule flags it ...
    assert row.noise_floor > 0.0414 and row.verdict is Verdict.UNDECIDED and not row.significant
    same_run = compare(base, new, direction=Direction.LOWER, mean_kind=MeanKind.ARITHMETIC, method="mmtests")
    assert same_run.verdict is Verdict.REGRESSION                # ... and in one run it is the rule's call
