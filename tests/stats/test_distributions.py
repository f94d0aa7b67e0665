"""stats.distributions gives exactly what scipy.stats' methods give (the same ufuncs), so
a comparison's figures do not depend on which of the two computed them."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from perflab.stats.distributions import f_sf, nct_sf, norm_ppf, t_ppf, t_sf

DFS = [0.5, 1.0, 2.0, 3.7, 10.0, 57.3, 1e4, 1e8, np.inf]
PROBABILITIES = [1e-10, 0.001, 0.025, 0.2, 0.5, 0.8, 0.975, 0.995, 1 - 1e-12]
POINTS = [-40.0, -2.5, -1e-3, 0.0, 0.3, 1.96, 7.0, 40.0]


def same(a: float, b: float) -> bool:
    return a == b or (np.isnan(a) and np.isnan(b))


@pytest.mark.parametrize("df", DFS)
def test_student_t_is_scipy_stats(df: float) -> None:
    for q in PROBABILITIES:
        assert same(t_ppf(q, df), float(stats.t.ppf(q, df)))
    for x in POINTS:
        assert same(t_sf(x, df), float(stats.t.sf(x, df)))


def test_normal_quantile_is_scipy_stats() -> None:
    for q in PROBABILITIES:
        assert norm_ppf(q) == float(stats.norm.ppf(q))


@pytest.mark.parametrize("dfn", DFS)
def test_f_tail_is_scipy_stats(dfn: float) -> None:
    for dfd in [1.0, 5.0, 0.743, 1e3, np.inf]:
        for x in [0.0, 1e-9, 0.5, 1.0, 3.2, 1e3]:
            assert same(f_sf(x, dfn, dfd), float(stats.f.sf(x, dfn, dfd))), (x, dfn, dfd)


@pytest.mark.parametrize("df", DFS)
def test_noncentral_t_tail_is_scipy_stats(df: float) -> None:
    for nc in [0.0, 0.5, 2.8, 20.0]:
        for x in POINTS:
            assert same(nct_sf(x, df, nc), float(stats.nct.sf(x, df, nc))), (x, df, nc)
