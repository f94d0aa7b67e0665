"""A probe's position and its standard error, the three-way test's degrees of freedom, and
when a gradual change's share is named material (bisect's shares, issue 38)."""

from __future__ import annotations

import math

import numpy as np

from perflab.model.report.bisect import (
    MATERIAL_Z,
    Commit,
    Share,
    below_material,
    carriers_text,
    first_carrier,
    material,
    spread,
)
from perflab.stats.sequential import SequentialTest, ends_distance, position_error

STEP = math.log(1.3)


def _pairs(rng: np.random.Generator, position: float, pairs: int, sd: float):
    """A probe at ``position`` of the step, each run beside a run of good or bad (alternating)."""
    values, references, is_bad = [], [], []
    for i in range(pairs):
        bad = i % 2 == 1
        reference = math.exp((STEP if bad else 0.0) + rng.normal(0, sd))
        values.append(math.exp(position * STEP + rng.normal(0, sd)))
        references.append(reference)
        is_bad.append(bad)
    return values, references, is_bad


def _ends(rng: np.random.Generator, pairs: int, sd: float):
    good = np.exp(rng.normal(0, sd, pairs))
    bad = np.exp(STEP + rng.normal(0, sd, pairs))
    return SequentialTest().check_ends(good, bad)


def test_position_error_covers_the_true_position():
    # normal noise: the position's standard error is honest (95% of |error| within 1.96 of it)
    rng = np.random.default_rng(1)
    test = SequentialTest()
    inside = 0
    for _ in range(400):
        ends = _ends(rng, 20, 0.1)
        values, references, is_bad = _pairs(rng, 0.4, 24, 0.1)
        c = test.classify(ends, values, references, is_bad)
        error = position_error(ends, values, references, is_bad)
        # the position is relative to the measured step: compare with 0.4 of it
        inside += abs(c.position - 0.5 - (0.4 - 0.5) * STEP / ends.delta) <= 1.96 * error
    assert 0.92 <= inside / 400 <= 0.99, inside


def test_three_way_test_counts_the_probes_own_degrees_of_freedom():
    # a commit half-way, 60 pairs, beside ends of 10 pairs: t about 4.9; its pooled scale has
    # ~60 degrees of freedom (p ~ 1e-5), not the ends' 8 (p ~ 0.001, found about half the
    # time), so it is found between at the step's alpha
    rng = np.random.default_rng(2)
    found = 0
    for _ in range(100):
        ends = _ends(rng, 10, 0.1)
        values, references, is_bad = _pairs(rng, 0.5, 60, 0.1)
        found += ends_distance(ends, values, references, is_bad, 0.0017).neither == "between"
    assert found >= 80, found
    # and a commit at the old end is not (its alpha holds)
    false = 0
    for _ in range(300):
        ends = _ends(rng, 10, 0.1)
        values, references, is_bad = _pairs(rng, 0.0, 40, 0.1)
        false += ends_distance(ends, values, references, is_bad, 0.01).neither is not None
    assert false <= 9, false


def _share(index: int, share: float, se: float) -> Share:
    return Share(commit=Commit(sha=f"{index:040x}", subject=f"c{index}", index=index), position=math.nan,
                 share=share, change_pct=math.nan, se=se)


def test_a_share_is_material_by_its_lower_bound():
    assert material(_share(1, 0.2 + MATERIAL_Z * 0.05, 0.05))
    assert not material(_share(1, 0.3, 0.1))          # 0.3 - 2.13 x 0.1 < 0.2: undecided
    assert not below_material(_share(1, 0.3, 0.1))
    assert below_material(_share(1, 0.05, 0.05))
    assert material(_share(1, 0.25, math.nan))       # no error known: the share itself


def test_the_first_carrier_and_spread():
    one = (_share(9, 0.03, 0.05), _share(10, 0.95, 0.06), _share(11, 0.02, 0.05))
    assert first_carrier(one) == one[1] and not spread(one)
    assert carriers_text(one).startswith("1 commit carries 95% of the change")
    two = (_share(9, 0.1, 0.1), _share(10, 0.5, 0.06), _share(11, 0.4, 0.06))
    assert first_carrier(two) == two[1] and spread(two)
    assert carriers_text(two).startswith("2 commits carry 90% of the change")
    undecided = (_share(9, 0.25, 0.15), _share(10, 0.3, 0.15))
    assert first_carrier(undecided) == undecided[0] and spread(undecided)
    assert carriers_text(undecided).startswith("no commit is shown to carry a fifth")


def test_a_change_spread_thin_is_not_told_as_one_commit():
    """Six commits of a sixth each, each shown under a fifth: no commit carries a material
    part, and the change is gradual, not "in one commit"; one commit of 90% is one commit."""
    thin = tuple(_share(i, 1 / 6, 0.01) for i in range(6))
    assert all(below_material(s) for s in thin) and first_carrier(thin) is None
    assert spread(thin)
    assert not spread((_share(0, 0.9, 0.02), *(_share(i, 0.02, 0.01) for i in range(1, 6))))
