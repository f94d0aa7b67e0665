"""The tip detector (stats/tip.py) on synthetic series: where it places a new level, what a
single outlier makes, and its false-alarm rate on change-free Gaussian noise."""

from __future__ import annotations

import numpy as np
import pytest

from perflab.stats import tip


def stepped(history: int, after: int, step: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 100.0 + rng.standard_normal(history + after) + np.r_[np.zeros(history), np.full(after, step)]


# a short history's bars are high (its sd is uncertain): its step is larger
@pytest.mark.parametrize(("history", "size"), [(6, 40.0), (20, 8.0), (50, 8.0)])
@pytest.mark.parametrize("after", [3, 5, 7, 10])
@pytest.mark.parametrize("sign", [-1.0, 1.0])
def test_a_confirmed_level_starts_at_the_steps_first_commit(history, size, after, sign):
    step = sign * size
    for seed in range(10):
        x = stepped(history, after, step, seed)
        found = tip.look(x)
        assert (found.status, found.start, found.commits) == (tip.CONFIRMED, history, after), (seed, x.round(2))
        assert np.sign(found.z) == np.sign(step)


@pytest.mark.parametrize("position", [1, 2])
def test_a_commit_just_before_the_step_that_leans_its_way_does_not_move_it(position):
    """One noisy commit before the step, a fifth of the way up: the step's own first commit is
    where the level changes (the least-squares place), not the first commit beyond a bar."""
    for seed in range(10):
        x = stepped(30, 6, 10.0, seed)
        x[30 - position] += 2.0
        found = tip.look(x)
        assert (found.status, found.start) == (tip.CONFIRMED, 30), (seed, x.round(2))


def test_a_late_first_commit_of_the_new_level_is_still_its_start():
    """The step's first commit is 70% of the way up (a noisy commit of the new level): the
    majority rule confirms from a later commit, the placement finds the first."""
    for seed in range(10):
        x = stepped(30, 7, 10.0, seed)
        x[30] -= 3.0
        found = tip.look(x)
        assert (found.status, found.start) == (tip.CONFIRMED, 30), (seed, x.round(2))


def test_one_outlying_commit_is_a_suspect_not_a_change():
    x = stepped(40, 0, 0.0, 1)
    x = np.r_[x, 130.0]
    found = tip.look(x)
    assert (found.status, found.start, found.commits) == (tip.SUSPECT, 40, 1)
    # one commit later, back at the level: a confirmed new level is not seen
    assert tip.look(np.r_[x, 100.0]).status != tip.CONFIRMED


def test_a_young_history_is_undecided_not_unchanged():
    assert tip.look([1.0, 1.1, 5.0]).status == tip.UNDECIDED
    assert tip.look([1.0, 1.0, 1.0, 1.0, 5.0]).status == tip.UNDECIDED  # no spread to measure against


def test_false_alerts_on_gaussian_noise_stay_near_the_stated_rate():
    """A robot looking at every commit of 4,000 commits of change-free noise: the stated
    rate is 0.5 false alerts per 1,000 looks (2 expected here); more than 8 distinct alerts
    would be a rate four times the stated one (P < 0.001 for a Poisson mean of 2)."""
    x = np.random.default_rng(2026).standard_normal(4000)
    looks = tip.watch(x)
    alerts = {(f.status, f.start) for f in looks if f.status in (tip.SUSPECT, tip.CONFIRMED)}
    assert len(alerts) <= 8, sorted(alerts)
