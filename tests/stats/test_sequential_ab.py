"""The always-valid sequential A/B rule: error rates over many looks, power, equivalence, decide()."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from perflab.model.verdicts import Verdict
from perflab.stats.sequential_ab import SequentialDecision, decide, round_evidence, verdicts

STREAMS = 2000
ROUNDS = 100
ALPHA = 0.05


def _pair_stream(rng: np.random.Generator, kind: str, shape: tuple[int, int], shift: float = 0.0
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Simulated (base, cand) of interleaved rounds: log values = shared level + noise (+ shift on cand)."""
    level = np.zeros(shape)
    if kind == "normal":
        noise = rng.normal(0.0, 0.03, (2, *shape))
    elif kind == "t3":
        noise = 0.02 * rng.standard_t(3, (2, *shape))
    elif kind == "lognormal+outliers":
        # log-normal times, and 5% of runs slowed by 10..60% (a neighbour's burst)
        noise = rng.normal(0.0, 0.02, (2, *shape))
        slow = rng.random((2, *shape)) < 0.05
        noise += np.where(slow, np.log1p(rng.uniform(0.1, 0.6, (2, *shape))), 0.0)
    elif kind == "drift":
        # a random walk of the machine's level shared by both arms of a round, plus t3 noise
        level = np.cumsum(rng.normal(0.0, 0.02, shape), axis=-1)
        noise = 0.02 * rng.standard_t(3, (2, *shape))
    elif kind == "order effect":
        # the first run of a round 5% slower (a cold cache), the order a fair coin per round
        noise = rng.normal(0.0, 0.03, (2, *shape))
        cand_first = rng.random(shape) < 0.5
        noise[0] += np.where(cand_first, 0.0, math.log(1.05))
        noise[1] += np.where(cand_first, math.log(1.05), 0.0)
    else:
        raise AssertionError(kind)
    base = np.exp(level + noise[0])
    cand = np.exp(level + noise[1] + shift)
    return base, cand


def _calls(base: np.ndarray, cand: np.ndarray, threshold_pct: float, **kw) -> np.ndarray:
    d = np.log(cand) - np.log(base)
    return verdicts(round_evidence(d, threshold_pct=threshold_pct, alpha=ALPHA), **kw)


def _first_call(calls: np.ndarray) -> np.ndarray:
    """The rule's call where a stream stops (0: never stopped)."""
    stopped = calls != 0
    first = np.where(stopped.any(axis=-1), stopped.argmax(axis=-1), 0)
    return np.where(stopped.any(axis=-1), calls[np.arange(calls.shape[0]), first], 0)


@pytest.mark.parametrize("kind", ["normal", "t3", "lognormal+outliers", "drift", "order effect"])
def test_aa_false_decisions_stay_below_alpha_however_often_one_looks(kind):
    rng = np.random.default_rng(sum(map(ord, kind)))
    base, cand = _pair_stream(rng, kind, (STREAMS, ROUNDS))
    # a tiny threshold: every significant result is called, the hardest case for the rate
    calls = _calls(base, cand, threshold_pct=0.01)
    # looked at after every round, and counted even if the stream would have stopped earlier
    false = int((np.abs(calls) == 1).any(axis=-1).sum())
    # the one-sided 95% Clopper-Pearson upper bound of the rate, so the assert proves <= 5%
    upper = stats.beta.ppf(0.95, false + 1, STREAMS - false)
    assert upper <= ALPHA, f"{kind}: {false} of {STREAMS} A/A streams called a change"


def test_power_on_a_5pct_shift_with_a_1pct_threshold():
    rng = np.random.default_rng(13)
    base, cand = _pair_stream(rng, "lognormal+outliers", (500, 200), shift=math.log(1.05))
    first = _first_call(_calls(base, cand, threshold_pct=1.0))
    assert np.mean(first == 1) >= 0.9           # regression called (lower is better)
    assert np.all(first != -1)                   # never the wrong direction
    # the same data as a rate (higher is better): an improvement
    first_rate = _first_call(_calls(base, cand, threshold_pct=1.0, lower_is_better=False))
    assert np.mean(first_rate == -1) >= 0.9 and np.all(first_rate != 1)


def test_equivalence_is_reached_on_aa_with_a_threshold_of_several_sigma():
    rng = np.random.default_rng(14)
    base, cand = _pair_stream(rng, "normal", (500, ROUNDS))   # sd of a log ratio ~4.2%
    first = _first_call(_calls(base, cand, threshold_pct=15.0))
    assert np.mean(first == 2) >= 0.95
    assert np.all(np.abs(first) != 1)


