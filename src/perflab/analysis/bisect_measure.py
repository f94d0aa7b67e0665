"""Measuring for bisect: the ends in pairs, each probed commit against them, three ways.

Runs are made in pairs, the order inside each pair drawn from a seeded generator (the
seed is reported): on a busy machine the level drifts by more than a 5% step within
seconds, while two runs side by side keep their ratio (`perflab.stats.sequential`).

* The ends: good and bad in 10 pairs, then 20, 40 ... 160 in all, until the robust
  paired t-test on logs says they differ (alpha 0.01, Bonferroni over the looks).
* A probe: runs paired with the ends (good, bad, good, ...) until the sequential test
  calls it like old or like new, or gives up at ``max_pairs`` and calls it by the closer
  end (low confidence). A probe whose estimate sits more than a quarter of the step away
  from both ends is sampled to 3 pairs against each end before it is called. From then
  on, at every look the three-way test (`stats.sequential.ends_distance`, on robust
  centres: one slow run among 3 is clipped) asks whether it is significantly apart from
  both ends, at alpha / max_pairs a look
  (Bonferroni over the looks, so a commit like one end is called neither with at most the
  step's alpha); if so it is like neither: between the ends (counted as new: the change
  has begun) or beyond one (counted as that end).
* ``fixed_runs``: the classic peer kept in bench/bisect_runs: every commit run N times, no
  pairs, no check that the ends differ, called by the closer mean log.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from perflab.analysis.bisect_options import BisectOptions
from perflab.execute.bisect_runs import Bench, Skip
from perflab.model.records import Direction
from perflab.model.report.bisect import BAD_END, BEYOND_OLD, PROBE, BisectStep, Commit, EndsSummary
from perflab.model.verdicts import StatWarning, WarningSide, oriented
from perflab.stats.sequential import (
    HUBER_EFFICIENCY,
    Call,
    Classification,
    EndsCheck,
    EndsDistance,
    SequentialTest,
    ends_distance,
    position_error,
)

SMALL_STEP = "small-step"   # StatWarning kind: the step is small for the noise
NEITHER_SIDE = 3   # pairs against each end before the three-way test (a robust centre needs 3)
NEAR_END = 0.25    # a probe within this share of the step of an end is not sampled more for it


@dataclass
class Probe:
    """One commit that was built (and maybe run): its values, its references, its call."""

    commit: Commit
    role: str                       # GOOD_END, BAD_END, PROBE
    values: list[float] = field(default_factory=list)
    references: list[float] = field(default_factory=list)        # the end's run beside each value
    reference_is_bad: list[bool] = field(default_factory=list)
    classification: Classification | None = None
    distance: EndsDistance | None = None
    skipped: str | None = None      # why, when it was skipped

    @property
    def position(self) -> float:
        """Where it sits: 0 = at old, 1 = at new (NaN before a call)."""
        return self.classification.position if self.classification else math.nan


class EndFailed(Exception):
    """A run of good or bad failed: the bisect cannot go on."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def look_schedule(first: int, most: int) -> list[int]:
    """Pairs of the ends at each look: first, doubled until most (which is the last)."""
    looks = [first]
    while looks[-1] < most:
        looks.append(min(most, 2 * looks[-1]))
    return looks


