"""Find the first commit that changed a metric: git bisect with a paired sequential test per step.

The user's checkout is never touched: good, bad and the probed commit are each built in
a detached git worktree of their own in a temporary directory (so runs of the three can
alternate without rebuilding), removed at the end (also on Ctrl-C or SIGTERM).

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
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from perflab.execute.identity import git
from perflab.model.errors import UsageError
from perflab.stats.sequential import Call, Classification, EndsCheck, SequentialTest

SHELL = "/bin/sh"
METRICS = ("time", "user", "system", "cpu")  # cpu = user + system


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    index: int  # 0 = good, len-1 = bad

    @property
    def short(self) -> str:
        return self.sha[:12]


@dataclass
class Probe:
    """One commit that was built (and maybe run): its values, its references, its call."""

    commit: Commit
    role: str                       # "good end", "bad end", "probe"
    values: list[float] = field(default_factory=list)
    references: list[float] = field(default_factory=list)        # the end's run beside each value
    reference_is_bad: list[bool] = field(default_factory=list)
    classification: Classification | None = None
    skipped: str | None = None      # why, when it was skipped


@dataclass(frozen=True)
class BisectOptions:
    build: str
    run: str
    metric: str = "time"
    metric_regex: str | None = None
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


def look_schedule(first: int, most: int) -> list[int]:
    """Pairs of the ends at each look: first, doubled until most (which is the last)."""
    looks = [first]
    while looks[-1] < most:
        looks.append(min(most, 2 * looks[-1]))
    return looks


def steps_for(candidates: int) -> int:
    """Steps of a bisect over ``candidates`` commits (the first bad is one of them)."""
    return max(1, math.ceil(math.log2(max(candidates, 2))))


@dataclass
class BisectResult:
    outcome: str                        # "found", "no difference", "undecided"
    message: str
    first_bad: Commit | None
    candidates: list[Commit]            # when undecided: the first bad is one of these
    probes: list[Probe]
    ends: EndsCheck | None
    runs: int                           # benchmark runs spent (probes and references)
    builds: int
    commits: int                        # commits in good..bad
    unit: str
    test: SequentialTest
    confidence: float                   # stated for the whole result
    seed: int
    paired: bool                        # False for the classic fixed-runs peer
    warnings: list[str] = field(default_factory=list)

    @property
    def skipped(self) -> list[Probe]:
        return [p for p in self.probes if p.skipped]


class _Skip(Exception):
    """This commit cannot be measured: its build or a run failed."""


# -- git ----------------------------------------------------------------------------------
def _git(repo: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """git in ``repo``; with ``check`` a failure is the user's (a bad ref, not a repository)."""
    result = git(repo, *args)
    if check and result.returncode != 0:
        raise UsageError(f"git {' '.join(args)} failed in {repo}: {_last_line(result.stderr)}")
    return result


def _resolve(repo: str, ref: str, which: str) -> str:
    result = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    if result.returncode != 0 or not result.stdout.strip():
        raise UsageError(f"--{which} {ref!r}: no such commit in {repo}")
    return result.stdout.strip()


def commit_range(repo: str, good: str, bad: str) -> list[Commit]:
    """good, then every first-parent commit of good..bad, oldest first (bad last)."""
    if not os.path.isdir(repo):
        raise UsageError(f"--repo {repo}: no such directory")
    if _git(repo, "rev-parse", "--git-dir", check=False).returncode != 0:
        raise UsageError(f"--repo {repo}: not a git repository")
    good_sha, bad_sha = _resolve(repo, good, "good"), _resolve(repo, bad, "bad")
    if good_sha == bad_sha:
        raise UsageError(f"--good and --bad are the same commit ({good_sha[:12]})")
    if _git(repo, "merge-base", "--is-ancestor", good_sha, bad_sha, check=False).returncode != 0:
        raise UsageError(f"--good {good} is not an ancestor of --bad {bad}",
                         hint="bisect needs good to come before bad in the history")
    listing = _git(repo, "log", "--first-parent", "--reverse", "--format=%H %s",
                   f"{good_sha}..{bad_sha}").stdout.splitlines()
    shas = [line.split(" ", 1) for line in listing]
    if not shas or shas[-1][0] != bad_sha:
        raise UsageError(f"--bad {bad} is not on the first-parent line from --good {good}")
    good_subject = _git(repo, "log", "-1", "--format=%s", good_sha).stdout.strip()
    commits = [Commit(good_sha, good_subject, 0)]
    commits += [Commit(sha, subject[0] if subject else "", i + 1)
                for i, (sha, *subject) in enumerate(shas)]
    return commits


