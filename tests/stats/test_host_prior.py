"""The host prior of run-to-run variance: limma's moment fit, checked on known cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import digamma, polygamma

from perflab.stats.host_prior import Prior, beyond_prior, fit_prior, moderated, runs_to_decide, spread, trigamma_inverse


def draw(rng: np.random.Generator, s0: float, d0: float, df: float, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Variances sigma^2 ~ s0^2 d0 / chi2_d0 and their estimates s^2 ~ sigma^2 chi2_df / df."""
    sigma2 = s0 * d0 / rng.chisquare(d0, groups)
    return sigma2, sigma2 * rng.chisquare(df, groups) / df


@pytest.mark.parametrize("x", [1e-3, 0.1, 1.0, 3.0, 50.0])
def test_trigamma_inverse_inverts_trigamma(x: float) -> None:
    assert float(polygamma(1, trigamma_inverse(x))) == pytest.approx(x, rel=1e-6)


def test_a_simulated_prior_is_recovered() -> None:
    rng = np.random.default_rng(7)
    s0, d0 = 0.03**2, 6.0
    _, s2 = draw(rng, s0, d0, 4.0, 20000)
    prior = fit_prior(s2, np.full(s2.size, 4.0))
    assert prior is not None
    assert prior.d0 == pytest.approx(d0, rel=0.1)
    assert prior.s0_squared == pytest.approx(s0, rel=0.05)


def test_by_hand_the_moments_give_d0_and_s0() -> None:
    """Two-valued data worked through Smyth's sec. 6 formulas by hand."""
    s2 = np.array([0.01, 0.04] * 50)
    d = 3.0
    e = np.log(s2) - digamma(d / 2) + math.log(d / 2)
    target = float(e.var(ddof=1)) - float(polygamma(1, d / 2))
    expected_d0 = 2 * trigamma_inverse(target) if target > 0 else 300.0
    prior = fit_prior(s2, np.full(s2.size, d))
    assert prior is not None and prior.d0 == pytest.approx(expected_d0)
    expected_s0 = math.exp(e.mean() + digamma(expected_d0 / 2) - math.log(expected_d0 / 2))
    assert prior.s0_squared == pytest.approx(expected_s0)


def test_benchmarks_that_differ_widely_give_a_weak_prior() -> None:
    rng = np.random.default_rng(1)
    # run-to-run spreads from 0.1% to 30%: a prior of little weight
    sigma2 = (10 ** rng.uniform(-3, np.log10(0.3), 40)) ** 2
    s2 = sigma2 * rng.chisquare(4, 40) / 4
    prior = fit_prior(s2, np.full(40, 4.0))
    assert prior is not None and prior.d0 < 1.0


def test_equal_variances_give_the_data_cap_not_infinity() -> None:
    prior = fit_prior([0.01] * 5, [4.0] * 5)
    assert prior is not None and prior.d0 == 20.0
    # E log s^2 = log s0^2 + digamma(d0/2) - log(d0/2) + digamma(d/2) - log(d/2), solved for s0^2
    assert prior.s0_squared == pytest.approx(0.01 * math.exp(-digamma(2) + math.log(2) + digamma(10) - math.log(10)))


def test_too_few_groups_fit_nothing() -> None:
    assert fit_prior([0.01, 0.02], [4, 4]) is None


def test_a_trend_in_within_run_variance_is_found_and_used() -> None:
    rng = np.random.default_rng(3)
    within = 10 ** rng.uniform(-6, -2, 3000)
    sigma2 = 0.5 * within * 8.0 / rng.chisquare(8.0, within.size)   # s0^2 proportional to within
    s2 = sigma2 * rng.chisquare(4, within.size) / 4
    prior = fit_prior(s2, np.full(s2.size, 4.0), covariate=within)
    assert prior is not None
    assert prior.slope == pytest.approx(1.0, abs=0.05)
    assert prior.d0 == pytest.approx(8.0, rel=0.2)
    assert prior.scale(1e-4) == pytest.approx(0.5e-4, rel=0.1)
    flat = fit_prior(s2, np.full(s2.size, 4.0))
    assert flat is not None and flat.d0 < 1.0           # without the trend the prior is weak


def test_no_trend_without_one() -> None:
    rng = np.random.default_rng(4)
    _, s2 = draw(rng, 1e-3, 10.0, 4.0, 500)
    prior = fit_prior(s2, np.full(500, 4.0), covariate=10 ** rng.uniform(-6, -2, 500))
    assert prior is not None and prior.slope == 0.0


def test_moderated_variance_is_limmas_posterior() -> None:
    prior = Prior(0.01, 6.0, 10, 40.0)
    assert moderated(prior) == (0.01, 6.0)
    assert moderated(prior, 0.04, 2.0) == (pytest.approx((6 * 0.01 + 2 * 0.04) / 8), 8.0)
    assert moderated(prior, -0.01, 2.0)[0] == pytest.approx(6 * 0.01 / 8)


def test_replicates_far_beyond_the_prior_have_a_small_p() -> None:
    prior = Prior(1e-4, 10.0, 10, 40.0)
    assert beyond_prior(prior, 1e-4, 4.0) > 0.3
    assert beyond_prior(prior, 25e-4, 4.0) < 0.001


def test_spread_is_a_run_means_variance_with_its_within_run_part() -> None:
    rng = np.random.default_rng(5)
    estimates, parts = [], []
    for _ in range(400):
        levels = rng.normal(0, 0.02, 6)
        runs = [np.exp(level + rng.normal(0, 0.05, 30)) for level in levels]
        found = spread(runs)
        assert found is not None and found.df == 5 and found.n0 == 30
        estimates.append(found.s2)
        parts.append(found.within)
    assert np.mean(estimates) == pytest.approx(0.02**2 + 0.05**2 / 30, rel=0.1)   # Kalibera and Jones's levels
    assert np.mean(parts) == pytest.approx(0.05**2 / 30, rel=0.02)


def test_runs_to_decide_grows_with_the_spread() -> None:
    small = runs_to_decide(0.01**2, 4.0, 0.05)
    large = runs_to_decide(0.05**2, 4.0, 0.05)
    assert small is not None and large is not None and small < large
    assert runs_to_decide(0.5**2, 1.0, 0.001, limit=50) is None
