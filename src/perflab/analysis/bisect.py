"""Find the first commit that changed a metric: git bisect with a paired sequential test per step.

This module keeps the search and the decisions; the worktrees, builds, runs and signals
are `perflab.execute.bisect_runs` (your checkout is never touched), git is `perflab.vcs`,
and the result is a `perflab.model.report.bisect.BisectResult`.

Runs are made in pairs, the order inside each pair drawn from a seeded generator
(the seed is reported): on a busy machine the level drifts by more than a 5% step
within seconds, while two runs side by side keep their ratio
(`perflab.stats.sequential` has the model).

1. The ends: good and bad are built and run in 10 pairs, then 20, 40 ... 160 in all,
   until the robust paired t-test on logs says they differ (alpha 0.01, Bonferroni over
   the looks). If they never differ: stop and say so. If a probe at either end is
   expected to need more than half of ``max_pairs``, the result warns that calls may be
   forced.
2. Each step probes the untested commit nearest the middle of the remaining range
   (git's choice; a skipped commit makes it try the next nearest), builds it, and runs
   it in pairs with the ends (good, bad, good, ...) until the sequential test calls it
   like-good or like-bad, or gives up at ``max_pairs`` and calls it by the closer side
   (low confidence). The stated confidence is for the whole result: each step's
   error rate is (1 - confidence) / ceil(log2 N) for N candidate commits (Bonferroni
   over the steps of a bisect without skips).
3. A commit whose build or run fails (any non-zero exit, 125 included) is skipped and
   named in the result; if only skipped commits remain between the last good and the
   first bad, the first bad is one of them (as git says).

``fixed_runs`` turns this into the classic bisect kept as the peer in bench/bisect_runs:
each end run ``fixed_runs`` times, then every probe run ``fixed_runs`` times, no pairs,
no check that the ends differ, and each probe called by the end whose mean log is closer.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from perflab.execute.bisect_runs import METRICS, Bench, BenchSpec, Skip, open_bench
from perflab.model.errors import UsageError
from perflab.model.records import Direction
from perflab.model.report.bisect import (
    BAD_END,
    FOUND,
    GOOD_END,
    NO_DIFFERENCE,
    PROBE,
    UNDECIDED,
    BisectResult,
    BisectStep,
    Commit,
    EndsSummary,
    StepTest,
)
from perflab.model.verdicts import StatWarning, WarningSide
from perflab.stats.changepoints import oriented
from perflab.stats.sequential import Call, Classification, EndsCheck, SequentialTest
from perflab.vcs import first_parent_range

__all__ = ["METRICS", "BisectOptions", "BisectResult", "Commit", "bisect", "check_options", "commit_range",
           "look_schedule", "next_probe", "steps_for"]

SMALL_STEP = "small-step"   # StatWarning kind: the step is small for the noise


@dataclass
class Probe:
    """One commit that was built (and maybe run): its values, its references, its call."""

    commit: Commit
    role: str                       # GOOD_END, BAD_END, PROBE
    values: list[float] = field(default_factory=list)
    references: list[float] = field(default_factory=list)        # the end's run beside each value
    reference_is_bad: list[bool] = field(default_factory=list)
    classification: Classification | None = None
    skipped: str | None = None      # why, when it was skipped

    @property
    def worktree(self) -> str:
        """The execute.bisect_runs role whose worktree builds it."""
        return {GOOD_END: "good", BAD_END: "bad"}.get(self.role, "probe")


@dataclass(frozen=True)
class BisectOptions:
    build: str
    run: str
    metric: str = "time"
    metric_regex: str | None = None
    higher_is_better: bool = False  # of --metric-regex's figure (times are lower-is-better)
    timeout: float | None = None
    confidence: float = 0.99   # of the result: split over the steps
    min_pairs: int = 3
    max_pairs: int = 100
    end_pairs: int = 10        # pairs of the ends at the first look (the noise scale needs them); doubled
    max_end_pairs: int = 160
    ends_alpha: float = 0.01
    seed: int | None = None    # of the order inside pairs; None: drawn and reported
    fixed_runs: int | None = None  # the classic peer: N unpaired runs per commit, closer end wins

    def test(self, candidates: int) -> SequentialTest:
        """The per-step test: the result's error rate split over ceil(log2 N) steps."""
        error = (1.0 - self.confidence) / steps_for(candidates)
        return SequentialTest(error, error, self.min_pairs, self.max_pairs)

    def bench(self) -> BenchSpec:
        return BenchSpec(self.build, self.run, self.metric, self.metric_regex, self.timeout)


def look_schedule(first: int, most: int) -> list[int]:
    """Pairs of the ends at each look: first, doubled until most (which is the last)."""
    looks = [first]
    while looks[-1] < most:
        looks.append(min(most, 2 * looks[-1]))
    return looks


def steps_for(candidates: int) -> int:
    """Steps of a bisect over ``candidates`` commits (the first bad is one of them)."""
    return max(1, math.ceil(math.log2(max(candidates, 2))))


