"""stats.summary.group_stats (rows of one size stacked, stats/rows.py) gives every group's
figures as numpy gives them for the group alone: empty groups, NaN, mixed sizes, and blocks
cut at BLOCK_VALUES (hypothesis)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from perflab.stats import rows
from perflab.stats.summary import group_stats

values = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False) | st.just(math.nan)
groups = st.lists(st.lists(values, max_size=9).map(lambda x: np.array(x, dtype=float)), max_size=40)


def _alone(x: np.ndarray) -> tuple[float, float, float]:
    if not x.size:
        return math.nan, math.nan, math.nan
    return float(np.median(x)), float(np.mean(x)), float(np.std(x, ddof=1)) if x.size > 1 else math.nan


@settings(max_examples=200, deadline=None)
@given(groups)
def test_each_group_has_its_own_figures(samples):
    found = group_stats(samples)
    assert found.n.tolist() == [x.size for x in samples]
    for i, x in enumerate(samples):
        assert np.allclose((found.median[i], found.mean[i], found.sd[i]), _alone(x), rtol=1e-12, atol=0,
                           equal_nan=True), (x, found.median[i], found.mean[i], found.sd[i])


def test_blocks_cut_at_block_values_keep_every_row_in_place(monkeypatch):
    monkeypatch.setattr(rows, "BLOCK_VALUES", 12)   # rows of 5 values: blocks of 2 rows
    rng = np.random.default_rng(3)
    samples = [rng.normal(size=int(rng.integers(0, 7))) for _ in range(50)]
    blocks = list(rows.by_size(samples))
    assert sorted(i for chosen, _ in blocks for i in chosen) == list(range(50))
    for chosen, block in blocks:
        assert block.shape == (len(chosen), samples[chosen[0]].size)
        assert block.size <= 12 or len(chosen) == 1
        for i, row in zip(chosen, block):
            assert np.array_equal(row, samples[i])
    found = group_stats(samples)
    assert np.allclose(found.median, [_alone(x)[0] for x in samples], equal_nan=True)
