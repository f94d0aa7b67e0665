"""The sequential good/bad classifier of bisect: error rates, speed, robustness, the ends check."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perflab.stats.sequential import Call, SequentialTest, huber_centre, pooled_scale


def _draw(rng, log_mean, sd, n, outliers=0.0):
    x = rng.normal(log_mean, sd, n)
    slow = rng.random(n) < outliers
    x[slow] += rng.uniform(0.1, 0.5, slow.sum())
    return np.exp(x)


def _sequential(test, rng, good, bad, log_mean, sd, outliers=0.0):
    values = []
    while True:
        values.append(float(_draw(rng, log_mean, sd, 1, outliers)[0]))
        c = test.classify(good, bad, values)
        if c.call is not Call.MORE:
            return c


@pytest.mark.parametrize("truth", ["good", "bad"])
def test_error_rate_of_decided_calls_is_near_the_stated_one(truth):
    # 5% step, 2% noise, 10 runs per end: the setting of the bisect test.
    test, rng = SequentialTest(alpha=0.01, beta=0.01), np.random.default_rng(7)
    delta, sd, trials = math.log(1.05), 0.02, 600
    wrong = forced = 0
    for _ in range(trials):
        good, bad = _draw(rng, 0.0, sd, 10), _draw(rng, delta, sd, 10)
        c = _sequential(test, rng, good, bad, 0.0 if truth == "good" else delta, sd)
        forced += c.low_confidence
        wrong += (c.call.value != truth) and not c.low_confidence
    # Binomial(600, 0.01): 6 expected, 14 is beyond its 99.9th percentile.
    assert wrong <= 14, f"{wrong} wrong calls of {trials}"
    assert forced <= 0.02 * trials


def test_far_apart_means_are_called_at_the_minimum():
    test, rng = SequentialTest(min_n=3), np.random.default_rng(1)
    good, bad = _draw(rng, 0.0, 0.02, 5), _draw(rng, math.log(1.5), 0.02, 5)
    for truth, centre in (("good", 0.0), ("bad", math.log(1.5))):
        c = _sequential(test, rng, good, bad, centre, 0.02)
        assert c.call.value == truth and c.n == 3 and not c.low_confidence
        assert c.confidence >= test.confidence


def test_fewer_than_min_runs_never_decide():
    test, rng = SequentialTest(min_n=3), np.random.default_rng(2)
    good, bad = _draw(rng, 0.0, 0.01, 5), _draw(rng, 1.0, 0.01, 5)
    assert test.classify(good, bad, good[:2]).call is Call.MORE


def test_a_commit_halfway_is_forced_at_max_with_low_confidence():
    test, rng = SequentialTest(max_n=12), np.random.default_rng(3)
    good, bad = _draw(rng, 0.0, 0.02, 20), _draw(rng, math.log(1.05), 0.02, 20)
    middle = math.sqrt(float(np.exp(np.mean(np.log(good)) + np.mean(np.log(bad)))))
    sample = middle * np.exp(np.tile([-0.01, 0.0, 0.01], 4))
    assert test.classify(good, bad, sample[:11]).call is Call.MORE
    c = test.classify(good, bad, sample)
    assert c.n == 12 and c.low_confidence and c.call in (Call.GOOD, Call.BAD)
    assert 0.5 <= c.confidence < test.confidence


def test_one_huge_outlier_does_not_decide_bad():
    test, rng = SequentialTest(), np.random.default_rng(4)
    good, bad = _draw(rng, 0.0, 0.02, 10), _draw(rng, math.log(1.05), 0.02, 10)
    sample = list(_draw(rng, 0.0, 0.02, 2)) + [3.0]  # a run 3x slower: the machine hiccupped
    assert test.classify(good, bad, sample).call is not Call.BAD


def test_works_for_a_drop_as_well_as_a_rise():
    test, rng = SequentialTest(), np.random.default_rng(5)
    good, bad = _draw(rng, 0.0, 0.02, 10), _draw(rng, math.log(0.9), 0.02, 10)
    assert _sequential(test, rng, good, bad, math.log(0.9), 0.02).call is Call.BAD
    assert _sequential(test, rng, good, bad, 0.0, 0.02).call is Call.GOOD


def test_huber_centre_and_scale_ignore_an_outlier():
    x = np.log(np.array([1.00, 1.01, 0.99, 1.02, 0.98, 5.0]))
    scale, df, efficiency = pooled_scale([x])
    assert 0.005 < scale < 0.05 and df > 1 and 0.05 <= efficiency <= 0.95
    assert abs(huber_centre(x, scale)) < 0.02
    assert huber_centre(np.array([2.0]), 0.1) == 2.0


def test_check_ends_separates_differ_from_identical():
    test, rng = SequentialTest(), np.random.default_rng(6)
    good, bad = _draw(rng, 0.0, 0.02, 20), _draw(rng, math.log(1.05), 0.02, 20)
    check = test.check_ends(good, bad, looks=6)
    assert check.significant and check.decidable and 1.02 < check.ratio < 1.08
    same = test.check_ends(good, _draw(rng, 0.0, 0.02, 20), looks=6)
    assert not same.significant
    assert not test.check_ends(good[:1], bad).significant


def test_identical_ends_are_rarely_called_different():
    test, rng = SequentialTest(), np.random.default_rng(8)
    flagged = sum(test.check_ends(_draw(rng, 0, 0.03, 10), _draw(rng, 0, 0.03, 10), alpha=0.01).significant
                  for _ in range(1000))
    assert flagged <= 20  # nominal 1%: 10 expected


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError):
        SequentialTest(alpha=0.7)
    with pytest.raises(ValueError):
        SequentialTest(min_n=5, max_n=3)
    with pytest.raises(ValueError):
        SequentialTest().classify([1.0], [2.0, 2.1], [1.0])
