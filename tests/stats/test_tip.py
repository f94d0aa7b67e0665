"""The tip detector: calibrated per look, a step at the tip a suspect then confirmed,
a single spike only a suspect, a short history undecided."""


import math

import numpy as np
import pytest

from perflab.stats import tip


def test_bars_fall_as_the_history_grows_and_match_the_t_law():
    assert tip.suspect_bar(4, 1) > tip.suspect_bar(8, 1) > tip.suspect_bar(50, 1) > 3.5
    assert tip.confirm_bar(4, 3) > tip.confirm_bar(8, 3) > tip.confirm_bar(50, 3) > tip.confirm_bar(50, 9)
    # the suspect rule's tail at its bar is exactly its share of the per-look rate
    from scipy.stats import t
    share = tip.FALSE_RATE_PER_1000 / 1000 / 2 / tip.SUSPECT_TIP
    assert 2 * t.sf(tip.suspect_bar(50, 2) / math.sqrt(1 + 2 / 50), 49) == pytest.approx(share, rel=1e-6)


def test_a_look_at_change_free_normal_noise_alarms_within_the_stated_rate():
    rng = np.random.default_rng(7)
    looks = alarms = 0
    for _ in range(100):
        for found in tip.replay(rng.standard_normal(40)):
            looks += 1
            alarms += found.status in (tip.SUSPECT, tip.CONFIRMED)
    # 3,700 looks at 0.5 per 1,000: 1.9 expected at most (Bonferroni makes it fewer)
    assert looks == 100 * (40 - tip.MIN_HISTORY)
    assert alarms <= 7


def test_a_step_at_the_tip_is_suspect_then_confirmed_where_it_starts():
    rng = np.random.default_rng(3)
    x = np.concatenate([100 + rng.standard_normal(40), 106 + rng.standard_normal(6)])
    looks = tip.replay(x, first=41)
    states = [f.status for f in looks]
    assert tip.SUSPECT in states[:2] or tip.CONFIRMED in states[:2]
    confirmed = next(f for f in looks if f.status == tip.CONFIRMED)
    assert confirmed.start == 40
    assert confirmed.change_pct == pytest.approx(6.0, abs=1.0)
    assert looks[-1].status == tip.CONFIRMED and looks[-1].start == 40


def test_a_single_spike_is_a_suspect_and_never_confirmed():
    rng = np.random.default_rng(5)
    x = 100 + rng.standard_normal(50)
    x[40] = 120.0
    looks = tip.replay(x, first=41)
    assert looks[0].status == tip.SUSPECT and looks[0].start == 40 and looks[0].commits == 1
    assert all(f.status != tip.CONFIRMED for f in looks)


def test_short_or_flat_histories_are_undecided_not_no_change():
    assert tip.look([1.0, 2.0, 1.5]).status == tip.UNDECIDED  # a look needs 3 values before the newest
    flat = tip.look([5.0] * 20 + [9.0])
    assert flat.status == tip.UNDECIDED and "no spread" in flat.reason
    # history from `since`: the values before it are not part of it
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(30) + 50, rng.standard_normal(5)])
    assert tip.look(x, since=32).status == tip.UNDECIDED


def test_missing_values_are_skipped_and_the_start_is_in_the_callers_numbering():
    rng = np.random.default_rng(11)
    x = np.concatenate([10 + 0.1 * rng.standard_normal(30), [np.nan], 12 + 0.1 * rng.standard_normal(4)])
    found = tip.look(x)
    assert found.status == tip.CONFIRMED and found.start == 31


# --------------------------------------------------------------------------- placement

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


def test_false_alerts_on_gaussian_noise_stay_near_the_stated_rate():
    """A robot looking at every commit of 4,000 commits of change-free noise: the stated
    rate is 0.5 false alerts per 1,000 looks (2 expected here); more than 8 distinct alerts
    would be a rate four times the stated one (P < 0.001 for a Poisson mean of 2)."""
    x = np.random.default_rng(2026).standard_normal(4000)
    looks = tip.watch(x)
    alerts = {(f.status, f.start) for f in looks if f.status in (tip.SUSPECT, tip.CONFIRMED)}
    assert len(alerts) <= 8, sorted(alerts)


def test_a_ratio_step_in_multiplicative_noise_is_placed_at_its_commit():
    """test_alerts' shape: 6 commits, then 6 at 4x, each the median of 3 repetitions with 30%
    lognormal noise (a loaded machine's user time). Wherever the level is confirmed, it starts
    at the step: the placement reads positive values in logs, where the noise is even about a
    ratio step (in raw values a low first commit of the new level was placed one late)."""
    rng = np.random.default_rng(5)
    confirmed = 0
    for _ in range(400):
        reps = np.exp(rng.normal(0.0, 0.3, (12, 3))) * np.r_[np.ones(6), np.full(6, 4.0)][:, None]
        found = tip.look(np.median(reps, axis=1))
        if found.status == tip.CONFIRMED:
            confirmed += 1
            assert found.start == 6, np.median(reps, axis=1).round(2)
    assert confirmed > 300


def test_a_suspect_is_the_commit_out_of_line_not_a_dip_before_it():
    """A clean-clone rehearsal's user times (ms): six commits at ~26, one read in the VM's
    faster regime (17.0), then one measured on a 16x slower machine. The pair's mean is far
    out too, but the dip is on the other side: the suspect is the one commit."""
    found = tip.look([26.88, 26.41, 23.30, 26.26, 28.15, 25.78, 17.03, 273.1])
    assert (found.status, found.start, found.commits) == (tip.SUSPECT, 7, 1)
