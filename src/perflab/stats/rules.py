"""The decision rules of mmtests and lkp-tests, reproduced so their verdicts can be compared.

Neither rule is a test with a p-value, and neither corrects for the many rows of a
report; `difference.decide` therefore leaves their verdicts as they are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from perflab.model.records import MeanKind
from perflab.stats.summary import centre, stddev
from perflab.stats.warnings import TOO_FEW_SAMPLES, StatWarning

MMTESTS_BAND = "mmtests band rule"
LKP_RANGE = "lkp-tests range rule"


@dataclass(frozen=True)
class RuleResult:
    """A rule's verdict: changed or not, which way (sign of new − base), and why."""

    rule: str
    changed: bool
    sign: int  # +1 new is larger, −1 new is smaller, 0 equal or unknown
    detail: str
    warnings: tuple[StatWarning, ...] = ()


def _sign(value: float) -> int:
    return 0 if math.isnan(value) or value == 0 else int(math.copysign(1, value))


def mmtests_band_rule(base: ArrayLike, new: ArrayLike, mean_kind: MeanKind = MeanKind.ARITHMETIC) -> RuleResult:
    """mmtests' `*` mark: changed iff |centre_new − centre_base| > 1.96·(sd_base + sd_new).

    The centres are the row's mean (`mean_kind`), the sds the sample sds (n − 1) of the
    raw values: the two ±1.96·sd bands must not overlap. Uses sds, not standard errors,
    so it is far stricter than a t-test and stays so as n grows. Needs 2 or more values
    per side.
    """
    a = np.asarray(base, dtype=float).reshape(-1)
    b = np.asarray(new, dtype=float).reshape(-1)
    if a.size < 2 or b.size < 2:
        why = f"{a.size} base and {b.size} new values: the band rule needs 2 or more per side"
        return RuleResult(MMTESTS_BAND, False, 0, why, (StatWarning(TOO_FEW_SAMPLES, why),))
    delta = centre(b, mean_kind) - centre(a, mean_kind)
    band = 1.96 * (stddev(a) + stddev(b))
    changed = bool(abs(delta) > band)
    relation = ">" if changed else "<="
    return RuleResult(MMTESTS_BAND, changed, _sign(delta),
                      f"|Δ{mean_kind.value}| {abs(delta):.6g} {relation} 1.96·(sd_base+sd_new) = {band:.6g}")


def lkp_range_rule(base: ArrayLike, new: ArrayLike, *, performance_stat: bool = True) -> RuleResult:
    """The kernel test robot's change rule (lkp-tests `changed_stats?` without --distance).

    Each side is sorted and trimmed by n>>5 values at each end (at most 3; at most 1 on
    new when base has <= 3 runs). With min, "mean" (the middle element, x[n//2]) and max
    of each side, new is changed iff (min_new > mid_base and mid_new > max_base) or the
    mirror image holds, and the ratio of the middle elements (larger/smaller, capped at 5)
    exceeds 1.01, and 1.05 unless `performance_stat`. Needs 3 or more runs on at least
    one side; a distribution-free range check with no stated error rate.
    """
    a = np.sort(np.asarray(base, dtype=float).reshape(-1))
    b = np.sort(np.asarray(new, dtype=float).reshape(-1))
    if max(a.size, b.size) < 3 or min(a.size, b.size) == 0:
        why = f"{a.size} base and {b.size} new runs: the lkp rule needs 3 or more runs on one side and 1 on the other"
        return RuleResult(LKP_RANGE, False, 0, why, (StatWarning(TOO_FEW_SAMPLES, why),))
    trim_a = min(a.size >> 5, 3)
    trim_b = min(b.size >> 5, 1 if a.size <= 3 else 3)
    a, b = a[trim_a:a.size - trim_a], b[trim_b:b.size - trim_b]
    min_a, mid_a, max_a = a[0], a[a.size // 2], a[-1]
    min_b, mid_b, max_b = b[0], b[b.size // 2], b[-1]
    disjoint = bool((min_b > mid_a and mid_b > max_a) or (min_a > mid_b and mid_a > max_b))
    high, low = max(mid_a, mid_b), min(mid_a, mid_b)
    ratio = min(high / low, 5.0) if low > 0 else 5.0
    threshold = 1.01 if performance_stat else 1.05
    changed = disjoint and bool(ratio > threshold)
    detail = (f"base [{min_a:.6g} {mid_a:.6g} {max_a:.6g}] new [{min_b:.6g} {mid_b:.6g} {max_b:.6g}] "
              f"{'disjoint' if disjoint else 'overlapping'}, ratio {ratio:.4g} "
              f"{'>' if ratio > threshold else '<='} {threshold:g}")
    return RuleResult(LKP_RANGE, changed, _sign(float(mid_b - mid_a)), detail)
