"""One comparison row (base vs new) and the report-wide verdicts with FDR control.

`compare` measures one row; `decide` takes every row of a report, applies
Benjamini-Hochberg across the rows that have a p-value and sets the final verdicts.

Orientation (mmtests): the change is in %, **positive = better**. Higher-is-better
metrics: 100·new/base − 100; lower-is-better: 100 − 100·new/base, both on the centres
of the metric's mean kind. The confidence interval of the change has the same
orientation.

Verdicts (``model.verdicts.Verdict``), for the test methods (welch-log, mann-whitney):
  improvement / regression  the row survives FDR control and its change lies outside
                  ±noise floor (these rows, and only these, are `significant`: the mark)
  no change       the confidence interval of the change lies inside ±noise floor
  undecided       anything else (too little data for either claim); a row whose test
                  cannot reach the level at its sample sizes (``min_p``) is always this,
                  and so is one whose data cannot carry the claim (``stats.resolution``:
                  a change below the values' step, or drift or two groups in a run with
                  overlapping sides, large enough to move the row across its verdict)
For the rule methods (mmtests, lkp) there is no p-value: the rule's own verdict is the
significance, with no noise floor and no FDR control (that is how those tools work), but
for separate runs, whose run-to-run spread widens the floor: a flagged change inside it is undecided;
rows the rule does not flag are "no change" or "inconclusive" by the bootstrap interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from perflab.model.methods import CompareTest, compare_test
from perflab.model.records import Direction, MeanKind
from perflab.model.verdicts import Verdict, WarningSide, oriented_ratio
from perflab.stats.compare_tests.row import Outcome, Row
from perflab.stats.distributions import norm_ppf
from perflab.stats.methods import tester
from perflab.stats.resolution import UNSTABLE, margin, quantum_pairs, unjudgeable, unsettled
from perflab.stats.rules import RuleResult
from perflab.stats.separate_runs import TWO_GROUPS, Judged, RunToRun, judge, load_blocked, two_groups, within_run
from perflab.stats.significance import Moments, benjamini_hochberg, moments_rows
from perflab.stats.summary import Summary, clean, summarize_rows
from perflab.stats.variance import RunVariance
from perflab.stats.warnings import (
    BIMODAL,
    NONPOSITIVE_CENTRE,
    OPPOSITE_ESTIMATE,
    RUN_VARIANCE,
    TREND,
    UNEQUAL_N,
    StatWarning,
)


@dataclass(frozen=True)
class Difference:
    """One row: base vs new, the change (positive = better), its interval, test and verdict."""

    base: Summary
    new: Summary
    direction: Direction
    change_pct: float     # positive = better
    ci_low: float         # interval of change_pct, same orientation
    ci_high: float
    confidence: float
    p_value: float        # NaN for the rule methods and where no test is possible
    q_value: float        # BH-adjusted p across the report (after `decide`; = p for one row)
    min_p: float          # the smallest p the test can give at these sample sizes
    method: str           # human-readable, e.g. "Welch t-test on log values"
    method_key: str       # its name in the registry (model.methods.COMPARE_TESTS)
    interval: str         # how the interval was computed
    noise_floor: float    # relative, 0.01 = 1%
    verdict: Verdict
    significant: bool     # carries the significance mark: an improvement or a regression
    warnings: tuple[StatWarning, ...]
    rule: RuleResult | None = None  # the rule's own result for mmtests / lkp
    judgeable: bool = True          # False: the data cannot carry a mark (stats.resolution)
    blocked: str = ""               # then why, in words (the warning that kept the mark)
    variance_source: str = ""       # separate runs: which run-to-run variance the test used
    d0: float = math.nan            # the host prior's degrees of freedom, and the row's own
    d: float = math.nan             # replicates' (stats.separate_runs)
    runs_needed: int | None = None  # replicate runs a side that would decide a change of run_change
    run_change: float = math.nan    # that change (relative): the row's own, at least the noise floor
    run_spread: float = math.nan    # the posterior run-to-run spread (sd of logs, in %)
    unsettled: float = 0.0          # % the change could move by with the sides' drift or two groups


def _verdict(change: float, ci_low: float, ci_high: float, floor_pct: float, rejected: bool,
             rule: RuleResult | None, direction: Direction, decidable: bool = True) -> Verdict:
    """The verdict of one row, given whether its test rejected (or its rule flagged) it.

    A row whose test cannot reach the level at its sample sizes (not ``decidable``) is
    undecided: calling it "no change" would claim what the test could never have seen.
    """
    if not decidable:
        return Verdict.UNDECIDED
    if rule is not None and rule.changed:
        better = (rule.sign > 0) == (direction is Direction.HIGHER)
        return Verdict.IMPROVEMENT if better else Verdict.REGRESSION
    # a call goes the way of the change AND of its interval: when outliers move the centres
    # against what the test found (Mann-Whitney's shift), neither direction is called
    if rule is None and rejected and change > floor_pct and not ci_high < 0:
        return Verdict.IMPROVEMENT
    if rule is None and rejected and change < -floor_pct and not ci_low > 0:
        return Verdict.REGRESSION
    if -floor_pct <= ci_low and ci_high <= floor_pct:
        return Verdict.NO_CHANGE
    return Verdict.UNDECIDED


def compare(base: ArrayLike, new: ArrayLike, *, direction: Direction, mean_kind: MeanKind,
            noise_floor: float = 0.01, method: str = "welch-log", confidence: float = 0.95,
            seed: int = 0, separate_runs: bool = False, run_variance: RunVariance | None = None,
            run_shares: tuple[float, float] = (1.0, 1.0),
            summaries: tuple[Summary, Summary] | None = None, run_to_run: RunToRun | None = None,
            skip: frozenset[str] = frozenset()) -> Difference:
    """Compare two samples of one metric (values in repetition order) with `method`, a test
    of the registry (model.methods.COMPARE_TESTS: welch-log, mann-whitney, and the mmtests
    and lkp rules; each one module of stats/compare_tests, which says what it assumes).

    Separate runs (``separate_runs``: recorded by different runs) differ by their run-to-run
    variance too: Welch's test takes the run as its unit with ``run_variance``
    (``run_shares``: sum (m_j/n)^2 over the runs each side pools) or the posterior of a host
    prior ``run_to_run``; the other methods widen their noise floor instead; with neither, the
    row is undecided (nothing inside one run measures it). A warning says which
    (docs/separate-runs.md).

    The verdict here treats the row as a report of one (rejected iff p < 1 − confidence);
    pass every row of a report through `decide` for FDR-controlled verdicts. Never raises on
    missing, single, non-positive or constant data: the row is then undecided (or no change)
    and says why in its warnings. ``summaries``: the sides' `summarize`, if already made.
    """
    return compare_rows([Pair(base, new, direction, mean_kind, noise_floor, separate_runs, run_variance, run_shares,
                              summaries, run_to_run, skip)], method=method, confidence=confidence, seed=seed)[0]


@dataclass(frozen=True)
class Pair:
    """One comparison for `compare_rows`: the two samples and the row's own settings (see `compare`)."""

    base: ArrayLike
    new: ArrayLike
    direction: Direction
    mean_kind: MeanKind
    noise_floor: float = 0.01
    separate_runs: bool = False
    run_variance: RunVariance | None = None
    run_shares: tuple[float, float] = (1.0, 1.0)
    summaries: tuple[Summary, Summary] | None = None
    run_to_run: RunToRun | None = None
    skip: frozenset[str] = frozenset()   # blocking rules (their warning kinds) not applied: bench/blocking_rules.py


