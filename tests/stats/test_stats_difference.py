"""compare() and decide(): orientation, intervals, verdicts, FDR across a report, edge cases."""

import math
from dataclasses import replace

import numpy as np
import pytest
import scipy.stats

from perflab.model.methods import METHOD_NAMES
from perflab.model.records import Direction, MeanKind
from perflab.model.verdicts import Verdict, WarningSide
from perflab.stats import compare, decide, hmean

METHODS = list(METHOD_NAMES)
JITTER = np.array([-0.5, 0.0, 0.5, -0.25, 0.25, 0.1, -0.1, 0.3, -0.3, 0.0])
BASE = 100 + JITTER             # amean 100
UP = 110 + JITTER[::-1]         # amean 110
DOWN = 90 + JITTER[::-1]        # amean 90


def codes(d):
    return {w.kind for w in d.warnings}


@pytest.mark.parametrize("method", METHODS)
def test_change_is_oriented_positive_better(method):
    lower = dict(direction=Direction.LOWER, mean_kind=MeanKind.ARITHMETIC, method=method)
    higher = dict(direction=Direction.HIGHER, mean_kind=MeanKind.ARITHMETIC, method=method)
    # higher is better: new/base·100 − 100; lower is better: 100 − new/base·100
    assert compare(BASE, UP, **higher).change_pct == pytest.approx(10.0)
    assert compare(BASE, UP, **lower).change_pct == pytest.approx(-10.0)
    assert compare(BASE, DOWN, **higher).change_pct == pytest.approx(-10.0)
    assert compare(BASE, DOWN, **lower).change_pct == pytest.approx(10.0)
    assert compare(BASE, UP, **higher).verdict is Verdict.IMPROVEMENT
    assert compare(BASE, UP, **lower).verdict is Verdict.REGRESSION
    assert compare(BASE, DOWN, **higher).verdict is Verdict.REGRESSION
    assert compare(BASE, DOWN, **lower).verdict is Verdict.IMPROVEMENT


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("direction", list(Direction))
def test_interval_has_the_same_orientation(method, direction):
    d = compare(BASE, UP, direction=direction, mean_kind=MeanKind.ARITHMETIC, method=method)
    assert d.ci_low <= d.change_pct <= d.ci_high
    assert (d.ci_low > 0) if direction is Direction.HIGHER else (d.ci_high < 0)


def test_change_uses_the_metric_mean():
    d = compare(BASE, UP, direction=Direction.HIGHER, mean_kind=MeanKind.HARMONIC)
    assert d.base.centre == pytest.approx(hmean(BASE))
    assert d.change_pct == pytest.approx(100 * hmean(UP) / hmean(BASE) - 100)


def test_welch_log_row_fields():
    d = compare(BASE, UP, direction=Direction.HIGHER, mean_kind=MeanKind.HARMONIC, confidence=0.9)
    ref = scipy.stats.ttest_ind(np.log(UP), np.log(BASE), equal_var=False)
    assert d.p_value == pytest.approx(ref.pvalue) and d.q_value == d.p_value
    low, high = ref.confidence_interval(0.9)
    assert (d.ci_low, d.ci_high) == (pytest.approx(100 * math.expm1(low)), pytest.approx(100 * math.expm1(high)))
    assert d.method == "Welch t-test on log values" and d.method_key == "welch-log"
    assert d.significant and d.rule is None and d.warnings == ()


def test_no_change_and_inconclusive():
    rng = np.random.default_rng(1)
    steady = compare(rng.normal(100, 0.5, 30), rng.normal(100, 0.5, 30), direction=Direction.LOWER,
                     mean_kind=MeanKind.ARITHMETIC)
    assert steady.verdict is Verdict.NO_CHANGE and not steady.significant
    assert steady.ci_low >= -1 and steady.ci_high <= 1
    noisy = compare(rng.normal(100, 10, 5), rng.normal(100, 10, 5), direction=Direction.LOWER,
                    mean_kind=MeanKind.ARITHMETIC)
    assert noisy.verdict is Verdict.UNDECIDED and not noisy.significant
    # a tiny but real shift: significant by the test, but inside the 1% floor
    tiny = compare(rng.normal(100, 0.1, 30), rng.normal(100.3, 0.1, 30), direction=Direction.HIGHER,
                   mean_kind=MeanKind.HARMONIC)
    assert tiny.p_value < 1e-6 and tiny.verdict is Verdict.NO_CHANGE and not tiny.significant
    wide_floor = compare(BASE, UP, direction=Direction.HIGHER, mean_kind=MeanKind.HARMONIC, noise_floor=0.2)
    assert wide_floor.verdict is Verdict.NO_CHANGE


