"""benchstat's statistics, exactly: golang.org/x/perf/benchmath's AssumeNothing.

``summary``: the sample median and the order-statistic confidence interval of the
median (go-moremath's QuantileCI: the binomial mass grown from the median outwards,
the left side first on ties, a normal approximation above 30 values; ±∞ when n is
too small for the level). ``u_test``: the two-sided Mann-Whitney U test, exact below
50 values a side (25 with ties, by the tied distribution of Cheung and Klotz), else
the normal approximation with tie and continuity corrections. ``delta_pct``: the
change of the medians. Ported line by line so that a table in benchstat's format
says what benchstat says; tests/test_benchstat_exact.py checks it against numbers the
real benchstat printed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from perflab.model.report.compare import BenchstatSide

ALPHA = 0.05          # benchmath.DefaultThresholds.CompareAlpha
CONFIDENCE = 0.95     # benchstat's -confidence default
_APPROX_ABOVE = 30    # go-moremath quantileCIApproxThreshold
_EXACT_LIMIT = 50     # MannWhitneyExactLimit
_TIES_EXACT_LIMIT = 25
_FACTS = [math.factorial(n) for n in range(21)]


@dataclass(frozen=True)
class Comparison:
    p: float
    n1: int
    n2: int
    alpha: float = ALPHA
    warnings: tuple[str, ...] = ()


def choose(n: int, k: int) -> float:
    """mathx.Choose: exact below 21, else exp(lgamma ...)."""
    if k in (0, n):
        return 1.0
    if k < 0 or n < k:
        return 0.0
    if n <= 20:
        numer = 1
        for m in range(n - (k - 1), n + 1):
            numer *= m
        return float(numer // _FACTS[k])
    return math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1))


def _binomial_pmf(n: int, p: float, k: int) -> float:
    if k < 0 or k > n:
        return 0.0
    return choose(n, k) * math.pow(p, k) * math.pow(1 - p, n - k)


def _norm_cdf(x: float, mu: float, sigma: float) -> float:
    return math.erfc(-(x - mu) / (sigma * math.sqrt(2))) / 2


def _norm_inv_cdf(p: float, mu: float, sigma: float) -> float:
    """go-moremath's NormalDist.InvCDF: Acklam's approximation and one refinement step."""
    a = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
         -3.066479806614716e+01, 2.506628277459239e+00)
    b = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
         -1.328068155288572e+01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
         4.374664141464968e+00, 2.938163982698783e+00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00)
    if p <= 0 or p >= 1:
        return -math.inf if p == 0 else math.inf if p == 1 else math.nan
    if p < 0.02425 or p > 1 - 0.02425:
        q = math.sqrt(-2 * math.log(p if p < 0.5 else 1 - p))
        x = (((((c[0]*q+c[1])*q+c[2])*q+c[3])*q+c[4])*q + c[5]) / ((((d[0]*q+d[1])*q+d[2])*q+d[3])*q + 1)
        x = x if p < 0.5 else -x
    else:
        q = p - 0.5
        r = q * q
        x = ((((((a[0]*r+a[1])*r+a[2])*r+a[3])*r+a[4])*r + a[5]) * q
             / (((((b[0]*r+b[1])*r+b[2])*r+b[3])*r+b[4])*r + 1))
    e = 0.5 * math.erfc(-x / math.sqrt(2)) - p
    u = e * math.sqrt(2 * math.pi) * math.exp(x * x / 2)
    x = x - u / (1 + x * u / 2)
    return x * sigma + mu


def quantile_ci(n: int, q: float, confidence: float) -> tuple[int, int, float]:
    """go-moremath QuantileCI: (lo order, hi order, actual confidence); order 0 or n+1 is unbounded."""
    if confidence >= 1:
        return 0, n + 1, 1.0
    if n <= _APPROX_ABOVE:
        x = 0 if q == 0 else int(math.ceil((n + 1) * q) - 1)
        accum = _binomial_pmf(n, q, x)
        left, right = x, x + 1
        lp, rp = _binomial_pmf(n, q, left - 1), _binomial_pmf(n, q, right)
        while accum < confidence and (lp > 0 or rp > 0):
            if lp >= rp:   # left-bias
                accum += lp
                left -= 1
                lp = _binomial_pmf(n, q, left - 1)
            else:
                accum += rp
                right += 1
                rp = _binomial_pmf(n, q, right)
        reached = accum
    else:
        mu, sigma = n * q, math.sqrt(n * q * (1 - q))
        l1 = _norm_inv_cdf((1 - confidence) / 2, mu, sigma)
        r1 = 2 * mu - l1
        left = int(math.floor(math.floor(l1 - 0.5) + 0.5)) + 1
        right = int(math.floor(math.ceil(r1 - 0.5) + 0.5)) + 1

        def cover(lo: int, hi: int) -> float:
            return _norm_cdf(hi - 0.5, mu, sigma) - _norm_cdf(lo - 0.5, mu, sigma)
        reached = cover(left, right)
        biased = cover(left, right - 1)
        if confidence <= biased < reached:
            reached, right = biased, right - 1
        if left <= 0 and right >= n + 1:
            reached = 1.0
    return max(left, 0), min(right, n + 1), reached


def _quantile(xs: Sequence[float], q: float) -> float:
    """go-moremath Sample.Quantile (R8) of sorted values."""
    n = 1 / 3.0 + q * (len(xs) + 1 / 3.0)
    k = int(n)
    frac = n - k
    if k <= 0:
        return xs[0]
    if k >= len(xs):
        return xs[-1]
    return xs[k - 1] + frac * (xs[k] - xs[k - 1])


def _median_samples(confidence: float) -> tuple[str, int]:
    for n in range(2, 51):
        lo, hi, _ = quantile_ci(n, 0.5, confidence)
        if lo > 0 and hi <= n:
            return ">=", n
    return ">", 50


def summary(values: Sequence[float], confidence: float = CONFIDENCE) -> BenchstatSide:
    """The median and its confidence interval, with benchstat's warning when it is ±∞."""
    xs = sorted(values)
    if not xs:
        return BenchstatSide(center=math.nan, low=math.nan, high=math.nan)
    lo_order, hi_order, _ = quantile_ci(len(xs), 0.5, confidence)
    low = -math.inf if lo_order < 1 else xs[lo_order - 1]
    high = math.inf if hi_order - 1 >= len(xs) else xs[hi_order - 1]
    warnings: tuple[str, ...] = ()
    if math.isinf(low) or math.isinf(high):
        op, need = _median_samples(confidence)
        warnings = (f"need {op} {need} samples for confidence interval at level {confidence:g}",)
    return BenchstatSide(center=_quantile(xs, 0.5), low=low, high=high, warnings=warnings)