@dataclass(frozen=True)
class _Sides:
    """What a pair's arrays give its comparison: the clean values, their summaries, the
    moments of their logs (Welch's), their grid step and each side's within-run variance."""

    a: np.ndarray
    b: np.ndarray
    summaries: tuple[Summary, Summary]
    logs: tuple[Moments | None, Moments | None]
    step: float
    within: tuple[float, float]


def compare_rows(pairs: Sequence[Pair], *, method: str = "welch-log", confidence: float = 0.95,
                 seed: int = 0) -> list[Difference]:
    """`compare` of each pair, the same rows: what the sides' arrays give (summaries, the
    moments of their logs, the grid step) is taken along the rows of equal n at once.
    ValueError: no such method."""
    test = compare_test(method)
    cleaned = [(clean(p.base)[0], clean(p.new)[0]) for p in pairs]
    wanted = [i for i, p in enumerate(pairs) if p.summaries is None]
    made = summarize_rows([x for i in wanted for x in (pairs[i].base, pairs[i].new)],
                          [pairs[i].mean_kind for i in wanted for _ in range(2)])
    summaries = {i: (made[2 * j], made[2 * j + 1]) for j, i in enumerate(wanted)}
    logs = moments_rows([x for pair in cleaned for x in pair], log=True)
    steps = quantum_pairs(cleaned)
    out = []
    for i, (p, (a, b)) in enumerate(zip(pairs, cleaned)):
        moments = (logs[2 * i], logs[2 * i + 1])
        within = tuple(float(m.var) if m is not None else within_run(x) for m, x in zip(moments, (a, b)))
        sides = _Sides(a, b, p.summaries or summaries[i], moments, steps[i], within)  # type: ignore[arg-type]
        out.append(_compare(p, sides, test, confidence, seed))
    return out