ROLES = ("good", "bad", "probe")   # one worktree (and one build) each


class _Worktrees:
    """Detached worktrees of `repo`, one per role, in a temporary directory removed on exit."""

    def __init__(self, repo: str, start: str):
        self.repo = repo
        self.start = start
        self.parent = tempfile.mkdtemp(prefix="perflab-bisect-")
        self.paths = {role: os.path.join(self.parent, role) for role in ROLES}

    def __enter__(self) -> "_Worktrees":
        try:
            for path in self.paths.values():
                _git(self.repo, "worktree", "add", "--detach", "--quiet", path, self.start)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for path in self.paths.values():
            if os.path.isdir(path):
                _git(self.repo, "worktree", "remove", "--force", path, check=False)
        shutil.rmtree(self.parent, ignore_errors=True)
        _git(self.repo, "worktree", "prune", check=False)


# -- measuring --------------------------------------------------------------------------
class _Bench:
    """Builds a commit in its role's worktree and runs it once per `sample`, under perflab's timing."""

    def __init__(self, trees: _Worktrees, options: BisectOptions):
        from perflab.execute.process import CapturedOutput, open_devnull_streams
        self.trees = trees
        self.options = options
        self.pattern = re.compile(options.metric_regex) if options.metric_regex else None
        self.devnull = open_devnull_streams()
        self.output = CapturedOutput(self.devnull.stdin)
        self.runs = 0
        self.builds = 0
        self.built: dict[str, str] = {}   # role -> the sha built in its worktree

    def close(self) -> None:
        self.output.close()
        for fd in {self.devnull.stdin, self.devnull.stdout, self.devnull.stderr}:
            os.close(fd)

    def build(self, role: str, commit: Commit) -> None:
        if self.built.get(role) == commit.sha:
            return
        self.built.pop(role, None)
        path = self.trees.paths[role]
        _git(path, "checkout", "--quiet", "--force", "--detach", commit.sha)
        self.builds += 1
        result = subprocess.run([SHELL, "-c", self.options.build], cwd=path,
                                capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            detail = _last_line(result.stderr or result.stdout)
            raise _Skip(f"build failed (exit {result.returncode}{': ' + detail if detail else ''})")
        self.built[role] = commit.sha

    def sample(self, role: str, commit: Commit) -> float:
        from perflab.execute.process import spawn_and_wait
        if self.built.get(role) != commit.sha:
            raise RuntimeError(f"{commit.short} is not built in the {role} worktree")  # a driver bug
        self.runs += 1
        env = dict(os.environ, PERFLAB_BISECT_COMMIT=commit.sha)
        result = spawn_and_wait(SHELL, [SHELL, "-c", self.options.run], streams=self.output.streams(),
                                env=env, cwd=self.trees.paths[role], timeout=self.options.timeout)
        stdout, stderr = self.output.read()
        if result.timed_out:
            raise _Skip(f"run timed out after {self.options.timeout:g} s")
        if result.exit_code != 0:
            how = f"exit {result.exit_code}" if result.exit_code is not None else f"signal {result.signal}"
            detail = _last_line(stderr or stdout)
            raise _Skip(f"run failed ({how}{': ' + detail if detail else ''})")
        value = self._metric(result, stdout)
        if not value > 0:
            raise _Skip(f"run gave a metric value {value!r} (needs a positive number)")
        return value

    def _metric(self, result, stdout: str) -> float:
        if self.pattern is not None:
            matches = self.pattern.findall(stdout)
            if not matches:
                raise _Skip(f"run printed nothing matching --metric-regex {self.pattern.pattern!r}")
            last = matches[-1]
            try:
                return float(last[0] if isinstance(last, tuple) else last)
            except ValueError:
                raise _Skip(f"--metric-regex matched {last!r}, not a number") from None
        return {"time": result.wall_s, "user": result.user_s, "system": result.system_s,
                "cpu": result.user_s + result.system_s}[self.options.metric]


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


# -- choosing -----------------------------------------------------------------------------
def next_probe(low: int, high: int, excluded: set[int]) -> int | None:
    """The commit index between low and high (exclusive) nearest their middle, not excluded.

    Ties go to the lower index first, as git's midpoint does; None when none is left.
    """
    middle = (low + high) // 2
    for distance in range(0, high - low):
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
    previous = signal.getsignal(signal.SIGTERM)
    if previous in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM, like Ctrl-C, removes the worktrees
    try:
        with _Worktrees(repo, commits[0].sha) as trees:
            bench = _Bench(trees, options)
            try:
                return _Bisection(commits, bench, options, progress).run()
            finally:
                bench.close()
    finally:
        if previous in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


class _Bisection:
    def __init__(self, commits: list[Commit], bench: _Bench, options: BisectOptions,
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
        self.good = Probe(commits[0], "good end")
        self.bad = Probe(commits[-1], "bad end")
        self.warnings: list[str] = []

    def result(self, outcome: str, message: str, first_bad: Commit | None = None,
               candidates: list[Commit] | None = None, ends: EndsCheck | None = None) -> BisectResult:
        return BisectResult(outcome, message, first_bad, candidates or [], self.probes, ends,
                            self.bench.runs, self.bench.builds, len(self.commits) - 1, self.unit, self.test,
                            self.options.confidence, self.seed, self.options.fixed_runs is None,
                            self.warnings)

    def run(self) -> BisectResult:
        self.probes += [self.good, self.bad]
        for end, role in ((self.good, "good"), (self.bad, "bad")):
            try:
                self.bench.build(role, end.commit)
            except _Skip as why:
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
            probe = Probe(self.commits[index], "probe")
            self.probes.append(probe)
            try:
                self.bench.build("probe", probe.commit)
                self._classify(probe, ends)
            except _Skip as why:
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
            return self.result("found", f"first bad commit: {first.short} {first.subject}", first, ends=ends)
        candidates = self.commits[low + 1: high + 1]
        reasons = sorted({p.skipped.split(" (")[0] for p in self.probes if p.skipped})
        return self.result(
            "undecided", f"could not decide: {len(skipped)} commits skipped ({', '.join(reasons)}); "
            f"the first bad commit is one of {len(candidates)}: "
            + " ".join(c.short for c in candidates), candidates=candidates, ends=ends)

    def _end_failed(self, end: Probe, why: _Skip) -> BisectResult:
        end.skipped = str(why)
        return self.result("undecided", f"could not decide: the {end.role} {end.commit.short} "
                           f"cannot be measured: {why}")

    def _run_end(self, end: Probe) -> float:
        """One run of an end; its failure ends the bisect (raises _EndFailed)."""
        try:
            return self.bench.sample(end.role.split()[0], end.commit)
        except _Skip as why:
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
                "no difference", f"good and bad do not differ significantly: bad/good = {check.ratio:.4f} "
                f"({change:+.2f}%), robust paired t-test on logs p = {check.p_value:.3g} "
                f"(needs < {check.alpha_per_look:.2g}) after {check.pairs} pairs", ends=check)
        if not fixed and not check.decidable:
            need = self.test.expected_pairs(check.delta, check.scale)
            self.warnings.append(f"the step ({100 * (check.ratio - 1):+.2f}%) is small for the noise "
                                 f"(sd of a pair's log ratio {check.scale:.3f}): a step needs about "
                                 f"{need:.0f} runs on average, --max-runs is {self.test.max_n}; "
                                 "calls at the maximum are marked '?'")
        return check

    def _classify(self, probe: Probe, ends: EndsCheck) -> None:
        fixed = self.options.fixed_runs
        if fixed is not None:
            while len(probe.values) < fixed:
                probe.values.append(self.bench.sample("probe", probe.commit))
            probe.classification = _closer(self.good.values, self.bad.values, probe.values)
            return
        while True:
            end = self.bad if len(probe.values) % 2 else self.good   # alternate: good, bad, good...
            value, reference = self._pair(lambda: self.bench.sample("probe", probe.commit),
                                          lambda: self._run_end(end))
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