def _u_test_samples(alpha: float) -> tuple[str, int]:
    """The fewest values a side for which the U test can reach ``alpha`` (uTestMinP)."""
    for n in range(1, 10):
        if 2.0 / choose(2 * n, n) <= alpha:   # both extreme orderings of n+n values
            return ">=", n
    return ">", 10


def u_test(x1: Sequence[float], x2: Sequence[float], alpha: float = ALPHA) -> Comparison:
    """benchmath AssumeNothing.Compare: the two-sided Mann-Whitney U test."""
    n1, n2 = len(x1), len(x2)
    try:
        p = _mann_whitney_p(sorted(x1), sorted(x2))
    except ValueError as error:
        return Comparison(1.0, n1, n2, alpha, (str(error),))
    warnings: tuple[str, ...] = ()
    if p > alpha:
        op, need = _u_test_samples(alpha)
        if n1 < need and n2 < need:
            warnings = (f"need {op} {need} samples to detect a difference at alpha level {alpha:g}",)
    return Comparison(p, n1, n2, alpha, warnings)


def _mann_whitney_p(x1: list[float], x2: list[float]) -> float:
    n1, n2 = len(x1), len(x2)
    if n1 == 0 or n2 == 0:
        raise ValueError("sample is too small")
    merged = sorted([(v, 1) for v in x1] + [(v, 2) for v in x2], key=lambda item: item[0])
    r1, ties, has_ties, i = 0.0, [], False, 0
    while i < len(merged):
        start, n_x1, value = i + 1, 0, merged[i][0]
        while i < len(merged) and merged[i][0] == value:
            n_x1 += merged[i][1] == 1
            i += 1
        r1 += (i + start) / 2 * n_x1
        ties.append(i - start + 1)
        has_ties = has_ties or i > start
    u1 = r1 - n1 * (n1 + 1) / 2
    u2 = n1 * n2 - u1
    limit = _TIES_EXACT_LIMIT if has_ties else _EXACT_LIMIT
    if n1 <= limit and n2 <= limit:
        if len(ties) == 1:
            raise ValueError("all samples are equal")
        return 1.0 if u1 == u2 else 2 * _u_cdf(min(u1, u2), n1, n2, ties if has_ties else None)
    t = float(sum(k ** 3 - k for k in ties))
    total = float(n1 + n2)
    sigma = math.sqrt(n1 * n2 * ((total + 1) - t / (total * (total - 1))) / 12)
    if sigma == 0:
        raise ValueError("all samples are equal")
    numer = u1 - n1 * n2 / 2
    numer -= math.copysign(0.5, numer) if numer else 0.0
    z = numer / sigma
    return 2 * min(_norm_cdf(z, 0, 1), 1 - _norm_cdf(z, 0, 1))


