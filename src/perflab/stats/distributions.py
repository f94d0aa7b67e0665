"""The few distribution functions the comparison needs, from scipy.special.

Each returns what scipy.stats' method of the same name returns for finite arguments inside
the distribution's support (it evaluates the same scipy.special function), without
importing scipy.stats: that import alone costs more CPU than the rest of a 1,000-row
`perflab compare` (bench/README.md, "compare on 1,000,000 samples").
"""

from __future__ import annotations

import numpy as np


def t_ppf(q: float, df: float) -> float:
    """Student's t quantile: scipy.stats.t.ppf(q, df)."""
    from scipy import special
    return float(special.stdtrit(df, q))


def t_sf(x: float, df: float) -> float:
    """Student's t upper tail P(T > x): scipy.stats.t.sf(x, df)."""
    from scipy import special
    return float(special.stdtr(df, -x))


def norm_ppf(q: float) -> float:
    """The standard normal quantile: scipy.stats.norm.ppf(q)."""
    from scipy import special
    return float(special.ndtri(q))


def f_sf(x: float, dfn: float, dfd: float) -> float:
    """The F distribution's upper tail P(F > x): scipy.stats.f.sf(x, dfn, dfd) (1 at x <= 0)."""
    from scipy import special
    return 1.0 if x <= 0 else float(special.fdtrc(dfn, dfd, x))


def nct_sf(x: float, df: float, nc: float) -> float:
    """The noncentral t's upper tail: scipy.stats.nct.sf(x, df, nc)."""
    try:   # the ufunc nct.sf evaluates (scipy >= 1.12), not public in scipy.special
        from scipy.special._ufuncs import _nct_sf
    except ImportError:
        from scipy.stats import nct
        return float(nct.sf(x, df, nc))
    with np.errstate(over="ignore"):
        tail = float(_nct_sf(x, df, nc))
    return min(max(tail, 0.0), 1.0)   # np.clip's: NaN stays NaN