def test_a_change_inside_the_threshold_ends_in_no_change_not_a_regression():
    rng = np.random.default_rng(15)
    base, cand = _pair_stream(rng, "normal", (300, 400), shift=math.log(1.005))
    first = _first_call(_calls(base, cand, threshold_pct=5.0))
    assert np.mean(first == 2) >= 0.9 and np.all(first != 1)


def _one(shift: float, n: int, seed: int = 3) -> tuple[list[float], list[float]]:
    base, cand = _pair_stream(np.random.default_rng(seed), "normal", (1, n), shift=shift)
    return base[0].tolist(), cand[0].tolist()


def test_decide_agrees_with_the_rule_after_every_round():
    base, cand = _one(math.log(1.04), 60)
    codes = _calls(np.array([base]), np.array([cand]), threshold_pct=1.0)[0]
    by_code = {0: None, 1: Verdict.REGRESSION, -1: Verdict.IMPROVEMENT, 2: Verdict.NO_CHANGE}
    for n in range(1, 61):
        got = decide(base[:n], cand[:n], threshold_pct=1.0)
        assert isinstance(got, SequentialDecision) and got.n == n and got.alpha == ALPHA
        assert got.verdict is by_code[int(codes[n - 1])], (n, got.reason)
        assert got.ci_pct[0] <= got.estimate_pct <= got.ci_pct[1]
    assert codes.any()  # it did stop somewhere within 60 rounds


def test_decide_reports_the_regression_with_its_interval():
    base, cand = _one(math.log(1.05), 80)
    got = decide(base, cand, threshold_pct=1.0)
    assert got.verdict is Verdict.REGRESSION
    assert got.ci_pct[0] > 0 and got.ci_pct[0] < 5.0 < got.ci_pct[1]
    assert abs(got.estimate_pct - 5.0) < 2.0
    assert "regression" in got.reason and "\n" not in got.reason
    swapped = decide(cand, base, threshold_pct=1.0)
    assert swapped.verdict is Verdict.IMPROVEMENT and swapped.estimate_pct < 0


def test_the_interval_covers_a_shifted_centre():
    misses = 0
    for seed in range(200):
        base, cand = _one(math.log(1.03), 40, seed=seed)
        lo, hi = decide(base, cand, threshold_pct=1.0).ci_pct
        misses += not lo < 3.0 < hi
    assert misses <= 10 + 5  # 95% coverage; binomial slack at 200 trials (mean 10)


def test_too_few_pairs_keep_sampling_and_the_limit_is_undecided():
    base, cand = _one(0.0, 4)
    early = decide(base, cand, threshold_pct=1.0)
    assert early.verdict is None and "fewer than the minimum 5" in early.reason
    assert early.ci_pct == (-100.0, math.inf)
    late = decide(base, cand, threshold_pct=1.0, final=True)
    assert late.verdict is Verdict.UNDECIDED and late.reason.startswith("undecided at the limit")
    base, cand = _one(0.0, 30)
    open_ = decide(base, cand, threshold_pct=1.0, final=True)
    assert open_.verdict is Verdict.UNDECIDED and open_.ci_pct[0] < 0 < open_.ci_pct[1]
    assert math.isfinite(open_.ci_pct[0]) and math.isfinite(open_.ci_pct[1])


def test_no_pairs_yet():
    got = decide([], [], threshold_pct=1.0)
    assert got.verdict is None and got.n == 0 and math.isnan(got.estimate_pct)
    assert decide([], [], threshold_pct=1.0, final=True).verdict is Verdict.UNDECIDED


def test_a_decided_test_stays_decided_at_the_limit():
    base, cand = _one(math.log(1.05), 80)
    assert decide(base, cand, threshold_pct=1.0, final=True).verdict is Verdict.REGRESSION


def test_quantised_timings_do_not_break_it():
    base = [1.0, 1.0, 1.0, 1.0, 1.1, 1.0] * 5
    cand = [1.1, 1.1, 1.2, 1.1, 1.1, 1.1] * 5
    got = decide(base, cand, threshold_pct=1.0)
    assert got.verdict is Verdict.REGRESSION and math.isfinite(got.estimate_pct)


@pytest.mark.parametrize("base, cand, kw, message", [
    ([1.0, 2.0], [1.0], {}, "differ in length"),
    ([1.0, 0.0], [1.0, 1.0], {}, "finite and > 0"),
    ([1.0, math.nan], [1.0, 1.0], {}, "finite and > 0"),
    ([1.0], [1.0], {"threshold_pct": 0.0}, "positive percentage"),
    ([1.0], [1.0], {"alpha": 1.5}, "alpha"),
])
def test_bad_input_is_refused(base, cand, kw, message):
    with pytest.raises(ValueError, match=message):
        decide(base, cand, **({"threshold_pct": 1.0} | kw))