def commit_range(repo: str, good: str, bad: str) -> list[Commit]:
    """good, then every first-parent commit of good..bad, oldest first (bad last)."""
    return [Commit(sha, subject, i) for i, (sha, subject) in enumerate(first_parent_range(repo, good, bad))]


# -- choosing -----------------------------------------------------------------------------
def next_probe(low: int, high: int, excluded: set[int]) -> int | None:
    """The commit index between low and high (exclusive) nearest their middle, not excluded.

    Ties go to the lower index first, as git's midpoint does; None when none is left.
    """
    middle = (low + high) // 2
    for distance in range(high - low):
        for index in (middle - distance, middle + distance):
            if low < index < high and index not in excluded:
                return index
    return None


# -- the driver ---------------------------------------------------------------------------
def check_options(options: BisectOptions) -> None:
    """Every option a user can get wrong, before git or a build runs."""
    if options.metric not in METRICS:
        raise UsageError(f"unknown --metric {options.metric!r}; choose one of {', '.join(METRICS)}")
    if options.metric_regex:
        try:
            re.compile(options.metric_regex)
        except re.error as error:
            raise UsageError(f"bad --metric-regex {options.metric_regex!r}: {error}") from None
    if not 0.5 < options.confidence < 1:
        raise UsageError(f"--confidence must be between 0.5 and 1, got {options.confidence}")
    if not 1 <= options.min_pairs <= options.max_pairs:
        raise UsageError(f"need 1 <= --min-runs <= --max-runs, got {options.min_pairs} and {options.max_pairs}")
    if options.timeout is not None and options.timeout <= 0:
        raise UsageError(f"--timeout must be positive, got {options.timeout}")


def bisect(repo: str, good: str, bad: str, options: BisectOptions,
           progress: Callable[[str], None] = lambda line: None) -> BisectResult:
    """Bisect good..bad in `repo` (see the module doc). Raises UsageError for bad input."""
    check_options(options)
    commits = commit_range(repo, good, bad)
    with open_bench(repo, commits[0].sha, options.bench()) as bench:
        return _Bisection(commits, bench, options, progress).run()


class _Bisection:
    def __init__(self, commits: list[Commit], bench: Bench, options: BisectOptions,
                 progress: Callable[[str], None]):
        self.commits = commits
        self.bench = bench
        self.options = options
        self.test = options.test(len(commits) - 1)
        self.progress = progress
        self.probes: list[Probe] = []
        self.unit = "" if options.metric_regex else "s"
        self.seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**31)
        self.order = random.Random(self.seed)
        self.good = Probe(commits[0], GOOD_END)
        self.bad = Probe(commits[-1], BAD_END)
        self.warnings: list[StatWarning] = []

    def result(self, outcome: str, message: str, first_bad: Commit | None = None,
               candidates: list[Commit] | None = None, ends: EndsCheck | None = None) -> BisectResult:
        direction = Direction.HIGHER if self.options.higher_is_better else Direction.LOWER
        steps = tuple(_step(p, ends, direction) for p in self.probes)
        measured = [s.mean for s in steps if s.n]
        t = self.test
        return BisectResult(
            outcome, message, first_bad, tuple(candidates or ()), steps,
            None if ends is None else EndsSummary(ends.significant, ends.p_value, ends.alpha_per_look,
                                                  ends.ratio, ends.pairs),
            self.bench.runs, self.bench.builds, len(self.commits) - 1, self.unit,
            StepTest(t.alpha, t.beta, t.min_n, t.max_n), self.options.confidence, self.seed,
            self.options.fixed_runs is None, self.options.fixed_runs, measured[0] if measured else 0.0,
            tuple(self.warnings))

    def run(self) -> BisectResult:
        self.probes += [self.good, self.bad]
        for end, role in ((self.good, "good"), (self.bad, "bad")):
            try:
                self.bench.build(role, end.commit.sha)
            except Skip as why:
                return self._end_failed(end, why)
        try:
            ends = self._sample_ends()
        except _EndFailed as failed:
            return failed.result
        if isinstance(ends, BisectResult):
            return ends
        low, high = 0, len(self.commits) - 1
        skipped: set[int] = set()
        while True:
            index = next_probe(low, high, skipped)
            if index is None:
                break
            probe = Probe(self.commits[index], PROBE)
            self.probes.append(probe)
            try:
                self.bench.build(probe.worktree, probe.commit.sha)
                self._classify(probe, ends)
            except Skip as why:
                probe.skipped = str(why)
                skipped.add(index)
                self.progress(f"skip {probe.commit.short} {probe.commit.subject}: {why}")
                continue
            except _EndFailed as failed:
                return failed.result
            c = probe.classification
            assert c is not None
            self.progress(f"{probe.commit.short} is {c.call.value} (n={c.n}, {100 * c.confidence:.2f}%"
                          f"{', low confidence' if c.low_confidence else ''}) {probe.commit.subject}")
            if c.call is Call.BAD:
                high = index
            else:
                low = index
        if high - low == 1:
            first = self.commits[high]
            return self.result(FOUND, f"first bad commit: {first.short} {first.subject}", first, ends=ends)
        candidates = self.commits[low + 1: high + 1]
        reasons = sorted({p.skipped.split(" (")[0] for p in self.probes if p.skipped})
        return self.result(
            UNDECIDED, f"could not decide: {len(skipped)} commits skipped ({', '.join(reasons)}); "
            f"the first bad commit is one of {len(candidates)}: "
            + " ".join(c.short for c in candidates), candidates=candidates, ends=ends)

    def _end_failed(self, end: Probe, why: Skip) -> BisectResult:
        end.skipped = str(why)
        return self.result(UNDECIDED, f"could not decide: the {end.role} {end.commit.short} "
                           f"cannot be measured: {why}")

    def _run_end(self, end: Probe) -> float:
        """One run of an end; its failure ends the bisect (raises _EndFailed)."""
        try:
            return self.bench.sample(end.worktree, end.commit.sha)
        except Skip as why:
            raise _EndFailed(self._end_failed(end, why)) from None

    def _pair(self, first: Callable[[], float], second: Callable[[], float]) -> tuple[float, float]:
        """Both runs, side by side, in a random order."""
        if self.order.random() < 0.5:
            a = first()
            return a, second()
        b = second()
        return first(), b

    def _sample_ends(self) -> EndsCheck | BisectResult:
        o = self.options
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
            self.progress(f"ends after {target} {'runs' if fixed else 'pairs'} each: bad/good = {check.ratio:.4f}, "
                          f"p = {check.p_value:.2g}")
            if check.significant:
                break
        if not check.significant and not fixed:  # the classic peer goes on regardless
            change = 100 * (check.ratio - 1)
            return self.result(
                NO_DIFFERENCE, f"good and bad do not differ significantly: bad/good = {check.ratio:.4f} "
                f"({change:+.2f}%), robust paired t-test on logs p = {check.p_value:.3g} "
                f"(needs < {check.alpha_per_look:.2g}) after {check.pairs} pairs", ends=check)
        if not fixed and not check.decidable:
            need = self.test.expected_pairs(check.delta, check.scale)
            self.warnings.append(StatWarning(
                SMALL_STEP, f"the step ({100 * (check.ratio - 1):+.2f}%) is small for the noise "
                f"(sd of a pair's log ratio {check.scale:.3f}): a step needs about "
                f"{need:.0f} runs on average, --max-runs is {self.test.max_n}; "
                "calls at the maximum are marked '?'", WarningSide.PAIR))
        return check

    def _classify(self, probe: Probe, ends: EndsCheck) -> None:
        fixed = self.options.fixed_runs
        if fixed is not None:
            while len(probe.values) < fixed:
                probe.values.append(self.bench.sample(probe.worktree, probe.commit.sha))
            probe.classification = _closer(self.good.values, self.bad.values, probe.values)
            return
        while True:
            end = self.bad if len(probe.values) % 2 else self.good   # alternate: good, bad, good...
            value, reference = self._pair(partial(self.bench.sample, probe.worktree, probe.commit.sha),
                                          partial(self._run_end, end))
            probe.values.append(value)
            probe.references.append(reference)
            probe.reference_is_bad.append(end is self.bad)
            c = self.test.classify(ends, probe.values, probe.references, probe.reference_is_bad)
            if c.call is not Call.MORE:
                probe.classification = c
                return


