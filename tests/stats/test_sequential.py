"""The paired sequential good/bad classifier of bisect: error rates, drift, robustness, the ends check."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perflab.stats.sequential import Call, EndsCheck, SequentialTest, huber_centre, pooled_scale

STEP = math.log(1.05)


class Machine:
    """Runs on a simulated machine: log level = the commit's + a shared random-walk drift
    + normal noise, and a share of slow outliers (+10..50% unless told)."""

    def __init__(self, seed: int, sd: float = 0.03, drift: float = 0.0, outliers: float = 0.0,
                 slower: tuple[float, float] = (0.1, 0.5)):
        self.rng = np.random.default_rng(seed)
        self.sd, self.drift, self.outliers, self.slower = sd, drift, outliers, slower
        self.level = 0.0

    def run(self, commit_level: float) -> float:
        self.level += self.rng.normal(0.0, self.drift)
        x = commit_level + self.level + self.rng.normal(0.0, self.sd)
        if self.rng.random() < self.outliers:
            x += math.log1p(self.rng.uniform(*self.slower))
        return math.exp(x)


def _ends(test: SequentialTest, machine: Machine, pairs: int = 40, step: float = STEP) -> EndsCheck:
    good, bad = [], []
    for _ in range(pairs):
        good.append(machine.run(0.0))
        bad.append(machine.run(step))
    return test.check_ends(good, bad)


def _probe(test: SequentialTest, machine: Machine, ends: EndsCheck, level: float, step: float = STEP):
    probe, reference, is_bad = [], [], []
    while True:
        ref_bad = len(probe) % 2 == 1
        probe.append(machine.run(level))
        reference.append(machine.run(step if ref_bad else 0.0))
        is_bad.append(ref_bad)
        c = test.classify(ends, probe, reference, is_bad)
        if c.call is not Call.MORE:
            return c


@pytest.mark.parametrize("truth", ["good", "bad"])
def test_error_rate_of_decided_calls_is_near_the_stated_one(truth):
    # 5% step, 3% noise per run, 5% slow outliers: the setting of the bisect test
    test, trials, wrong, forced = SequentialTest(alpha=0.01, beta=0.01), 400, 0, 0
    for trial in range(trials):
        machine = Machine(trial, outliers=0.05)
        ends = _ends(test, machine)
        c = _probe(test, machine, ends, 0.0 if truth == "good" else STEP)
        forced += c.low_confidence
        wrong += (c.call.value != truth) and not c.low_confidence
    # Binomial(400, 0.01): 4 expected, 11 is beyond its 99.9th percentile.
    assert wrong <= 11, f"{wrong} wrong calls of {trials}"
    assert forced <= 0.02 * trials


def test_heavy_tails_do_not_inflate_the_error_rate():
    # A large step found after few end pairs, and 15% of runs slowed by 20-60%: the noise
    # scale rests on few pairs and spikes are frequent (a good commit was called bad so in
    # CI). A normal likelihood with Huber clipping made ~20 wrong calls here.
    test, trials, wrong = SequentialTest(alpha=0.002, beta=0.002), 1000, 0
    for trial in range(trials):
        machine = Machine(2000 + trial, sd=0.08, outliers=0.15, slower=(0.2, 0.6))
        ends = _ends(test, machine, pairs=10, step=math.log(1.3))
        truth = "good" if trial % 2 else "bad"
        c = _probe(test, machine, ends, 0.0 if truth == "good" else math.log(1.3), step=math.log(1.3))
        wrong += c.call.value != truth
    assert wrong <= 8, f"{wrong} wrong calls of {trials}"  # Binomial(1000, 0.002): 2 expected


def test_drift_larger_than_the_step_does_not_fool_the_paired_test():
    # The machine's level wanders by 1% per run (tens of % over a bisect step, more than
    # the 5% step): pairs see the same level, so calls stay right.
    test, trials, wrong = SequentialTest(alpha=0.01, beta=0.01), 200, 0
    for trial in range(trials):
        machine = Machine(1000 + trial, sd=0.03, drift=0.01)
        ends = _ends(test, machine)
        truth = "good" if trial % 2 else "bad"
        c = _probe(test, machine, ends, 0.0 if truth == "good" else STEP)
        wrong += c.call.value != truth
    assert wrong <= 6, f"{wrong} wrong calls of {trials} under drift"


def test_far_apart_ends_call_a_probe_at_the_minimum():
    test = SequentialTest(min_n=3)
    machine = Machine(1, sd=0.02)
    ends = _ends(test, machine, pairs=5, step=math.log(1.5))
    assert ends.significant and ends.decidable and 1.4 < ends.ratio < 1.6
    for truth, level in (("good", 0.0), ("bad", math.log(1.5))):
        c = _probe(test, machine, ends, level, step=math.log(1.5))
        assert c.call.value == truth and c.n == 3 and not c.low_confidence
        assert c.confidence >= test.confidence
        assert abs(c.position - (0.0 if truth == "good" else 1.0)) < 0.25


def test_fewer_than_min_pairs_never_decide():
    test = SequentialTest(min_n=3)
    ends = _ends(test, Machine(2, sd=0.01), pairs=5, step=1.0)
    assert test.classify(ends, [1.0, 1.0], [1.0, math.e], [False, True]).call is Call.MORE


def test_a_probe_halfway_is_forced_at_max_with_low_confidence():
    test = SequentialTest(max_n=12)
    ends = _ends(test, Machine(3, sd=0.02), pairs=20)
    # exactly at the midpoint of the ends, measured beside each reference
    probe = [math.exp(STEP / 2)] * 12
    reference = [1.0 if i % 2 == 0 else math.exp(STEP) for i in range(12)]
    is_bad = [i % 2 == 1 for i in range(12)]
    assert test.classify(ends, probe[:11], reference[:11], is_bad[:11]).call is Call.MORE
    c = test.classify(ends, probe, reference, is_bad)
    assert c.n == 12 and c.low_confidence and c.call in (Call.GOOD, Call.BAD)
    assert 0.5 <= c.confidence < test.confidence and abs(c.position - 0.5) < 0.05


def test_one_huge_outlier_does_not_decide_bad():
    test = SequentialTest()
    ends = _ends(test, Machine(4, sd=0.02))
    # a probe like good, but its third run was 3x slower: the machine hiccupped
    c = test.classify(ends, [1.0, 1.0, 3.0], [1.0, math.exp(STEP), 1.0], [False, True, False])
    assert c.call is not Call.BAD


def test_works_for_a_drop_as_well_as_a_rise():
    test, step = SequentialTest(), math.log(0.9)
    machine = Machine(5, sd=0.02)
    ends = _ends(test, machine, step=step)
    assert ends.significant and ends.ratio < 1
    assert _probe(test, machine, ends, step, step=step).call is Call.BAD
    assert _probe(test, machine, ends, 0.0, step=step).call is Call.GOOD


def test_huber_centre_and_scale_ignore_an_outlier():
    x = np.log(np.array([1.00, 1.01, 0.99, 1.02, 0.98, 5.0]))
    scale, df, efficiency = pooled_scale([x])
    assert 0.005 < scale < 0.05 and df > 1 and 0.05 <= efficiency <= 0.95
    assert abs(huber_centre(x, scale)) < 0.02
    assert huber_centre(np.array([2.0]), 0.1) == 2.0


def test_check_ends_separates_differ_from_identical():
    test = SequentialTest()
    check = _ends(test, Machine(6, sd=0.02), pairs=20)
    assert check.significant and check.decidable and 1.02 < check.ratio < 1.08 and check.pairs == 20
    same = _ends(test, Machine(7, sd=0.02), pairs=20, step=0.0)
    assert not same.significant
    assert not test.check_ends([1.0], [1.1]).significant


def test_identical_ends_are_rarely_called_different():
    test, rng = SequentialTest(), np.random.default_rng(8)
    flagged = sum(test.check_ends(np.exp(rng.normal(0, 0.03, 10)), np.exp(rng.normal(0, 0.03, 10)),
                                  alpha=0.01).significant for _ in range(1000))
    assert flagged <= 20  # nominal 1%: 10 expected


def test_expected_pairs_follow_the_step_over_the_noise():
    test = SequentialTest(alpha=0.01, beta=0.01)
    # t_3 noise: a pair carries (3+1)/(3+3) of the information a normal pair would
    assert test.expected_pairs(0.05, 0.05) == pytest.approx(2 * math.log(99) * 6 / 4, rel=1e-9)
    assert test.expected_pairs(0.05, 0.10) == pytest.approx(4 * test.expected_pairs(0.05, 0.05))
    assert test.expected_pairs(0.0, 0.05) == math.inf


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError):
        SequentialTest(alpha=0.7)
    with pytest.raises(ValueError):
        SequentialTest(min_n=5, max_n=3)
    same = EndsCheck(False, False, 1.0, 0.01, 1.0, 0.01, 10)
    with pytest.raises(ValueError):
        SequentialTest().classify(same, [1.0], [1.0], [False])
    with pytest.raises(ValueError):
        SequentialTest().check_ends([1.0, 2.0], [1.0])
