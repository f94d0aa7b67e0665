"""Always-valid sequential A/B decisions on an interleaved run: stop as soon as the answer is clear.

The data. Round i of an interleaved run gives the pair (base_i, cand_i), the primary
metric of the two commands measured side by side (times or rates, > 0). The test works
on d_i = log cand_i - log base_i: a drift of the machine common to both arms (load,
thermal state, page cache) cancels in the ratio, and timing noise is multiplicative.

The confidence sequence (CS). For a centre m, round i (after the first SCALE_ROUNDS,
which only seed the scale) contributes

    X_i(m) = clip((d_i - m) / s_{i-1}, -CLIP, +CLIP),

s_{i-1} the MAD scale of d_1..d_{i-1}: predictable, it never looks at round i. If d_i is
symmetric about m given the past, so is X_i(m) (clipping symmetrically about m keeps the
symmetry), hence E[X_i(m) | past] = 0 and |X_i(m)| <= CLIP. Then for any fixed bet
0 <= λ < 1/CLIP, Π_i (1 + λ X_i(m)) is a non-negative martingale of mean 1 (a betting
capital process, Waudby-Smith & Ramdas 2024, "Estimating means of bounded random
variables by betting"), and so is the average over a fixed grid of bets (BETS). By
Ville's inequality the capital of the true centre ever reaching 2/α has probability at
most α/2, however often one looks. The upward capital K⁺(m) (bets on d above m) falls as
m rises and the downward K⁻(m) rises, so the m not rejected by either,
{m: K⁺(m) < 2/α and K⁻(m) < 2/α}, is an interval [lo, hi] that covers the true centre
at every round at once with probability >= 1 - α (a union bound over the two sides).

What it assumes, and why that holds for A/A. Under an A/A comparison (same command, or
two commands with the same distribution) the two measurements of a round are
exchangeable when the order inside the round alternates or is shuffled, so d_i is
symmetric about 0 given the past, whatever the noise: heavy tails, outliers, and drift
from round to round (no independence, no normality, no variance model). So the rate of
false decisions on A/A is at most α by construction; it does not rest on the scale
estimate, which only sets how the evidence of a round is weighed. For a real change, the
CS covers m when d_i - m is symmetric (a shift of a symmetric noise), the centre then
being the median of the log ratio, shown as a change in %. An order effect (the first
command of every round always slower) breaks the exchangeability: the runner alternates
or shuffles the order.

The decision rule (`decide`, after each round, error rates as above):

* REGRESSION / IMPROVEMENT: the change is significant (the CS excludes 0: K⁺(0) or K⁻(0)
  reached 2/α) AND the estimate lies beyond the threshold in the same direction. (Not
  "the CS lies beyond the threshold": that is slower and answers a different question.)
  The chance of calling any regression or improvement when there is no change is <= α;
  of calling the wrong direction <= α/2.
* NO_CHANGE: the CS lies inside (-threshold, +threshold) (equivalence: no change as large
  as the threshold; wrong with probability <= α when the true change is beyond it).
* otherwise keep sampling (verdict None); at the limit (final=True) UNDECIDED, with the CS
  reached.

The estimate is the centre where Σ X_i(m) = 0 (an M-estimate with predictable scales);
the CS always contains it. The bet grid spans bets tuned for a few rounds to a few
thousand; the evidence of one round is at most a factor 1 + BETS.max() * CLIP, so at
least about 8 rounds are needed for any decision at α = 0.05.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from perflab.model.verdicts import Verdict
from perflab.stats.sequential import MAD_TO_SD

CLIP = 2.0                 # |X_i| <= CLIP: a round's d_i counts at most 2 scales from the centre
SCALE_ROUNDS = 2           # the first rounds only seed the scale
# bets λ·CLIP from 0.8 down by factors of sqrt(2): optimal for standardised changes
# from ~0.4 to ~0.02 (a few rounds to a few thousand)
BETS = 0.8 * 2.0 ** (-np.arange(12) / 2.0) / CLIP
_BISECT_STEPS = 60


@dataclass(frozen=True)
class SequentialDecision:
    """The state of the sequential A/B test after ``n`` rounds."""

    verdict: Verdict | None        # None: keep sampling
    n: int                         # pairs (rounds) used
    estimate_pct: float            # change of cand vs base, % (positive: cand larger)
    ci_pct: tuple[float, float]    # always-valid (1 - alpha) confidence interval, %
    alpha: float
    reason: str                    # one line: why it stopped / what is missing


def _log_ratios(base: NDArray[np.float64], cand: NDArray[np.float64]) -> NDArray[np.float64]:
    if base.shape != cand.shape:
        raise ValueError(f"base and cand differ in length: {base.shape[-1]} and {cand.shape[-1]}")
    if not (np.all(np.isfinite(base)) and np.all(np.isfinite(cand)) and np.all(base > 0) and np.all(cand > 0)):
        raise ValueError("values must be finite and > 0 (times or rates)")
    return np.asarray(np.log(cand) - np.log(base), dtype=float)


def predictable_scales(d: NDArray[np.float64]) -> NDArray[np.float64]:
    """s_{i-1} for every round i >= SCALE_ROUNDS (last axis): the MAD scale of the rounds
    before it, made consistent for normal noise; a tiny positive floor when those are all
    equal (quantised timings), so a round then counts by its sign alone."""
    n = d.shape[-1]
    scales = np.empty(d.shape[:-1] + (max(n - SCALE_ROUNDS, 0),))
    for i in range(SCALE_ROUNDS, n):
        past = d[..., :i]
        centre = np.median(past, axis=-1, keepdims=True)
        scales[..., i - SCALE_ROUNDS] = MAD_TO_SD * np.median(np.abs(past - centre), axis=-1)
    return np.maximum(scales, 1e-12)


def _clipped(d: NDArray[np.float64], scales: NDArray[np.float64], m: NDArray[np.float64] | float
             ) -> NDArray[np.float64]:
    """X_i(m) of the rounds after the seeding ones; m broadcasts against d[..., :1]."""
    return np.clip((d[..., SCALE_ROUNDS:] - m) / scales, -CLIP, CLIP)


def _log_capitals(x: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """log K⁺ and log K⁻ after every round (last axis), averaged over the bet grid."""
    from scipy.special import logsumexp  # lazily: importing scipy costs start-up time
    bets = BETS.reshape((-1,) + (1,) * x.ndim)
    up = np.cumsum(np.log1p(bets * x), axis=-1)
    down = np.cumsum(np.log1p(-bets * x), axis=-1)
    k = math.log(BETS.size)
    return logsumexp(up, axis=0) - k, logsumexp(down, axis=0) - k


def _thresholds(threshold_pct: float) -> tuple[float, float]:
    """The log ratios of a change of -threshold and +threshold."""
    t = threshold_pct / 100.0
    return (math.log1p(-t) if t < 1 else -math.inf), math.log1p(t)


@dataclass(frozen=True)
class RoundEvidence:
    """Per round (last axis): what the rule needs, evaluated at the three points it reads."""

    rounds: NDArray[np.int64]          # 1-based round count
    up_zero: NDArray[np.bool_]         # the CS lies above 0 (K⁺(0) reached 2/α)
    down_zero: NDArray[np.bool_]       # the CS lies below 0
    above_upper: NDArray[np.bool_]     # estimate > +threshold
    below_lower: NDArray[np.bool_]     # estimate < -threshold
    inside: NDArray[np.bool_]          # the CS lies inside (-threshold, +threshold)


def round_evidence(d: NDArray[np.float64], *, threshold_pct: float, alpha: float) -> RoundEvidence:
    """The rule's inputs after every round of the log ratios ``d`` (last axis; any batch shape)."""
    d = np.asarray(d, dtype=float)
    n = d.shape[-1]
    lower, upper = _thresholds(threshold_pct)
    bound = math.log(2.0 / alpha)
    shape = d.shape[:-1] + (n,)
    none = np.zeros(shape, dtype=bool)
    if n <= SCALE_ROUNDS:
        return RoundEvidence(np.arange(1, n + 1), none, none.copy(), none.copy(), none.copy(), none.copy())
    scales = predictable_scales(d)
    pad = np.zeros(d.shape[:-1] + (SCALE_ROUNDS,), dtype=bool)

    def padded(a: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return np.concatenate([pad, a], axis=-1)

    up0, down0 = _log_capitals(_clipped(d, scales, 0.0))
    x_upper = _clipped(d, scales, upper)
    up_u, down_u = _log_capitals(x_upper)
    above = np.cumsum(x_upper, axis=-1) > 0          # Σ X(m) falls with m: estimate > m
    if math.isfinite(lower):
        x_lower = _clipped(d, scales, lower)
        up_l, _ = _log_capitals(x_lower)
        below = np.cumsum(x_lower, axis=-1) < 0
        lower_rejected = up_l >= bound
    else:
        below = np.zeros_like(above)
        lower_rejected = np.ones_like(above)
    inside = lower_rejected & (down_u >= bound)
    return RoundEvidence(np.arange(1, n + 1), padded(up0 >= bound), padded(down0 >= bound),
                         padded(above), padded(below), padded(inside))


def verdicts(evidence: RoundEvidence, *, lower_is_better: bool = True, min_n: int = 5
             ) -> NDArray[np.int8]:
    """The rule after every round: +1 regression, -1 improvement, 2 no change, 0 keep sampling.

    Each round is judged on its own (as `decide` would be called after it); a caller
    stops at the first non-zero one.
    """
    larger = evidence.up_zero & evidence.above_upper     # cand significantly larger, beyond +t
    smaller = evidence.down_zero & evidence.below_lower
    regression, improvement = (larger, smaller) if lower_is_better else (smaller, larger)
    out = np.where(regression, 1, np.where(improvement, -1, np.where(evidence.inside, 2, 0))).astype(np.int8)
    out[..., evidence.rounds < min_n] = 0
    return out


def confidence_interval(d: NDArray[np.float64], alpha: float) -> tuple[float, float, float]:
    """(lo, estimate, hi) of the log ratio after all rounds of one stream ``d``."""
    d = np.asarray(d, dtype=float).reshape(-1)
    if d.size <= SCALE_ROUNDS:
        return -math.inf, float(np.median(d)) if d.size else math.nan, math.inf
    scales = predictable_scales(d)
    bound = math.log(2.0 / alpha)

    def total(m: float) -> float:
        return float(_clipped(d, scales, m).sum())

    def log_up(m: float) -> float:
        return float(_log_capitals(_clipped(d, scales, m))[0][-1])

    def log_down(m: float) -> float:
        return float(_log_capitals(_clipped(d, scales, m))[1][-1])

    # beyond [far_lo, far_hi] every X is clipped: the capitals no longer change with m
    reach = CLIP * float(scales.max())
    far_lo, far_hi = float(d.min()) - reach, float(d.max()) + reach
    estimate = _bisect(lambda m: total(m) > 0, far_lo, far_hi)
    lo = -math.inf if log_up(far_lo) < bound else _bisect(lambda m: log_up(m) >= bound, far_lo, estimate)
    hi = math.inf if log_down(far_hi) < bound else _bisect(lambda m: log_down(m) < bound, estimate, far_hi)
    return lo, estimate, hi


def _bisect(left_of_root: Callable[[float], bool], a: float, b: float) -> float:
    """The point where the monotone predicate turns from True (left) to False (right)."""
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (a + b)
        if left_of_root(mid):
            a = mid
        else:
            b = mid
        if b - a <= 1e-12 * (1 + abs(a)):
            break
    return 0.5 * (a + b)


def _pct(log_ratio: float) -> float:
    return 100.0 * math.expm1(log_ratio) if log_ratio < 700 else math.inf


def decide(base: Sequence[float], cand: Sequence[float], *, threshold_pct: float,
           alpha: float = 0.05, lower_is_better: bool = True, min_n: int = 5,
           final: bool = False) -> SequentialDecision:
    """The decision after the rounds so far (see the module doc); call it after every round.

    ``base[i]``, ``cand[i]`` are round i's primary metric of the two commands (> 0).
    ``final``: the limit is reached, so an open test ends UNDECIDED with the CS reached.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), not {alpha}")
    if not (threshold_pct > 0 and math.isfinite(threshold_pct)):
        raise ValueError(f"the threshold must be a positive percentage, not {threshold_pct}")
    d = _log_ratios(np.asarray(base, dtype=float).reshape(-1), np.asarray(cand, dtype=float).reshape(-1))
    n = int(d.size)
    lo, estimate, hi = confidence_interval(d, alpha)
    ci = (_pct(lo), _pct(hi))
    est = _pct(estimate)
    shown = f"{est:+.2f}% (CI {ci[0]:+.2f}%..{ci[1]:+.2f}%, {100 * (1 - alpha):g}% always valid) after {n} pairs"
    t = f"{threshold_pct:g}%"
    code = 0
    if n >= max(min_n, 1) and n > SCALE_ROUNDS:
        code = int(verdicts(round_evidence(d, threshold_pct=threshold_pct, alpha=alpha),
                            lower_is_better=lower_is_better, min_n=min_n)[-1])
    verdict: Verdict | None
    if code in (1, -1):
        verdict = Verdict.REGRESSION if code == 1 else Verdict.IMPROVEMENT
        reason = f"{verdict.value}: {shown}; significant and beyond the {t} threshold"
    elif code == 2:
        verdict, reason = Verdict.NO_CHANGE, f"no change beyond ±{t}: {shown} lies inside"
    else:
        verdict = Verdict.UNDECIDED if final else None
        if n < min_n:
            missing = f"{n} pairs, fewer than the minimum {min_n}"
        elif lo > 0 or hi < 0:
            missing = f"significant, but the estimate is within the {t} threshold and the CI is not inside ±{t}"
        else:
            missing = f"the CI holds 0 and reaches beyond ±{t}"
        reason = f"{'undecided at the limit' if final else 'keep sampling'}: {shown}; {missing}"
    return SequentialDecision(verdict, n, est, ci, alpha, reason)