class Measurer:
    """Builds and runs commits for one bisect; keeps every probe in the order taken up."""

    good: Probe
    bad: Probe

    def __init__(self, bench: Bench, options: BisectOptions, test: SequentialTest, seed: int,
                 progress: Callable[[str], None]):
        self.bench = bench
        self.options = options
        self.test = test
        self.seed = seed
        self.pair_order = random.Random(seed)
        self.progress = progress
        self.order: list[Probe] = []
        self.warnings: list[StatWarning] = []
        self.unit = "" if options.metric_regex else "s"

    @property
    def neither_alpha(self) -> float:
        return self.test.alpha / self.test.max_n

    def neither_statement(self) -> str:
        if self.options.fixed_runs:
            return ""
        return (f"like neither end: the probe's runs against good and against bad each differ "
                f"(robust t-tests on log ratios, each p < {self.neither_alpha:.2g} at a look: the step's "
                f"alpha over {self.test.max_n} looks; a commit settled to find the extent of a change "
                f"once more at the step's alpha, {self.test.alpha:.2g})")

    def _end_failed(self, end: Probe, why: Skip) -> EndFailed:
        end.skipped = str(why)
        return EndFailed(f"could not decide: the {end.role} {end.commit.short} cannot be measured: {why}")

    def _run_end(self, end: Probe) -> float:
        """One run of an end; its failure ends the bisect (raises EndFailed)."""
        try:
            return self.bench.sample(end.commit.sha)
        except Skip as why:
            raise self._end_failed(end, why) from None

    def _pair(self, first: Callable[[], float], second: Callable[[], float]) -> tuple[float, float]:
        """Both runs, side by side, in a random order."""
        if self.pair_order.random() < 0.5:
            a = first()
            return a, second()
        b = second()
        return first(), b

    def ends(self) -> EndsCheck:
        """Both ends built and sampled until they differ (or the looks run out)."""
        o = self.options
        self.order += [self.good, self.bad]
        for end in (self.good, self.bad):
            try:
                self.bench.build(end.commit.sha)
            except Skip as why:
                raise self._end_failed(end, why) from None
        fixed = o.fixed_runs
        looks = [fixed] if fixed else look_schedule(o.end_pairs, o.max_end_pairs)
        for target in looks:
            while len(self.good.values) < target:
                if fixed:  # the classic peer: all of good, then all of bad
                    self.good.values.append(self._run_end(self.good))
                    continue
                g, b = self._pair(lambda: self._run_end(self.good), lambda: self._run_end(self.bad))
                self.good.values.append(g)
                self.bad.values.append(b)
            while len(self.bad.values) < target:
                self.bad.values.append(self._run_end(self.bad))
            check = self.test.check_ends(self.good.values, self.bad.values, alpha=o.ends_alpha,
                                         looks=len(looks))
            self.progress(f"ends after {target} {'runs' if fixed else 'pairs'} each: bad/good = "
                          f"{check.ratio:.4f}, p = {check.p_value:.2g}")
            if check.significant:
                break
        if check.significant and not fixed and not check.decidable:
            need = self.test.expected_pairs(check.delta, check.scale)
            self.warnings.append(StatWarning(
                SMALL_STEP, f"the step ({self.ends_text(check)}) is small for the noise "
                f"(sd of a pair's log ratio {check.scale:.3f}): a step needs about "
                f"{need:.0f} runs on average, --max-runs is {self.test.max_n}; "
                "calls at the maximum are marked '?'", WarningSide.PAIR))
        return check

    def ends_text(self, check: EndsCheck) -> str:
        """bad against good in the house convention: % with + = better."""
        return f"{self.oriented_pct(check.ratio):+.2f}%, + = better"

    def oriented_pct(self, ratio: float) -> float:
        return better_pct(ratio, self.options.higher_is_better)

    def no_difference(self, check: EndsCheck) -> str:
        return (f"good and bad do not differ significantly: bad against good {self.ends_text(check)} "
                f"(bad/good = {check.ratio:.4f}), robust paired t-test on logs p = {check.p_value:.3g} "
                f"(needs < {check.alpha_per_look:.2g}) after {check.pairs} pairs")

    def ends_summary(self, check: EndsCheck | None) -> EndsSummary | None:
        return None if check is None else EndsSummary(significant=check.significant, p_value=check.p_value,
                                                      alpha_per_look=check.alpha_per_look,
                                                      ratio=check.ratio, pairs=check.pairs)

    def share_pct(self, share: float, check: EndsCheck | None) -> float:
        """A share of the step (in units of the whole) as a % change, + = better."""
        if check is None or not math.isfinite(share):
            return math.nan
        return self.oriented_pct(math.exp(share * check.delta))

    def position_error(self, probe: Probe, ends: EndsCheck | None) -> float:
        """The standard error of the probe's position (NaN when unknown)."""
        if ends is None or self.options.fixed_runs is not None:
            return math.nan
        return position_error(ends, probe.values, probe.references, probe.reference_is_bad)

    def share_error(self, share: float, error: float, error_before: float, ends: EndsCheck | None) -> float:
        """A share's standard error: its two positions' (independent pairs) and the step's
        own, which scales the share."""
        if ends is None or not math.isfinite(ends.delta) or ends.delta == 0:
            return math.nan
        step = ends.scale / (abs(ends.delta) * math.sqrt(ends.pairs * HUBER_EFFICIENCY))
        return math.sqrt(error ** 2 + error_before ** 2 + (share * step) ** 2)

    def classify(self, probe: Probe, ends: EndsCheck) -> None:
        """Build the probe and run it until it is called (raises Skip when it cannot be measured)."""
        self.order.append(probe)
        self.bench.build(probe.commit.sha)
        fixed = self.options.fixed_runs
        if fixed is not None:
            while len(probe.values) < fixed:
                probe.values.append(self.bench.sample(probe.commit.sha))
            probe.classification = _closer(self.good.values, self.bad.values, probe.values)
        else:
            self._sequential(probe, ends)
        c = probe.classification
        assert c is not None
        neither = f", like neither end: {probe.distance.neither}" if probe.distance and probe.distance.neither else ""
        self.progress(f"{probe.commit.short} is {self.options.terms[c.call is Call.BAD]} (n={c.n}, "
                      f"{100 * c.confidence:.2f}%{', low confidence' if c.low_confidence else ''}{neither}) "
                      f"{probe.commit.subject}")

    def settle(self, probe: Probe, ends: EndsCheck, pairs: int) -> None:
        """More pairs of a probe called like new or old, up to ``pairs`` in all, unless the
        three-way test finds it between first, then the three-way test once more on them at
        the step's alpha: a gradual change asks whether a commit is all the way at its end,
        which the old-or-new test does not ask."""
        if self.options.fixed_runs is not None or (probe.distance and probe.distance.neither):
            return
        if len(probe.values) < min(pairs, self.test.max_n):
            self._sequential(probe, ends, settle=pairs)
        if probe.distance and probe.distance.neither:
            return
        # the settled pairs once more at the step's own alpha: one look at a fixed number of
        # pairs, not one of max_pairs looks (each at alpha / max_pairs) as in the search
        settled = ends_distance(ends, probe.values, probe.references, probe.reference_is_bad, self.test.alpha)
        if settled.neither:
            c = probe.classification
            assert c is not None
            probe.distance = settled
            call = Call.GOOD if settled.neither == BEYOND_OLD else Call.BAD
            probe.classification = Classification(call, c.llr, c.confidence, c.n, False, c.position)

    def extend(self, probe: Probe, ends: EndsCheck, pairs: int) -> None:
        """More pairs of a called probe, up to ``pairs`` in all (at most max_pairs), to narrow
        its position: its call stays, its position is re-estimated on all its pairs."""
        c = probe.classification
        if c is None or self.options.fixed_runs is not None:
            return
        while len(probe.values) < min(pairs, self.test.max_n):
            self._one_pair(probe)
        now = self.test.classify(ends, probe.values, probe.references, probe.reference_is_bad)
        probe.classification = Classification(c.call, now.llr, c.confidence, now.n, c.low_confidence, now.position)

    def _one_pair(self, probe: Probe) -> None:
        end = self.bad if len(probe.values) % 2 else self.good   # alternate: good, bad, good...
        value, reference = self._pair(partial(self.bench.sample, probe.commit.sha), partial(self._run_end, end))
        probe.values.append(value)
        probe.references.append(reference)
        probe.reference_is_bad.append(end is self.bad)

    def _sequential(self, probe: Probe, ends: EndsCheck, settle: int = 0) -> None:
        while True:
            self._one_pair(probe)
            c = self.test.classify(ends, probe.values, probe.references, probe.reference_is_bad)
            against_bad = sum(probe.reference_is_bad)
            sides = min(against_bad, len(probe.values) - against_bad)
            if sides >= NEITHER_SIDE:
                probe.distance = ends_distance(ends, probe.values, probe.references, probe.reference_is_bad,
                                               self.neither_alpha)
                if probe.distance.neither:
                    call = Call.GOOD if probe.distance.neither == BEYOND_OLD else Call.BAD
                    probe.classification = Classification(call, c.llr, c.confidence, c.n, False, c.position)
                    return
            if c.call is Call.MORE:
                continue
            if c.call in (Call.BAD, Call.GOOD) and c.n < min(settle, self.test.max_n):
                continue
            if sides < NEITHER_SIDE and _away_from_both(c.position) and c.n < self.test.max_n:
                continue   # look again with robust centres on both sides before calling it
            probe.classification = c
            return

    def step(self, probe: Probe, ends: EndsCheck | None, direction: Direction) -> BisectStep:
        """A probe as a step of the result, with its numbers; changes in % with + = better."""
        values = np.asarray(probe.values, dtype=float)
        step_size = ends.delta if ends is not None else math.nan
        c = probe.classification
        vs_good = math.nan
        if probe.role == BAD_END and ends is not None:
            vs_good = 100 * (ends.ratio - 1)
        elif probe.role == PROBE and c is not None and math.isfinite(c.position) and math.isfinite(step_size):
            vs_good = 100 * math.expm1(c.position * step_size)
        called = c is not None and probe.role == PROBE and not probe.skipped
        d = probe.distance
        return BisectStep(
            commit=probe.commit, role=probe.role, n=int(values.size),
            mean=float(values.mean()) if values.size else math.nan,
            stddev=float(values.std(ddof=1)) if values.size > 1 else math.nan,
            vs_good_pct=oriented(vs_good, direction) + 0.0 if not probe.skipped else math.nan,  # no -0.00%
            call=self.options.terms[c.call is Call.BAD] if called and c is not None else None,
            low_confidence=bool(called and c is not None and c.low_confidence),
            confidence=c.confidence if called and c is not None else math.nan,
            skipped=probe.skipped,
            neither=d.neither if d is not None else None,
            vs_old_pct=oriented(100 * math.expm1(d.vs_old), direction) + 0.0 if d is not None else math.nan,
            vs_new_pct=oriented(100 * math.expm1(d.vs_new), direction) + 0.0 if d is not None else math.nan,
            position=c.position if called and c is not None else math.nan)


def better_pct(ratio: float, higher_is_better: bool) -> float:
    """new/old as a % change in the one sign convention (+ = better)."""
    return oriented(100 * (ratio - 1), Direction.HIGHER if higher_is_better else Direction.LOWER) + 0.0


def _away_from_both(position: float) -> bool:
    """The estimate is beyond either end or well between them (NaN: not known to be)."""
    return math.isfinite(position) and not (abs(position) <= NEAR_END or abs(position - 1) <= NEAR_END)


def _closer(good: list[float], bad: list[float], values: list[float]) -> Classification:
    """The classic fixed-N call: the end whose mean log is closer."""
    g, b, x = (float(np.mean(np.log(v))) for v in (good, bad, values))
    call = Call.BAD if abs(x - b) < abs(x - g) else Call.GOOD
    position = (x - g) / (b - g) if b != g else math.nan
    return Classification(call, math.nan, math.nan, len(values), False, position)


__all__ = ["EndFailed", "Measurer", "Probe", "better_pct", "look_schedule"]