def test_decide_applies_benjamini_hochberg_across_the_report():
    template = compare(BASE, UP, direction=Direction.HIGHER, mean_kind=MeanKind.HARMONIC)
    ps = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459,
          0.3240, 0.4262, 0.5719, 0.6528, 0.7590, 1.000]
    rows = [replace(template, p_value=p, q_value=p) for p in ps]
    decided = decide(rows, q=0.05)
    assert [d.significant for d in decided] == [True] * 4 + [False] * 11
    assert [d.verdict for d in decided[:4]] == [Verdict.IMPROVEMENT] * 4
    assert {d.verdict for d in decided[4:]} == {Verdict.UNDECIDED}  # each was p < 0.05 alone
    np.testing.assert_allclose([d.q_value for d in decided], scipy.stats.false_discovery_control(ps))
    assert [d.p_value for d in decided] == ps


def test_decide_keeps_the_noise_floor_and_leaves_rules_alone():
    strong = compare(BASE, UP, direction=Direction.HIGHER, mean_kind=MeanKind.HARMONIC)
    small = replace(strong, change_pct=0.5, ci_low=0.2, ci_high=0.8)
    rule_row = compare(BASE, UP, direction=Direction.HIGHER, mean_kind=MeanKind.HARMONIC, method="mmtests")
    nan_row = compare([], UP, direction=Direction.HIGHER, mean_kind=MeanKind.HARMONIC)
    decided = decide([strong, small, rule_row, nan_row])
    assert decided[0].verdict is Verdict.IMPROVEMENT and decided[0].significant
    assert decided[1].verdict is Verdict.NO_CHANGE and not decided[1].significant
    assert decided[2] is rule_row and decided[2].significant and math.isnan(decided[2].q_value)
    assert decided[3].verdict is Verdict.UNDECIDED and math.isnan(decided[3].q_value)
    assert decide([]) == []


def test_compare_alone_equals_a_report_of_one():
    rng = np.random.default_rng(2)
    for _ in range(20):
        d = compare(rng.normal(100, 2, 8), rng.normal(101.5, 2, 8), direction=Direction.HIGHER,
                    mean_kind=MeanKind.HARMONIC)
        (alone,) = decide([d], q=0.05)
        assert (alone.verdict, alone.significant) == (d.verdict, d.significant)


def test_rule_rows_name_the_rule():
    d = compare(BASE, UP, direction=Direction.LOWER, mean_kind=MeanKind.ARITHMETIC, method="lkp")
    assert d.rule.rule == "lkp-tests range rule" and d.rule.changed and "lkp" in d.method
    assert math.isnan(d.p_value) and d.verdict is Verdict.REGRESSION
    assert "bootstrap" in d.interval


def test_unknown_method():
    with pytest.raises(ValueError, match="unknown method"):
        compare(BASE, UP, direction=Direction.LOWER, mean_kind=MeanKind.ARITHMETIC, method="t-test")


EDGE_CASES = {
    "base missing": ([], UP),
    "new missing": (BASE, []),
    "both missing": ([], []),
    "single samples": ([100.0], [110.0]),
    "single vs many": ([100.0], UP),
    "two vs two": ([100.0, 101.0], [110.0, 111.0]),
    "zeros under hmean": (np.r_[0.0, BASE], UP),
    "negative values": (BASE - 150, UP),
    "zero-mean base": ([-1.0, 0.0, 1.0, -0.5, 0.5], UP),
    "identical, equal": ([5.0] * 6, [5.0] * 6),
    "identical, different": ([5.0] * 6, [6.0] * 6),
    "unequal n": (BASE, UP[:4]),
    "nan values": (np.r_[BASE, np.nan], UP),
}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("kind", [MeanKind.HARMONIC, MeanKind.ARITHMETIC])
@pytest.mark.parametrize("case", list(EDGE_CASES))
def test_edge_cases_never_raise_and_never_invent_numbers(case, kind, method):
    base, new = EDGE_CASES[case]
    d = compare(base, new, direction=Direction.HIGHER, mean_kind=kind, method=method)
    (decided,) = decide([d])
    assert decided.verdict in set(Verdict)
    if not (np.size(base) and np.size(new)):
        assert math.isnan(d.change_pct) and d.verdict is Verdict.UNDECIDED and "no-samples" in codes(d)
    if math.isnan(d.change_pct) and d.rule is None:  # a rule may still flag it on its own terms
        assert not decided.significant