class _EndFailed(Exception):
    """A run of good or bad failed: the bisect cannot go on (carries the result)."""

    def __init__(self, result: BisectResult):
        super().__init__(result.message)
        self.result = result


def _closer(good: list[float], bad: list[float], values: list[float]) -> Classification:
    """The classic fixed-N call: the end whose mean log is closer."""
    g, b, x = (float(np.mean(np.log(v))) for v in (good, bad, values))
    call = Call.BAD if abs(x - b) < abs(x - g) else Call.GOOD
    position = (x - g) / (b - g) if b != g else math.nan
    return Classification(call, math.nan, math.nan, len(values), False, position)


def _step(probe: Probe, ends: EndsCheck | None, direction: Direction) -> BisectStep:
    """A probe as a step of the result, with its numbers; the change against good is in %
    with positive = better, as compare prints it."""
    values = np.asarray(probe.values, dtype=float)
    step_size = math.log(ends.ratio) if ends is not None and ends.ratio > 0 else math.nan
    c = probe.classification
    vs_good = math.nan
    if probe.role == BAD_END and ends is not None and math.isfinite(step_size):
        vs_good = 100 * (ends.ratio - 1)
    elif probe.role == PROBE and c is not None and math.isfinite(c.position) and math.isfinite(step_size):
        vs_good = 100 * math.expm1(c.position * step_size)
    called = c is not None and probe.role == PROBE and not probe.skipped
    return BisectStep(
        commit=probe.commit, role=probe.role, n=int(values.size),
        mean=float(values.mean()) if values.size else math.nan,
        stddev=float(values.std(ddof=1)) if values.size > 1 else math.nan,
        vs_good_pct=oriented(vs_good, direction) + 0.0 if not probe.skipped else math.nan,  # no -0.00%
        call=c.call.value if called and c is not None else None,
        low_confidence=bool(called and c is not None and c.low_confidence),
        confidence=c.confidence if called and c is not None else math.nan,
        skipped=probe.skipped)
