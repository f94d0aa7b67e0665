"""stats/rerun.py: the verdict on an alerted step from a rerun's rounds, against known values."""

import math

import pytest
from scipy.stats import t

from perflab.stats.rerun import NOT_REPRODUCED, REPRODUCED, ROUNDS, UNDECIDED, judge, order


def test_rounds_alternate_abba():
    assert order(4) == ["good", "bad", "bad", "good", "good", "bad", "bad", "good"]
    assert order().count("good") == order().count("bad") == ROUNDS


def test_interval_is_the_t_interval_of_the_round_log_ratios():
    good, bad = [100.0, 110.0, 90.0, 105.0], [101.0, 112.0, 90.5, 104.0]
    d = [math.log(b / a) for a, b in zip(good, bad)]
    mean = sum(d) / 4
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / 3)
    half = t.isf(0.025, 3) * sd / 2
    found = judge(good, bad, before=100.0, after=120.0)
    assert found.ratio == pytest.approx(math.exp(mean))
    assert (found.low, found.high) == (pytest.approx(math.exp(mean - half)), pytest.approx(math.exp(mean + half)))
    # +20% alerted; the rerun's upper end (+1.6%) is below half of it (log 1.2 / 2 = +9.5%)
    assert found.outcome == NOT_REPRODUCED and found.rounds == 4


def test_a_step_that_holds_side_by_side_is_reproduced_either_way():
    good = [20.0, 21.0, 19.5, 20.5]
    assert judge(good, [2 * g for g in good], before=20.0, after=41.0).outcome == REPRODUCED
    # a way back (after < before): read in its own direction
    assert judge([2 * g for g in good], good, before=41.0, after=20.0).outcome == REPRODUCED
    # the same rerun does not reproduce a step the other way
    assert judge(good, [2 * g for g in good], before=41.0, after=20.0).outcome == NOT_REPRODUCED


def test_rounds_that_disagree_or_too_few_are_undecided():
    assert judge([100, 100, 100, 100], [130, 95, 125, 90], before=100.0, after=120.0).outcome == UNDECIDED
    one = judge([100.0], [101.0], before=100.0, after=120.0)
    assert one.outcome == UNDECIDED and one.rounds == 1
    assert judge([100, 100], [100, 100], before=math.nan, after=120.0).outcome == UNDECIDED
    assert judge([0, -1], [1, 2], before=100.0, after=120.0).rounds == 0
