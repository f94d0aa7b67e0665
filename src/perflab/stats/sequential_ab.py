"""Always-valid sequential A/B decisions on an interleaved run: stop as soon as the answer is clear.

Works on d_i = log cand_i − log base_i of each round's pair. A confidence sequence for the
centre of d (betting martingales on clipped, predictably scaled rounds: Waudby-Smith &
Ramdas 2024; Ville's inequality) covers it at every round at once with probability >= 1 − α.
`decide`: regression / improvement when the sequence excludes 0 and the estimate lies
beyond the threshold (any such call under no change <= α, the wrong direction <= α/2);
no change when the sequence lies inside ±threshold (wrong <= α when the change is beyond
it); else keep sampling, and undecided at the limit. Assumes only that d is symmetric about
its centre given the past, which a fair-coin order within each round makes exact for A/A
whatever the noise. At least 10 pairs at α = 0.05.
Method: docs/methods.md (sequential A/B); costs measured: bench/README.md, "Method history".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from perflab.model.verdicts import SIGN, Verdict, better_pct
from perflab.stats.sequential import MAD_TO_SD

CLIP = 2.0                 # |X_i| <= CLIP: a round's d_i counts at most 2 scales from the centre
SCALE_ROUNDS = 2           # the first rounds seed the scale and count by their sign alone
SIGN_SCALE = 1e-12         # a scale so small that X_i(m) is ±CLIP (0 at d_i = m): the sign
# bets λ·CLIP from 0.8 down by factors of 2: log-optimal for changes of ~0.4 to ~0.013
# scales (a decision in ~10 to ~10,000 rounds); equal weights
BETS = 0.8 * 2.0 ** -np.arange(6.0) / CLIP
_SEARCH_POINTS = 9
_RESOLUTION = 1e-6          # of a log ratio: 0.0001%


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


def _rescale_rounds(n: int) -> NDArray[np.int64]:
    """The rounds after which the scale is recomputed: every one up to 20, then every ~5%
    more rounds (a prefix median of every round would cost O(n²))."""
    return np.array([i for i in range(SCALE_ROUNDS, n) if i < 20 or i % (i // 20) == 0], dtype=np.int64)


def _prefix_medians(rows: NDArray[np.float64], lengths: NDArray[np.int64]) -> NDArray[np.float64]:
    """Row r of ``rows`` (..., R or 1, n): the median of its first lengths[r] values, each
    row sorted with the values after that prefix set to +inf, then its middle taken."""
    n = rows.shape[-1]
    masked = np.where(np.arange(n) < lengths[:, None], rows, np.inf)
    masked.sort(axis=-1)
    shape = masked.shape[:-1] + (1,)
    low = np.take_along_axis(masked, np.broadcast_to(((lengths - 1) // 2)[:, None], shape), -1)
    high = np.take_along_axis(masked, np.broadcast_to((lengths // 2)[:, None], shape), -1)
    return np.asarray(0.5 * (low + high), dtype=float)


def predictable_scales(d: NDArray[np.float64]) -> NDArray[np.float64]:
    """s_{i-1} for every round i (last axis): the MAD scale of the rounds before it, made
    consistent for normal noise. The first SCALE_ROUNDS rounds, and any whose earlier
    rounds are all equal (quantised timings), get a tiny positive floor instead, so they
    count by their sign alone. Recomputed after the rounds of `_rescale_rounds`, carried
    forward in between."""
    n = d.shape[-1]
    floor = np.full(d.shape[:-1] + (min(n, SCALE_ROUNDS),), SIGN_SCALE)
    if n <= SCALE_ROUNDS:
        return floor
    lengths = _rescale_rounds(n)
    flat = d.reshape(-1, n)
    mads = np.empty((flat.shape[0], lengths.size))
    for start in range(0, flat.shape[0], 64):   # bounded memory: 64 streams x rounds² at a time
        chunk = flat[start:start + 64]
        centres = _prefix_medians(chunk[:, None, :], lengths)     # (streams, R, 1)
        deviations = np.abs(chunk[:, None, :] - centres)          # (streams, R, n)
        mads[start:start + 64] = _prefix_medians(deviations, lengths)[..., 0]
    # round i uses the latest recompute after a round <= i, i.e. of the first r <= i rounds
    which = np.searchsorted(lengths, np.arange(SCALE_ROUNDS, n), side="right") - 1
    scales = np.maximum(MAD_TO_SD * mads[:, which], SIGN_SCALE).reshape(d.shape[:-1] + (n - SCALE_ROUNDS,))
    return np.concatenate([floor, scales], axis=-1)


def _clipped(d: NDArray[np.float64], scales: NDArray[np.float64], m: NDArray[np.float64] | float
             ) -> NDArray[np.float64]:
    """X_i(m) of every round; m broadcasts against d[..., :1]."""
    return np.clip((d - m) / scales, -CLIP, CLIP)


def _log_capitals(x: NDArray[np.float64], cumulative: bool = True
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """log K⁺ and log K⁻ after every round (last axis), or after the last one only,
    averaged over the bet grid."""
    bets = BETS.reshape((-1,) + (1,) * x.ndim)
    add = np.cumsum if cumulative else np.sum
    return _log_mean_exp(add(np.log1p(bets * x), axis=-1)), _log_mean_exp(add(np.log1p(-bets * x), axis=-1))


def _log_mean_exp(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """log of the mean of exp(a) over the first axis, without overflow."""
    top = a.max(axis=0)
    return np.asarray(top + np.log(np.mean(np.exp(a - top), axis=0)), dtype=float)


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


def round_evidence(d: NDArray[np.float64], *, threshold_pct: float, alpha: float,
                   scales: NDArray[np.float64] | None = None) -> RoundEvidence:
    """The rule's inputs after every round of the log ratios ``d`` (last axis; any batch
    shape); ``scales``: `predictable_scales(d)` when the caller has them."""
    d = np.asarray(d, dtype=float)
    n = d.shape[-1]
    lower, upper = _thresholds(threshold_pct)
    bound = math.log(2.0 / alpha)
    shape = d.shape[:-1] + (n,)
    none = np.zeros(shape, dtype=bool)
    if n == 0:
        return RoundEvidence(np.arange(1, 1), none, none.copy(), none.copy(), none.copy(), none.copy())
    scales = predictable_scales(d) if scales is None else scales
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
    return RoundEvidence(np.arange(1, n + 1), up0 >= bound, down0 >= bound, above, below, inside)


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


def confidence_interval(d: NDArray[np.float64], alpha: float,
                        scales: NDArray[np.float64] | None = None) -> tuple[float, float, float]:
    """(lo, estimate, hi) of the log ratio after all rounds of one stream ``d``."""
    d = np.asarray(d, dtype=float).reshape(-1)
    if d.size == 0:
        return -math.inf, float(np.median(d)) if d.size else math.nan, math.inf
    scales = predictable_scales(d) if scales is None else scales
    bound = math.log(2.0 / alpha)

    def x_of(m: NDArray[np.float64]) -> NDArray[np.float64]:
        return _clipped(d, scales, m[:, None])

    # beyond [far_lo, far_hi] every X is clipped: the capitals no longer change with m
    reach = CLIP * float(scales.max())
    far = np.array([float(d.min()) - reach, float(d.max()) + reach])
    estimate = _search(lambda m: x_of(m).sum(axis=-1) > 0, far[0], far[1])
    up_far, down_far = _log_capitals(x_of(far), cumulative=False)
    lo, hi = -math.inf, math.inf
    if up_far[0] >= bound:
        lo = _search(lambda m: _log_capitals(x_of(m), cumulative=False)[0] >= bound, far[0], estimate)
    if down_far[1] >= bound:
        hi = _search(lambda m: _log_capitals(x_of(m), cumulative=False)[1] < bound, estimate, far[1])
    return lo, estimate, hi


def _search(left_of_root: Callable[[NDArray[np.float64]], NDArray[np.bool_]], a: float, b: float) -> float:
    """Where a predicate monotone in m turns from True (left) to False (right), in [a, b]:
    a grid of points at a time, narrowed to the cell of the turn."""
    while b - a > _RESOLUTION:
        grid = np.linspace(a, b, _SEARCH_POINTS)
        turn = int(np.count_nonzero(left_of_root(grid)))   # monotone: the Trues come first
        a, b = float(grid[max(turn - 1, 0)]), float(grid[min(turn, _SEARCH_POINTS - 1)])
        if turn in (0, _SEARCH_POINTS):
            break
    return 0.5 * (a + b)


def _pct(log_ratio: float) -> float:
    """A log ratio as a change in % (nan stays nan; beyond exp's range +inf)."""
    if math.isnan(log_ratio):
        return math.nan
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
    scales = predictable_scales(d)
    lo, estimate, hi = confidence_interval(d, alpha, scales)
    ci = (_pct(lo), _pct(hi))
    est = _pct(estimate)
    # the text in the one sign convention of every output; est and ci stay raw (cand/base - 1)
    better, (b_lo, b_hi) = better_pct(est, ci, lower_is_better)
    shown = (f"{better:+.2f}% ({SIGN}; CI {b_lo:+.2f}%..{b_hi:+.2f}%, {100 * (1 - alpha):g}% always valid) "
             f"after {n} pairs")
    t = f"{threshold_pct:g}%"
    code = 0
    if n >= max(min_n, 1):
        code = int(verdicts(round_evidence(d, threshold_pct=threshold_pct, alpha=alpha, scales=scales),
                            lower_is_better=lower_is_better, min_n=min_n)[-1])
    verdict: Verdict | None
    if code in (1, -1):
        verdict = Verdict.REGRESSION if code == 1 else Verdict.IMPROVEMENT
        # what was tested: the CI excludes 0 and the estimate is beyond the threshold; where the
        # CI's inner edge lies inside it, a smaller change is not ruled out and that is said
        inner = min(abs(b_lo), abs(b_hi))
        reason = (f"{verdict.value}: {shown}; the CI excludes 0 and the estimate lies beyond the {t} threshold"
                  + (f" (the CI reaches {inner:.2f}%: a change under {t} is not ruled out)"
                     if inner < threshold_pct else " (so does the whole CI)"))
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
