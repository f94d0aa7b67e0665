"""Find the first commit that changed a metric: git bisect with a sequential test per step.

The user's checkout is never touched: every build and run happens in a detached git
worktree in a temporary directory, removed at the end (also on Ctrl-C or SIGTERM).

1. The ends: good and bad are built and run 5 times each, then 5 more each until
   a robust t-test on logs says they differ (alpha 0.01, Bonferroni over the looks) and a
   commit at either end's centre could be called within 5 runs, up to 30 each. If they
   never differ: stop and say so.
2. Each step probes the untested commit nearest the middle of the remaining range
   (git's choice; a skipped commit makes it try the next nearest), builds it, and runs
   it until the sequential test (`perflab.stats.sequential`) calls it like-good or
   like-bad, or gives up at its maximum and calls it by the closer end (low confidence).
3. A commit whose build or run fails (any non-zero exit, 125 included) is skipped and
   named in the result; if only skipped commits remain between the last good and the
   first bad, the first bad is one of them (as git says).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from perflab.model.errors import EnvironmentProblem, UsageError
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
    """One commit that was built (and maybe run): its values and what it was called."""

    commit: Commit
    role: str                       # "good end", "bad end", "probe"
    values: list[float] = field(default_factory=list)
    classification: Classification | None = None
    skipped: str | None = None      # why, when it was skipped


@dataclass(frozen=True)
class BisectOptions:
    build: str
    run: str
    metric: str = "time"
    metric_regex: str | None = None
    timeout: float | None = None
    test: SequentialTest = SequentialTest()
    end_runs: int = 5        # first runs of each end
    end_step: int = 5        # more runs of each end per look
    max_end_runs: int = 30
    ends_alpha: float = 0.01
    fixed_runs: int | None = None  # classic bisect: exactly N runs per step, closer end wins


@dataclass
class BisectResult:
    outcome: str                        # "found", "no difference", "undecided"
    message: str
    first_bad: Commit | None
    candidates: list[Commit]            # when undecided: the first bad is one of these
    probes: list[Probe]
    ends: EndsCheck | None
    runs: int                           # benchmark runs spent
    builds: int
    commits: int                        # commits in good..bad
    unit: str
    test: SequentialTest

    @property
    def skipped(self) -> list[Probe]:
        return [p for p in self.probes if p.skipped]


class _Skip(Exception):
    """This commit cannot be measured: its build or a run failed."""


# -- git ----------------------------------------------------------------------------------
def _git(repo: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    try:
        result = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True,
                                stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise EnvironmentProblem("git not found", hint="apt-get install git") from None
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


class _Worktree:
    """A detached worktree of `repo` in a temporary directory, removed on exit."""

    def __init__(self, repo: str, start: str):
        self.repo = repo
        self.start = start
        self.parent = tempfile.mkdtemp(prefix="perflab-bisect-")
        self.path = os.path.join(self.parent, "tree")

    def __enter__(self) -> "_Worktree":
        _git(self.repo, "worktree", "add", "--detach", "--quiet", self.path, self.start)
        return self

    def checkout(self, sha: str) -> None:
        _git(self.path, "checkout", "--quiet", "--force", "--detach", sha)

    def __exit__(self, *exc: object) -> None:
        _git(self.repo, "worktree", "remove", "--force", self.path, check=False)
        shutil.rmtree(self.parent, ignore_errors=True)
        _git(self.repo, "worktree", "prune", check=False)


# -- measuring --------------------------------------------------------------------------
class _Bench:
    """Builds the worktree's commit and runs it once per `sample`, under perflab's timing."""

    def __init__(self, worktree: _Worktree, options: BisectOptions):
        from perflab.execute.process import CapturedOutput, open_devnull_streams
        self.tree = worktree
        self.options = options
        self.pattern = re.compile(options.metric_regex) if options.metric_regex else None
        self.devnull = open_devnull_streams()
        self.output = CapturedOutput(self.devnull.stdin)
        self.runs = 0
        self.builds = 0
        self.current: str | None = None

    def close(self) -> None:
        self.output.close()
        for fd in {self.devnull.stdin, self.devnull.stdout, self.devnull.stderr}:
            os.close(fd)

    def prepare(self, commit: Commit) -> None:
        if self.current == commit.sha:
            return
        self.current = None
        self.tree.checkout(commit.sha)
        self.builds += 1
        result = subprocess.run([SHELL, "-c", self.options.build], cwd=self.tree.path,
                                capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise _Skip(f"build failed (exit {result.returncode}"
                        f"{': ' + _last_line(result.stderr or result.stdout) if (result.stderr or result.stdout).strip() else ''})")
        self.current = commit.sha

    def sample(self, commit: Commit) -> float:
        from perflab.execute.process import spawn_and_wait
        self.prepare(commit)
        self.runs += 1
        env = dict(os.environ, PERFLAB_BISECT_COMMIT=commit.sha)
        result = spawn_and_wait(SHELL, [SHELL, "-c", self.options.run], streams=self.output.streams(),
                                env=env, cwd=self.tree.path, timeout=self.options.timeout)
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
def bisect(repo: str, good: str, bad: str, options: BisectOptions,
           progress: Callable[[str], None] = lambda line: None) -> BisectResult:
    """Bisect good..bad in `repo` (see the module doc). Raises UsageError for bad input."""
    if options.metric not in METRICS:
        raise UsageError(f"unknown --metric {options.metric!r}; choose one of {', '.join(METRICS)}")
    if options.metric_regex:
        try:
            re.compile(options.metric_regex)
        except re.error as error:
            raise UsageError(f"bad --metric-regex {options.metric_regex!r}: {error}") from None
    if shutil.which("git") is None:
        raise EnvironmentProblem("git not found", hint="apt-get install git")
    commits = commit_range(repo, good, bad)
    previous = signal.getsignal(signal.SIGTERM)
    if previous in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM, like Ctrl-C, removes the worktree
    try:
        with _Worktree(repo, commits[0].sha) as tree:
            bench = _Bench(tree, options)
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
        self.test = options.test
        self.progress = progress
        self.probes: list[Probe] = []
        self.unit = "" if options.metric_regex else "s"

    def result(self, outcome: str, message: str, first_bad: Commit | None = None,
               candidates: list[Commit] | None = None, ends: EndsCheck | None = None) -> BisectResult:
        return BisectResult(outcome, message, first_bad, candidates or [], self.probes, ends,
                            self.bench.runs, self.bench.builds, len(self.commits) - 1, self.unit, self.test)

    def run(self) -> BisectResult:
        good = Probe(self.commits[0], "good end")
        bad = Probe(self.commits[-1], "bad end")
        self.probes += [good, bad]
        ends = self._sample_ends(good, bad)
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
                self._classify(probe, good.values, bad.values)
            except _Skip as why:
                probe.skipped = str(why)
                skipped.add(index)
                self.progress(f"skip {probe.commit.short} {probe.commit.subject}: {why}")
                continue
            c = probe.classification
            assert c is not None
            self.progress(f"{probe.commit.short} is {c.call.value} (n={c.n}, {100 * c.confidence:.1f}%"
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

    def _sample_ends(self, good: Probe, bad: Probe) -> EndsCheck | BisectResult:
        o = self.options
        looks = 1 + max(0, -(-(o.max_end_runs - o.end_runs) // o.end_step))
        target = o.end_runs
        while True:
            for end in (good, bad):
                try:
                    while len(end.values) < target:
                        end.values.append(self.bench.sample(end.commit))
                except _Skip as why:
                    end.skipped = str(why)
                    return self.result("undecided", f"could not decide: the {end.role} {end.commit.short} "
                                       f"cannot be measured: {why}")
            check = self.test.check_ends(good.values, bad.values, alpha=o.ends_alpha, looks=looks,
                                         probe_n=self.test.min_n + 2)
            self.progress(f"ends after {target} runs each: bad/good = {check.ratio:.4f}, "
                          f"p = {check.p_value:.2g}{'' if check.decidable else ', not yet decidable'}")
            done = check.significant and (check.decidable or o.fixed_runs is not None)
            if done or target >= o.max_end_runs:
                break
            target = min(o.max_end_runs, target + o.end_step)
        if not check.significant:
            change = 100 * (check.ratio - 1)
            return self.result(
                "no difference", f"good and bad do not differ significantly: bad/good = {check.ratio:.4f} "
                f"({change:+.2f}%), robust t-test on logs p = {check.p_value:.3g} (needs < {check.alpha_per_look:.2g}) "
                f"after {len(good.values)} runs each", ends=check)
        return check

    def _classify(self, probe: Probe, good: list[float], bad: list[float]) -> None:
        fixed = self.options.fixed_runs
        while True:
            probe.values.append(self.bench.sample(probe.commit))
            if fixed is not None:
                if len(probe.values) >= fixed:
                    probe.classification = _closer(good, bad, probe.values)
                    return
                continue
            c = self.test.classify(good, bad, probe.values)
            if c.call is not Call.MORE:
                probe.classification = c
                return


def _closer(good: list[float], bad: list[float], values: list[float]) -> Classification:
    """The classic fixed-N call: the end whose mean log is closer."""
    g, b, x = (float(np.mean(np.log(v))) for v in (good, bad, values))
    call = Call.BAD if abs(x - b) < abs(x - g) else Call.GOOD
    return Classification(call, float("nan"), float("nan"), len(values), False, float(np.exp(x)), float("nan"))
