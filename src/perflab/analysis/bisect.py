"""Find the first commit that changed a metric: git bisect with a paired sequential test per step.

This module keeps the search and the decisions; what it is asked is
`perflab.analysis.bisect_options`, the graph bookkeeping is `perflab.analysis.bisect_graph`,
measuring one commit is `perflab.analysis.bisect_measure`, the worktrees, builds, runs and
signals are `perflab.execute.bisect_runs` (your checkout is never touched), git is
`perflab.vcs`, and the result is a `perflab.model.report.bisect.BisectResult`.

1. The commits: every commit of good..bad, as `git bisect` takes them (``first_parent``:
   only the first-parent line; a search that ends on a merge then descends into the
   branch it merged, and the result names the path: the merge, then the commit in it).
2. The ends: good (old) and bad (new) are built and run in pairs until the robust paired
   t-test on logs says they differ (`bisect_measure`). If they never differ, or differ
   the other way than ``direction`` asks: stop and say so. The change they measure
   ("slower", "faster") names the answer: "first faster commit".
3. Each step probes git's choice (the suspect whose ancestors halve the suspects; a
   skipped commit makes it take the next best) and runs it in pairs with the ends until
   the sequential test calls it like old or like new, or the three-way test finds it like
   neither (significantly apart from both: between them, or beyond one). A commit like
   neither is said at the step; ``neither`` says what then: "continue" (between counts
   as new: the change has begun; beyond counts as the end it is past), "skip", or "stop".
   The stated confidence is for the whole result: each step's error rate is
   (1 - confidence) / ceil(log2 N) for N candidate commits.
4. Is the change all in one commit? The found commit and the one before it are measured
   to at least 4 x min_pairs pairs each (unless found between sooner; the one before,
   called new then, moves the answer back): when either is shown off its end (between,
   or its position FOLLOW_Z standard errors from it), or a probe of the search sat
   between, the change is gradual, and the commits before it (while shown past old) and
   after it (while shown short of new) are measured in order the same way; each one's
   share of the whole step is reported with its standard error, named material by
   `model.report.bisect.material` (a share still undecided is measured more first); the
   answer's first new commit is then the first carrier (`first_carrier`).
5. A commit whose build or run fails (any non-zero exit, 125 included) is skipped and
   named; if only skipped commits remain, the first new commit is one of them (as git says).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import replace

from perflab.analysis.bisect_graph import Graph, Suspects
from perflab.analysis.bisect_measure import EndFailed, Measurer, Probe, look_schedule
from perflab.analysis.bisect_options import BisectOptions, steps_for
from perflab.execute.bisect_record import BisectRecorder, StoredMetric
from perflab.execute.bisect_runs import METRICS, Bench, Skip, open_bench
from perflab.model.errors import UsageError
from perflab.model.records import Direction
from perflab.model.report.bisect import (
    BAD_END,
    BETWEEN,
    BISECT_METRICS,
    FOUND,
    GOOD_END,
    MATERIAL_LOOKS,
    MATERIAL_SHARE,
    MATERIAL_Z,
    NO_DIFFERENCE,
    OTHER_DIRECTION,
    PROBE,
    STOPPED,
    UNDECIDED,
    BisectResult,
    Commit,
    Share,
    StepTest,
    carriers_text,
    first_carrier,
    material,
    spread,
)
from perflab.stats.sequential import Call, EndsCheck
from perflab.vcs import check_range, commit_graph, describe_commit

__all__ = ["DIRECTIONS", "METRICS", "NEITHER_ACTIONS", "BisectOptions", "BisectResult", "Commit", "bisect",
           "check_options", "look_schedule", "steps_for"]

DIRECTIONS = ("any", "regression", "improvement")
NEITHER_ACTIONS = ("continue", "skip", "stop")
GRADUAL_MOST = 8   # commits measured after the first new one, following a gradual change
FOLLOW_Z = 1.645   # standard errors off an end that make a commit part of a spread change
SETTLE_RUNS = 4    # x --min-runs: pairs of a commit in a gradual change before it is called at the new end


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
    if options.direction not in DIRECTIONS:
        raise UsageError(f"unknown --direction {options.direction!r}; choose one of {', '.join(DIRECTIONS)}")
    if options.neither not in NEITHER_ACTIONS:
        raise UsageError(f"unknown --neither {options.neither!r}; choose one of {', '.join(NEITHER_ACTIONS)}")
    if len(set(options.terms)) != 2 or not all(t.strip() for t in options.terms):
        raise UsageError(f"--term-old and --term-new must be two different words, got {options.terms}")


def bisect(repo: str, good: str, bad: str, options: BisectOptions,
           progress: Callable[[str], None] = lambda line: None, recorder: BisectRecorder | None = None,
           ) -> BisectResult:
    """Bisect good..bad in `repo` (see the module doc). Raises UsageError for bad input.
    ``recorder``: stores every run as a sample of its commit's run (execute.bisect_record)."""
    check_options(options)
    good_sha, bad_sha = check_range(repo, good, bad)
    graph = Graph.of(describe_commit(repo, good_sha), commit_graph(repo, good_sha, bad_sha))
    with open_bench(repo, options, recorder) as bench:
        result = _Bisection(graph, bench, options, progress).run()
    if recorder is None or not recorder.runs:
        return result
    stored = tuple((sha, run_id) for sha, run_id in recorder.runs.items())
    return replace(result, label=recorder.label, stored=stored)


