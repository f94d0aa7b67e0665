"""Rows whose data cannot carry a mark: coarse resolution, drift and two groups in a run."""

from __future__ import annotations

import math

import numpy as np

from perflab.model.records import Direction, MeanKind
from perflab.model.verdicts import Verdict
from perflab.stats import compare
from perflab.stats.resolution import at_floor, margin, quantum, unjudgeable

LOWER = dict(direction=Direction.LOWER, mean_kind=MeanKind.ARITHMETIC)


def test_quantum_finds_clock_ticks_and_not_continuous_values():
    ticks = [0.0, 0.004, 0.0, 0.008, 0.004, 0.0, 0.004, 0.0]
    assert math.isclose(quantum(ticks), 0.004)
    rng = np.random.default_rng(1)
    assert math.isnan(quantum(rng.normal(1.0, 0.01, 30)))
    assert math.isnan(quantum([1.0, 1.0, 1.0]))


def test_tick_granular_cpu_time_gets_no_mark_below_one_tick():
    """rusage user time of a short command: 0 or 1 tick. 30 vs 30 samples where the
    candidate happens to catch a tick a little more often: the test may reject, but a
    change of less than one tick is the clock's, not the code's."""
    base = np.array([0.0] * 22 + [0.004] * 8)
    new = np.array([0.0] * 8 + [0.004] * 22)
    d = compare(base, new, method="mann-whitney", **LOWER)  # zeros: no test on logs
    assert d.p_value < 0.01 and d.verdict is Verdict.UNDECIDED and not d.significant
    assert any(w.kind == "coarse-resolution" for w in d.warnings)
    whole = compare(base, new + 0.008, method="mann-whitney", **LOWER)  # two ticks more than any base value: judged
    assert whole.verdict is Verdict.REGRESSION


def test_drift_with_overlapping_sides_is_not_judged_but_a_clear_step_is():
    rng = np.random.default_rng(3)
    drifting = np.linspace(1.0, 1.3, 30) + rng.normal(0, 0.005, 30)
    steady = rng.normal(1.05, 0.005, 30)
    d = compare(steady, drifting, **LOWER)
    assert any(w.kind == "trend" for w in d.warnings)
    assert d.verdict is Verdict.UNDECIDED and any(w.kind == "unstable-run" for w in d.warnings)
    far = compare(steady, drifting + 1.0, **LOWER)  # ranges apart: the drift cannot explain it
    assert far.verdict is Verdict.REGRESSION


def test_unjudgeable_needs_data():
    assert unjudgeable([], [1.0], math.nan, 1.0, ()) is None


def test_a_drift_small_against_the_decision_does_not_block():
    """A drift blocks only where it could move the row across its verdict (issue 41). A side
    drifting 0.5% along its run (Mann-Kendall flags it) beside a steady one: 8.7% apart, the
    interval's distance to 0 is far beyond the drift: a regression; at the same level, the
    interval inside the 10% floor by more than the drift: no change. A drift of 30% under a
    change of 10% could have made it: not judged."""
    rng = np.random.default_rng(41)
    drifting = np.exp(np.linspace(0.0, 0.005, 30) + rng.normal(0, 0.0005, 30))
    steady = np.exp(rng.normal(0.0025, 0.0005, 30))
    called = compare(steady, drifting * 1.087, **LOWER)
    assert any(w.kind == "trend" for w in called.warnings)
    assert called.verdict is Verdict.REGRESSION and called.judgeable, [w.message for w in called.warnings]
    assert 0.5 < called.unsettled < 1.5   # twice the halves' difference: the span of the drift
    same = compare(steady, drifting, noise_floor=0.10, **LOWER)
    assert same.verdict is Verdict.NO_CHANGE and same.judgeable, [w.message for w in same.warnings]
    wide = compare(steady, np.exp(np.linspace(0.0, 0.3, 30) + rng.normal(0, 0.0005, 30)) * 0.95, **LOWER)
    assert wide.verdict is Verdict.UNDECIDED and not wide.judgeable
    assert any(w.kind == "unstable-run" for w in wide.warnings)


def test_margin_is_the_distance_to_the_verdicts_edge():
    """From 0 and the floor for a call, from the floor for no change, none for undecided."""
    assert math.isclose(margin(-8.7, -9.2, -8.3, 1.0, higher=False), math.log(1.087) - math.log(1.01))
    assert math.isclose(margin(-8.7, -9.2, -5.0, 1.0, higher=False), math.log(1.05))
    assert math.isclose(margin(-1.5, -3.0, -1.2, 1.0, higher=False), math.log(1.015) - math.log(1.01))
    assert math.isclose(margin(0.1, -2.0, 3.0, 10.0, higher=True), math.log(1.10) - math.log(1.03))
    assert margin(0.5, -2.0, 3.0, 1.0, higher=True) == math.inf
    assert margin(math.nan, -2.0, 3.0, 1.0, higher=True) == 0.0


def _cpu_time_of_a_short_command(rng: np.random.Generator, commits: int) -> np.ndarray:
    """Each commit's median of 5 runs' user time of a command that runs ~2 ms: the kernel
    splits the exact runtime between user and system by where its ticks fell, so a run's
    user time is 0 or the whole ~2 ms (the share of zeros differs from series to series)."""
    zeros = rng.uniform(0.2, 0.6)
    runs = rng.uniform(1.6e-3, 2.1e-3, (commits, 5)) * (rng.random((commits, 5)) >= zeros)
    return np.median(runs, axis=1)


def test_a_commit_series_at_its_resolution_tells_no_change():
    """Commit series that flip between 0 and one level with no change in the code: neither
    the whole-series search nor the robot's tip looks tell a change (1 in 20 series did, each
    a false alert, before a side with an exact 0 was taken for the resolution, no level)."""
    from perflab.stats import commit_series, tip
    rng = np.random.default_rng(7)
    series = [x for x in (_cpu_time_of_a_short_command(rng, 10) for _ in range(400)) if at_floor(x)]
    assert len(series) > 350        # (the others, all at the level, are the detectors' own noise)
    assert not [x for x in series if commit_series.changes(x) or tip.confirmed_starts(x)]


def test_steps_between_levels_are_told_beside_the_resolution_rule():
    from perflab.stats import commit_series, tip
    rng = np.random.default_rng(3)
    step = np.r_[rng.normal(2e-3, 1e-4, 6), rng.normal(4e-3, 1e-4, 5)]
    assert [c.index for c in commit_series.changes(step)] == [6] and tip.confirmed_starts(step) == [6]
    to_zero = np.r_[rng.normal(2e-3, 1e-4, 6), np.zeros(5)]     # 0: below what the metric measures
    assert not at_floor(step) and at_floor(to_zero)
    assert commit_series.changes(to_zero) == [] and tip.confirmed_starts(to_zero) == []