def _u_cdf(u: float, n1: int, n2: int, ties: list[int] | None) -> float:
    """UDist.CDF: P(U <= u) under the null, exact (with ties: Cheung and Klotz)."""
    if u < 0:
        return 0.0
    if u >= n1 * n2:
        return 1.0
    if ties is not None:
        table = _tied_memo(int(2 * u), n1, ties)
        return table[(n1, int(2 * u))] / choose(n1 + n2, n1)
    ui = int(math.floor(u))
    flip = ui >= (n1 * n2 + 1) // 2
    if flip:
        ui = n1 * n2 - ui - 1
    p = sum(_u_pmf_table(ui, n1, n2)[:ui + 1])
    return 1 - p if flip else p


def _u_pmf_table(u: int, n1: int, n2: int) -> list[float]:
    """UDist.p: the probabilities of U = 0..u without ties (Mann and Whitney's recurrence;
    each row of U computed at once, the same operations per element as go-moremath)."""
    import numpy as np
    small, large = min(n1, n2), max(n1, n2)
    memo = np.zeros((small + 1, u + 1))
    for m in range(large + 1):
        memo[0, 0] = 1.0
        for n in range(1, min(small, m) + 1):
            lp = memo[n - 1]
            rp = memo[n] if n <= m - 1 else memo[m - 1]
            top = min(u, n * m)
            left = np.zeros(top + 1)
            if top >= m:
                left[m:] = n * lp[:top + 1 - m]
            memo[n, :top + 1] = (left + m * rp[:top + 1]) / (n + m)
    return [float(x) for x in memo[small]]


def _two_u_bound(n1: int, t: list[int], a: list[int], lowest: bool) -> int:
    """twoUmin / twoUmax: the smallest (largest) 2U of n1 values placed over the tie groups t."""
    two_u, left = -n1 * n1, n1
    order = range(1, len(t) + 1) if lowest else range(len(t), 0, -1)
    for k in order:
        take = min(left, t[k - 1])
        two_u += take * a[k]
        left -= take
    return two_u


def _tied_memo(two_u: int, n1: int, t: list[int]) -> dict[tuple[int, int], float]:
    """makeUmemo's last table: for tie groups t, the number of arrangements with 2U <= two_u
    (Cheung and Klotz 1997, as go-moremath computes it)."""
    k_groups = len(t)
    a = [0] * (k_groups + 1)
    a[1] = t[0]
    for k in range(2, k_groups + 1):
        a[k] = a[k - 1] + t[k - 2] + t[k - 1]
    tables: list[dict[tuple[int, int], float]] = [{} for _ in range(k_groups + 1)]
    tables[k_groups] = {(n1, two_u): 0.0}
    tsum = sum(t)
    for k in range(k_groups - 1, 1, -1):
        tsum -= t[k]
        for n1_next, two_u_next in tables[k + 1]:
            for rk in range(max(0, n1_next - tsum), min(n1_next, t[k]) + 1):
                two_u_k = two_u_next - rk * (a[k + 1] - 2 * n1_next + rk)
                n1_k = n1_next - rk
                if (_two_u_bound(n1_k, t[:k], a, True) <= two_u_k
                        <= _two_u_bound(n1_k, t[:k], a, False)):
                    tables[k][(n1_k, two_u_k)] = 0.0
    both = t[0] + t[1]
    for n1_2, two_u_2 in tables[2]:
        total = 0.0
        for r2 in range(max(0, n1_2 - t[0]), _go_div(two_u_2 - n1_2 * (t[0] - n1_2), both) + 1):
            total += choose(t[0], n1_2 - r2) * choose(t[1], r2)
        tables[2][(n1_2, two_u_2)] = total
    tsum = t[0]
    for k in range(3, k_groups + 1):
        tsum += t[k - 2]
        for key in tables[k]:
            n1_k, two_u_k = key
            total = 0.0
            for rk in range(max(0, n1_k - tsum), min(n1_k, t[k - 1]) + 1):
                two_u_prev = two_u_k - rk * (a[k] - 2 * n1_k + rk)
                n1_prev = n1_k - rk
                x = tables[k - 1].get((n1_prev, two_u_prev))
                if x is None:
                    x = choose(tsum, n1_prev) if _two_u_bound(n1_prev, t[:k - 1], a, False) < two_u_prev else 0.0
                total += x * choose(t[k - 1], rk)
            tables[k][key] = total
    return tables[k_groups]


def _go_div(a: int, b: int) -> int:
    """Go's integer division: truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def delta_pct(old: float, new: float) -> float:
    """The change of the centres in % (benchstat's FormatDelta before rounding); NaN when old is 0."""
    if old == new:
        return 0.0
    if old == 0:
        return math.nan
    return (new / old - 1.0) * 100.0
