"""The tip bars' factor for noise normal on the other scale: exact tails where they have a
closed form, 1 where the other family's tail is the lighter one."""

import math

import numpy as np
import pytest
from scipy.stats import lognorm, norm

from perflab.stats import tip_shape

SHARE = 1e-5


@pytest.mark.parametrize("cv", [0.05, 0.1, 0.3])
def test_one_lognormal_value_beyond_the_raised_bar_has_exactly_the_share(cv):
    sigma = math.sqrt(math.log1p(cv * cv))
    c = norm.isf(SHARE) * tip_shape.factor(tip_shape.ON_VALUES, sigma, 1, 1, SHARE)
    law = lognorm(sigma)
    # the grid rounds the shape up by at most 2%: the tail is at most the share, and near it
    assert 0.5 * SHARE < law.sf(law.mean() + c * law.std()) <= SHARE * 1.0001


@pytest.mark.parametrize("cv", [0.05, 0.1, 0.3])
def test_one_log_of_a_normal_value_beyond_the_raised_bar_has_at_most_the_share(cv):
    z = np.linspace(-1 / cv + 1e-9, 12, 200_001)
    w = norm.pdf(z) / norm.sf(-1 / cv) * (z[1] - z[0])
    y = np.log1p(cv * z)
    mean = float(w @ y)
    sd = math.sqrt(float(w @ (y - mean) ** 2))
    c = norm.isf(SHARE) * tip_shape.factor(tip_shape.ON_LOGS, cv, -1, 1, SHARE)
    tail = (norm.cdf((math.exp(mean - c * sd) - 1) / cv) - norm.cdf(-1 / cv)) / norm.sf(-1 / cv)
    assert 0.5 * SHARE < tail <= SHARE * 1.001


def test_the_lighter_way_and_a_tiny_shape_keep_the_exact_bar():
    for m in (1, 2, 3, 10):
        assert tip_shape.factor(tip_shape.ON_VALUES, 0.3, -1, m, SHARE) == 1.0   # lognormal's lower tail
        assert tip_shape.factor(tip_shape.ON_LOGS, 0.3, 1, m, SHARE) == 1.0      # log of normal: upper tail
        assert tip_shape.factor(tip_shape.ON_VALUES, 1e-4, 1, m, SHARE) == 1.0
    # the heavy way rises with the shape, the single commit most
    up = [tip_shape.factor(tip_shape.ON_VALUES, s, 1, 1, SHARE) for s in (0.05, 0.1, 0.2, 0.3)]
    assert up == sorted(up) and up[0] > 1.0
    assert tip_shape.factor(tip_shape.ON_VALUES, 0.3, 1, 1, SHARE) > tip_shape.factor(tip_shape.ON_VALUES, 0.3, 1, 9, SHARE)


def test_a_shape_that_cannot_be_read_keeps_the_exact_bar():
    assert tip_shape.factor(tip_shape.ON_VALUES, math.nan, 1, 1, SHARE) == 1.0
    assert math.isnan(tip_shape.shape(np.array([1.0]), tip_shape.ON_LOGS))