def _compare(p: Pair, sides: _Sides, method: CompareTest, confidence: float, seed: int) -> Difference:
    """One row of `compare_rows` by the test ``method``."""
    (a, b), (base_summary, new_summary) = (sides.a, sides.b), sides.summaries
    run_variance, run_shares, noise_floor, direction = p.run_variance, p.run_shares, p.noise_floor, p.direction
    # sides pooled from rounds of pairs: what moved between rounds (a side's drift, its groups)
    # moved both runs of a round, and the paired test's variance holds what it did not cancel
    skip = p.skip | ({UNSTABLE, TWO_GROUPS} if run_variance is not None and run_variance.paired else frozenset())
    warnings = [w.on(WarningSide.BASE) for w in base_summary.warnings]
    warnings += [w.on(WarningSide.CANDIDATE) for w in new_summary.warnings]
    pair: list[StatWarning] = []
    if a.size and b.size and a.size != b.size:
        pair.append(StatWarning(UNEQUAL_N, f"base has {a.size} values, new {b.size}"))
    change = _change(base_summary, new_summary, direction, pair)
    judged, refused = None, None   # refused: why separate runs may not be judged
    if p.separate_runs:
        judged, run_variance, run_shares, noise_floor = _separate_runs(
            sides, change, method.run_unit, noise_floor, confidence, run_variance, run_shares, p.run_to_run, pair,
            skip)
        refused = judged.blocked if judged is not None else (
            _unknown(run_variance) or load_blocked(p.run_to_run, skip))
    test = tester(method.name)(Row(a=a, b=b, logs=sides.logs, mean_kind=p.mean_kind, direction=direction,
                                   confidence=confidence, seed=seed, run_shares=run_shares,
                                   run_variance=run_variance if p.separate_runs else None))
    pair += test.warnings
    min_p = test.min_p
    # a drift or split blocks only where it could move the row across its verdict (the rules'
    # own verdicts have no interval that says how far: any does)
    room = 0.0 if test.rule is not None else margin(change, test.ci_low, test.ci_high, 100.0 * noise_floor,
                                                    direction is Direction.HIGHER)
    bimodal = (_bimodal(sides.summaries[0]), _bimodal(sides.summaries[1]))
    if judged is not None and any(bimodal) and TWO_GROUPS not in skip and _split(sides, (BIMODAL,)) >= room:
        refused = two_groups(bimodal)
    blocked = _blocked(sides, change, test, refused, pair, skip, room)
    verdict = _verdict(change, test.ci_low, test.ci_high, 100.0 * noise_floor, test.p_value < 1.0 - confidence,
                       test.rule, direction, decidable=not min_p >= 1.0 - confidence and blocked is None)
    if test.rule is not None and p.separate_runs and verdict.significant and not abs(change) > 100.0 * noise_floor:
        # the rule flagged a change inside the floor separate runs widened to: not judged, as stated
        verdict = Verdict.UNDECIDED
    return Difference(
        base=base_summary, new=new_summary, direction=direction, change_pct=change,
        ci_low=test.ci_low, ci_high=test.ci_high, confidence=confidence, p_value=test.p_value,
        q_value=test.p_value, min_p=min_p,
        method=method.title, method_key=method.name, interval=test.interval, noise_floor=noise_floor,
        verdict=verdict, significant=verdict.significant,
        warnings=(*warnings, *(w.on(WarningSide.PAIR) for w in pair)), rule=test.rule,
        judgeable=blocked is None, blocked=blocked.message if blocked is not None else "",
        variance_source=judged.variance.source if judged else "", d0=judged.d0 if judged else math.nan,
        d=judged.d if judged else math.nan, runs_needed=judged.runs_needed if judged else None,
        run_change=judged.size if judged else math.nan, run_spread=judged.variance.cov_pct if judged else math.nan,
        unsettled=100.0 * math.expm1(_split(sides)))


def _change(base: Summary, new: Summary, direction: Direction, pair: list[StatWarning]) -> float:
    """The oriented change of the centres in % (NaN, with a warning, when a centre is <= 0)."""
    if base.centre > 0 and new.centre >= 0:
        return oriented_ratio(new.centre / base.centre, direction)
    if base.n and new.n and not (math.isnan(base.centre) or math.isnan(new.centre)):
        pair.append(StatWarning(NONPOSITIVE_CENTRE, "a centre <= 0: a change in % is undefined"))
    return math.nan


