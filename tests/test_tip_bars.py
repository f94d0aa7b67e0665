"""stats.tip.solve_long_history_bars: solved at a server's start, the bars of a look at a long
history, after which a look at any longer series (values positive, or not) solves none."""

from __future__ import annotations

import numpy as np
import pytest

from perflab.stats import tip


def _long_series(positive: bool) -> np.ndarray:
    rng = np.random.default_rng(11)
    values = rng.normal(100.0 if positive else 0.0, 1.0, tip.HISTORY_CAP * 3)
    values[-4:] += 8.0   # a tip out of line: the look reads every tip length
    return values


def _clear() -> None:
    tip.confirm_bar.cache_clear()
    tip.suspect_bar.cache_clear()


@pytest.mark.parametrize("positive", [True, False])
def test_a_look_at_a_long_series_solves_no_bar_after_them(positive):
    _clear()
    tip.solve_long_history_bars()
    solved = tip.confirm_bar.cache_info().misses, tip.suspect_bar.cache_info().misses
    found = tip.look(_long_series(positive))
    assert found.status in (tip.SUSPECT, tip.CONFIRMED)
    assert (tip.confirm_bar.cache_info().misses, tip.suspect_bar.cache_info().misses) == solved
    assert tip.confirm_bar.cache_info().hits > 0


def test_they_are_one_bar_a_tip_length_and_rate():
    _clear()
    tip.solve_long_history_bars()
    # the suspect rule's bars for the shortest tips, the confirmation's for the rest, at the
    # rate of a look on one scale (values not all positive) and on each of two (half each)
    assert tip.suspect_bar.cache_info().currsize == 2 * tip.SUSPECT_TIP
    assert tip.confirm_bar.cache_info().currsize == 2 * (tip.MAX_TIP - tip.SUSPECT_TIP)