def stored_metric(options: BisectOptions) -> StoredMetric:
    """The metric bisect's runs are stored under: --metric's, or --metric-regex's figure."""
    if options.metric_regex:
        direction = Direction.HIGHER if options.higher_is_better else Direction.LOWER
        return StoredMetric("metric", "", direction, f"the run's --metric-regex {options.metric_regex!r}")
    return StoredMetric(options.metric, "s", Direction.LOWER, BISECT_METRICS[options.metric])


def change_words(ratio: float, options: BisectOptions) -> tuple[str, str]:
    """(what the ends measure: "slower", "faster", "higher", "lower"; "regression" or "improvement")."""
    rises = ratio > 1
    if options.metric_regex:
        better = rises == options.higher_is_better
        return ("higher" if rises else "lower"), ("improvement" if better else "regression")
    return ("slower" if rises else "faster"), ("regression" if rises else "improvement")


class _Bisection:
    def __init__(self, graph: Graph, bench: Bench, options: BisectOptions, progress: Callable[[str], None]):
        self.graph = graph
        self.options = options
        self.progress = progress
        self.test = options.test(len(graph.commits) - 1)
        seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**31)
        self.measure = Measurer(bench, options, self.test, seed, progress)
        self.measure.good = Probe(graph.commits[0], GOOD_END)
        self.measure.bad = Probe(graph.commits[-1], BAD_END)
        self.probes: dict[int, Probe] = {}
        self.change, self.verdict = "", ""
        self.ends: EndsCheck | None = None

    def result(self, outcome: str, message: str, first_bad: Commit | None = None,
               candidates: list[Commit] | None = None, path: list[int] | None = None,
               gradual: tuple[Share, ...] = ()) -> BisectResult:
        direction = Direction.HIGHER if self.options.higher_is_better else Direction.LOWER
        m = self.measure
        steps = tuple(m.step(p, self.ends, direction) for p in m.order)
        measured = [s.mean for s in steps if s.n]
        t = self.test
        return BisectResult(
            outcome=outcome, message=message, first_bad=first_bad, candidates=tuple(candidates or ()), steps=steps,
            ends=m.ends_summary(self.ends), runs=m.bench.runs, builds=m.bench.builds,
            commits=len(self.graph.commits) - 1, unit=m.unit,
            test=StepTest(alpha=t.alpha, beta=t.beta, min_n=t.min_n, max_n=t.max_n),
            confidence=self.options.confidence, seed=m.seed,
            paired=self.options.fixed_runs is None, runs_per_commit=self.options.fixed_runs,
            typical=measured[0] if measured else 0.0, warnings=tuple(m.warnings),
            first_parent=self.options.first_parent,
            path=tuple(self.graph.commits[i] for i in (path or [])), change=self.change, verdict=self.verdict,
            terms=self.options.terms, gradual=gradual, neither_test=m.neither_statement())

    def run(self) -> BisectResult:
        try:
            self.ends = self.measure.ends()
        except EndFailed as failed:
            return self.result(UNDECIDED, failed.message)
        if not self.ends.significant and not self.options.fixed_runs:
            return self.result(NO_DIFFERENCE, self.measure.no_difference(self.ends))
        self.change, self.verdict = change_words(self.ends.ratio, self.options)
        wanted = self.options.direction
        if wanted != "any" and wanted != self.verdict:
            return self.result(OTHER_DIRECTION, f"good and bad differ, but as {_a(self.verdict)} "
                               f"({self.change}, {self.measure.ends_text(self.ends)}), not the "
                               f"{wanted} --direction asks for")
        try:
            return self.search()
        except EndFailed as failed:
            return self.result(UNDECIDED, failed.message)

    def search(self) -> BisectResult:
        suspects = Suspects.start(self.graph, self.options.first_parent)
        path: list[int] = []
        while True:
            stopped = self.narrow(suspects)
            if stopped is not None:
                return stopped
            left = [i for i in suspects.members() if i != suspects.tip]
            if left:   # only skipped ones
                candidates = [self.graph.commits[i] for i in [*left, suspects.tip]]
                reasons = sorted({p.skipped.split(" (")[0] for p in self.probes.values() if p.skipped})
                return self.result(
                    UNDECIDED, f"could not decide: {len(left)} commits skipped ({', '.join(reasons)}); "
                    f"the first {self.change} commit is one of {len(candidates)}: "
                    + " ".join(c.short for c in candidates), candidates=candidates)
            inner = suspects.descend(suspects.tip) if self.options.first_parent else None
            if inner is None or inner.alive == 1 << suspects.tip:
                break
            self.progress(f"{self.graph.commits[suspects.tip].short} is a merge: descending into "
                          "the branch it merged")
            path.append(suspects.tip)
            suspects = inner
        found = self._back_to_first_new(suspects.tip)
        path = [*path, found] if self.options.first_parent else self.graph.path(found)
        first = self.graph.commits[found]
        gradual = self.follow_gradual(found)
        carrier = first_carrier(gradual)
        if carrier is not None and carrier.commit.index != found:  # the change's first material part
            found = carrier.commit.index
            path = [*path[:-1], found] if self.options.first_parent else self.graph.path(found)
            first = self.graph.commits[found]
        message = f"first {self.change} commit ({_a(self.verdict)}): {first.short} {first.subject}"
        if gradual:
            message += (f"\n  the change is gradual: {carriers_text(gradual)}" if spread(gradual) else
                        f"\n  the change is in one commit, to within a fifth: {carriers_text(gradual)}; "
                        "the other commits measured carry less than a fifth each")
        if len(path) > 1:
            message += "\n  " + "\n  ".join(
                f"{'merged by' if i < len(path) - 1 else 'the commit'} {self.graph.commits[j].short} "
                f"{self.graph.commits[j].subject}" for i, j in enumerate(path))
        return self.result(FOUND, message, first, path=path, gradual=gradual)

    def narrow(self, suspects: Suspects) -> BisectResult | None:
        """Probe until only the tip (and skipped commits) are left; a result when --neither stop stops."""
        while (index := suspects.next_probe()) is not None:
            probe = self.probe(index)
            if probe.skipped:
                suspects.skip(index)
                continue
            c = probe.classification
            assert c is not None
            if probe.distance is not None and probe.distance.neither:
                if self.options.neither == "stop":
                    return self.result(STOPPED, f"stopped at {probe.commit.short} {probe.commit.subject}: "
                                       f"like neither end ({probe.distance.neither})", probe.commit)
                if self.options.neither == "skip":
                    suspects.skip(index)
                    continue
            suspects.mark(index, c.call is Call.BAD)
        return None

    def probe(self, index: int) -> Probe:
        """Index's commit built and classified (once: a commit measured before is reused)."""
        if index in self.probes:
            return self.probes[index]
        probe = self.probes[index] = Probe(self.graph.commits[index], PROBE)
        try:
            self.measure.classify(probe, self.ends)  # type: ignore[arg-type]
        except Skip as why:
            probe.skipped = str(why)
            self.progress(f"skip {probe.commit.short} {probe.commit.subject}: {why}")
        return probe

    def follow_gradual(self, found: int) -> tuple[Share, ...]:
        """The commits the change is spread over, each with its share of the step. The found
        commit and the one before it are settled (more pairs, unless found between first:
        the old-or-new test does not ask whether a commit is all the way at its end); when
        either is shown off its end (`_off_end`), or a probe of the search sat between, the
        commits before it are measured back while they are shown past old and those after
        it on while they are shown short of new."""
        before = self._before(found)
        off = [self._off_end(found, new=True), self._off_end(before, new=False)]
        if not any(off) and not any(p.distance and p.distance.neither == BETWEEN for p in self.probes.values()):
            return ()
        back: list[int] = []
        while before is not None and len(back) < GRADUAL_MOST and self._off_end(before, new=False):
            back.insert(0, before)
            before = self._before(before)
        chain = [found] + [i for i in range(found + 1, len(self.graph.commits))
                           if self.graph.ancestors[i] >> found & 1][: GRADUAL_MOST - 1]
        # the first share starts where the commit before the chain was measured, not at 0: a
        # commit not shown past old may still sit part of the way (its part is then not named)
        start = self.probes.get(before) if before is not None else None
        members: list[Probe | None] = [start if start is not None and not start.skipped else None]
        for index in [*back, *chain]:
            probe = self.probe(index) if index != len(self.graph.commits) - 1 else None
            if probe is not None and probe.skipped:
                continue
            members.append(probe)
            if index >= found and not self._off_end(index, new=True):
                break
        if len(members) < 3:
            return ()
        shares = self._resolved(members, self.graph.commits[-1])
        self.progress("gradual change: " + ", ".join(f"{s.commit.short} {100 * s.share:.0f}%" for s in shares))
        return shares

    def _resolved(self, members: list[Probe | None], bad: Commit) -> tuple[Share, ...]:
        """The shares between consecutive members (None: an end), each share whose
        materiality is undecided (its interval holds MATERIAL_SHARE) measured more: its two
        commits' pairs doubled (up to max_pairs) before the next of MATERIAL_LOOKS looks."""
        for _ in range(MATERIAL_LOOKS - 1):
            shares = self._shares(members, bad)
            undecided = [k for k, s in enumerate(shares)
                         if not material(s) and s.share + MATERIAL_Z * s.se >= MATERIAL_SHARE]
            more = {id(p): p for k in undecided for p in members[k:k + 2]
                    if p is not None and len(p.values) < self.test.max_n}
            if not more:
                break
            for probe in more.values():
                self.measure.extend(probe, self.ends, 2 * len(probe.values))  # type: ignore[arg-type]
        return self._shares(members, bad)

    def _shares(self, members: list[Probe | None], bad: Commit) -> tuple[Share, ...]:
        """Each member after the first with its share: its position less the one before's."""
        out = []
        for k, probe in enumerate(members[1:], start=1):
            previous = members[k - 1]
            position = 1.0 if probe is None else probe.position
            before = 0.0 if previous is None else previous.position
            share = position - before
            error, error_before = (0.0 if p is None else self.measure.position_error(p, self.ends)
                                   for p in (probe, previous))
            out.append(Share(commit=bad if probe is None else probe.commit, position=position, share=share,
                             change_pct=self.measure.share_pct(share, self.ends),
                             se=self.measure.share_error(share, error, error_before, self.ends)))
        return tuple(out)

    def _back_to_first_new(self, found: int) -> int:
        """The search's answer, moved back while the commit before it, settled, is called
        like new after all (its search call, made on the fewest pairs, was wrong)."""
        while (before := self._before(found)) is not None:
            probe = self.probe(before)
            if probe.skipped:
                break
            self._settled(probe)
            c = probe.classification
            if c is None or c.call is not Call.BAD or (probe.distance and probe.distance.neither == BETWEEN):
                break
            self.progress(f"{probe.commit.short} settled as {self.options.terms[1]}: the first "
                          f"{self.change} commit is before {self.graph.commits[found].short}")
            found = before
        return found

    def _before(self, index: int) -> int | None:
        """The nearest ancestor of ``index`` in good..bad (None: only good is before it)."""
        return next((i for i in range(index - 1, 0, -1) if self.graph.ancestors[index] >> i & 1), None)

    def _settled(self, probe: Probe) -> Probe:
        if self.ends is not None:
            self.measure.settle(probe, self.ends, SETTLE_RUNS * self.options.min_pairs)
        return probe

    def _off_end(self, index: int | None, new: bool) -> bool:
        """The commit, measured and settled, is shown off the new end (``new``) or the old
        one: found between by the three-way test, or its position FOLLOW_Z standard errors
        from that end toward the other (a one-sided 5% test: a commit at the end is taken
        for part of a spread change, and its neighbour measured, at most 1 time in 20)."""
        if index is None or index == len(self.graph.commits) - 1:
            return False
        probe = self.probe(index)
        if probe.skipped:
            return False
        self._settled(probe)
        if probe.distance and probe.distance.neither == BETWEEN:
            return True
        away = 1.0 - probe.position if new else probe.position
        return bool(away >= FOLLOW_Z * self.measure.position_error(probe, self.ends))


def _a(word: str) -> str:
    """The word with its indefinite article."""
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word