def _separate_runs(sides: _Sides, change: float, run_unit: bool, noise_floor: float, confidence: float,
                   run_variance: RunVariance | None, run_shares: tuple[float, float], run_to_run: RunToRun | None,
                   pair: list[StatWarning], skip: frozenset[str] = frozenset()
                   ) -> tuple[Judged | None, RunVariance | None, tuple[float, float], float]:
    """(host prior's judgement, run variance, run shares, noise floor) of a row of separate runs;
    ``run_unit``: the test takes the run-to-run variance in (its unit is the run)."""
    judged = None
    if run_to_run is not None:
        judged = judge(run_to_run, (sides.a.size, sides.b.size), sides.within, floor=noise_floor,
                       change=change / 100, confidence=confidence, skip=skip)
    if judged is None:
        if run_variance is not None:   # without it, `_unknown` blocks the row and says why
            noise_floor, note = _run_floor(run_variance, run_unit, noise_floor, confidence)
            pair.append(StatWarning(RUN_VARIANCE, note))
        return None, run_variance, run_shares, noise_floor
    if not run_unit:   # a test that cannot take it in: a wider floor
        noise_floor, _ = _run_floor(judged.variance, run_unit, noise_floor, confidence)
    weight = f" (prior d0 {judged.d0:.3g})" if judged.d0 > 0 else ""
    pair.append(StatWarning(RUN_VARIANCE, f"separate runs: {judged.variance.source}{weight} is part of the test"))
    return judged, judged.variance, (1.0, 1.0), noise_floor


def _blocked(sides: _Sides, change: float, test: Outcome, separate: StatWarning | None,
             pair: list[StatWarning], skip: frozenset[str] = frozenset(), room: float = 0.0) -> StatWarning | None:
    """The warning that keeps the row from a mark, if any (appended to ``pair`` with the others)."""
    if (change > 0 and test.ci_high < 0) or (change < 0 and test.ci_low > 0):
        pair.append(StatWarning(OPPOSITE_ESTIMATE, f"the centres' change ({change:+.2f}%) and the "
                                f"{test.interval} [{test.ci_low:+.2f}%, {test.ci_high:+.2f}%] point "
                                "opposite ways: outliers or skew move the centres; no direction is called"))
    base, new = sides.summaries
    blocked = unjudgeable(sides.a, sides.b, base.centre, new.centre, (_kinds(base), _kinds(new)), sides.step,
                          skip, room)
    if blocked is None:
        blocked = separate
    if blocked is not None:
        pair.append(blocked)
    return blocked


def _kinds(summary: Summary) -> frozenset[str]:
    return frozenset(w.kind for w in summary.warnings)


def _split(sides: _Sides, flags: tuple[str, ...] = (TREND, BIMODAL)) -> float:
    """`resolution.unsettled` of the row's sides (log scale)."""
    return unsettled((sides.a, sides.b), (_kinds(sides.summaries[0]), _kinds(sides.summaries[1])), flags)


def _bimodal(summary: Summary) -> bool:
    return any(w.kind == BIMODAL for w in summary.warnings)


def _unknown(variance: RunVariance | None) -> StatWarning | None:
    """Separate runs with no run-to-run variance at all: the row is not judged. (perflab's
    comparisons always give one, a default prior at least: this guards other callers.)"""
    if variance is not None:
        return None
    return StatWarning(RUN_VARIANCE, "separate runs: run-to-run variance unknown, and nothing inside one run "
                       "measures it; not judged ('perflab calibrate', or more runs of the same command, measures it)")


def _run_floor(variance: RunVariance, run_unit: bool, floor: float, confidence: float) -> tuple[float, str]:
    """(noise floor, warning) for separate runs whose run-to-run variance is known: a test
    whose unit is the run (``run_unit``) takes it in, the others' floor widens to its spread."""
    spread = 100.0 * math.sqrt(2 * variance.sigma2) * norm_ppf(0.5 + confidence / 2)
    what = (f"separate runs: run-to-run spread {variance.cov_pct:.2g}% (from {variance.source}, "
            f"{variance.runs} of them)")
    if run_unit:
        return floor, what + " is part of the test (the run is its unit)"
    wider = max(floor, spread / 100.0)
    return wider, what + f": changes below {100 * wider:.2g}% are not judged"


def decide(differences: Sequence[Difference], q: float = 0.05) -> list[Difference]:
    """Final verdicts for all rows of one report, controlling the FDR at `q` (Benjamini-Hochberg).

    BH runs over the rows of the test methods together (NaN p-values count, never
    reject); a row is better/worse only if it survives and its change lies outside ±noise
    floor, and only those rows are `significant`. Rule rows (mmtests, lkp) keep their
    rule's verdict: they have no p-value and the FDR does not apply to them.
    """
    tested = [i for i, d in enumerate(differences) if d.rule is None]
    fdr = benjamini_hochberg([differences[i].p_value for i in tested], q)
    result = list(differences)
    for i, rejected, q_value in zip(tested, fdr.rejected, fdr.adjusted):
        d = differences[i]
        verdict = _verdict(d.change_pct, d.ci_low, d.ci_high, 100.0 * d.noise_floor, bool(rejected), None, d.direction,
                           decidable=not d.min_p >= q and d.judgeable)
        result[i] = replace(d, q_value=float(q_value), verdict=verdict, significant=verdict.significant)
    return result