def test_edge_case_warnings_and_values():
    hi = dict(direction=Direction.HIGHER, mean_kind=MeanKind.HARMONIC)
    zeros = compare(np.r_[0.0, BASE], UP, **hi)
    assert math.isnan(zeros.change_pct) and math.isnan(zeros.p_value) and zeros.verdict is Verdict.UNDECIDED
    assert {"nonpositive-hmean", "nonpositive-log"} <= codes(zeros)
    assert any(w.side is WarningSide.BASE for w in zeros.warnings)
    single = compare([100.0], [110.0], **hi)
    assert single.change_pct == pytest.approx(10.0) and math.isnan(single.p_value)
    assert single.verdict is Verdict.UNDECIDED and "single-sample" in codes(single)
    same = compare([5.0] * 6, [5.0] * 6, **hi)
    assert same.change_pct == 0 and (same.ci_low, same.ci_high) == (0, 0) and same.verdict is Verdict.NO_CHANGE
    assert "zero-spread" in codes(same)
    step = compare([5.0] * 6, [6.0] * 6, **hi)
    assert step.change_pct == pytest.approx(20.0) and step.verdict is Verdict.IMPROVEMENT
    zero_mean = compare([-1.0, 0.0, 1.0, -0.5, 0.5], UP, direction=Direction.LOWER, mean_kind=MeanKind.ARITHMETIC)
    assert math.isnan(zero_mean.change_pct) and "nonpositive-centre" in codes(zero_mean)
    unequal = compare(BASE, UP[:4], **hi)
    assert "unequal-n" in codes(unequal) and "too-few-samples" in codes(unequal)
    few = compare(BASE[:3], UP[:3], method="mann-whitney", **hi)
    assert any("3 vs 3 samples cannot reach p < 0.05" in w.message for w in few.warnings)
    assert few.verdict is Verdict.UNDECIDED and few.min_p == pytest.approx(0.1)


def test_a_test_that_cannot_reach_the_level_is_undecided_never_no_change():
    """3 vs 3 under Mann-Whitney: its smallest p is 2/C(6,3) = 0.1, so even a 3x slowdown
    cannot be significant; the row must say undecided, not pass as "no change"."""
    lower = dict(direction=Direction.LOWER, mean_kind=MeanKind.ARITHMETIC)
    slow = compare([0.010, 0.0101, 0.0102], [0.030, 0.0301, 0.0302], method="mann-whitney", **lower)
    assert slow.verdict is Verdict.UNDECIDED and not slow.significant and slow.min_p == pytest.approx(0.1)
    # a flat pair would have had its interval inside the floor: still undecided at 3 vs 3
    flat = compare([1.0, 1.0001, 0.9999], [1.0, 1.0001, 0.9999], method="mann-whitney", **lower)
    assert flat.verdict is Verdict.UNDECIDED
    [decided] = decide([slow], 0.05)
    assert decided.verdict is Verdict.UNDECIDED


def test_min_attainable_p():
    """Each test says the smallest p it can give at the row's sizes (Difference.min_p)."""
    def min_p(method, n_base, n_new):
        return compare(np.arange(1.0, n_base + 1), np.arange(2.0, n_new + 2), method=method,
                       direction=Direction.LOWER, mean_kind=MeanKind.ARITHMETIC).min_p
    assert min_p("mann-whitney", 3, 3) == pytest.approx(0.1)
    assert min_p("mann-whitney", 4, 4) == pytest.approx(2 / 70)
    assert min_p("mann-whitney", 0, 4) == 1.0
    assert min_p("welch-log", 2, 2) == 0.0 and min_p("welch-log", 1, 5) == 1.0
    assert math.isnan(min_p("mmtests", 5, 5)) and math.isnan(min_p("lkp", 5, 5))


def test_mann_whitney_rows_rule_out_a_regression_no_more_often_than_stated_at_5_vs_5():
    """verdict's "good" (the interval's end above -T) at a true regression of exactly T:
    at most 2.5% (one side of a 95% interval); the percentile bootstrap gave 7.8%."""
    rng = np.random.default_rng(5)
    ruled_out = 0
    for trial in range(400):
        base = np.exp(0.02 * rng.standard_normal(5))
        new = 1.05 * np.exp(0.02 * rng.standard_normal(5))
        d = compare(base, new, direction=Direction.LOWER, mean_kind=MeanKind.ARITHMETIC, method="mann-whitney",
                    seed=trial)
        ruled_out += d.ci_low > -5.0
    assert ruled_out / 400 <= 0.025 + 3 * math.sqrt(0.025 * 0.975 / 400)


def test_no_direction_is_called_against_the_test_when_outliers_move_the_means():
    """A 4% regression in the bulk, with 1 run in 10 slowed 1.5-4x on either side: Mann-Whitney
    finds the shift while the ratio of means swings either way with the outliers. Before, 7-8%
    of the rows were called an improvement; a call now agrees with the interval too."""
    rng = np.random.default_rng(9)
    verdicts = []
    for trial in range(300):
        a, b = np.exp(0.03 * rng.standard_normal(10)), 1.04 * np.exp(0.03 * rng.standard_normal(10))
        a *= np.where(rng.random(10) < 0.1, rng.uniform(1.5, 4, 10), 1)
        b *= np.where(rng.random(10) < 0.1, rng.uniform(1.5, 4, 10), 1)
        d = compare(a, b, direction=Direction.LOWER, mean_kind=MeanKind.ARITHMETIC, method="mann-whitney", seed=trial)
        verdicts.append(d.verdict)
        if "opposite-estimate" in codes(d):
            assert d.verdict is Verdict.UNDECIDED and "point opposite ways" in " ".join(w.message for w in d.warnings)
    assert verdicts.count(Verdict.IMPROVEMENT) <= 3 and verdicts.count(Verdict.REGRESSION) > 60
