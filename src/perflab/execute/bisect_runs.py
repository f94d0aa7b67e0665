"""Bisect's process work: a clean build per tree, timed runs of the benchmark line, signals.

The user's checkout is never touched. Each commit is built once in a fresh git worktree
of its own (a clean checkout: nothing of another commit's build is left in it), which
is then detached from the repository and kept as a plain directory named by the commit's
tree hash and the build line, so the same tree is never built twice (a merge that
changes nothing, a revert, an empty commit), also across bisects with a ``build_cache``
directory. Without one the directories are temporary, removed at the end, also on Ctrl-C
or SIGTERM (`terminating_as_interrupt`). With a ``clean`` line, one worktree is reused
instead: each commit is checked out there, the clean line runs, then the build line (an
incremental build, as a developer's tree does), and the built tree is copied out to its
tree-hash directory. `analysis.bisect` decides what to build and run; this module only
does it and returns numbers (each also stored by a `BisectRecorder`), or raises `Skip`
when a commit cannot be measured.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from perflab.execute.bisect_record import BisectRecorder
from perflab.execute.process import CapturedOutput, open_devnull_streams, spawn_and_wait
from perflab.model.records import ProcessResult
from perflab.model.report.bisect import BISECT_METRICS
from perflab.vcs import add_worktree, git_checked, last_line, prune_worktrees, tree_hashes

SHELL = "/bin/sh"
METRICS = tuple(BISECT_METRICS)
BUILT = ".perflab-built"   # beside a cached tree: the build line that built it


class Skip(Exception):
    """This commit cannot be measured: its build or a run failed."""


class TimedOut(Skip):
    """A run took longer than --timeout."""


@dataclass(frozen=True)
class BenchSpec:
    """What to do with each commit: the shell lines, and what to read of a run."""

    build: str
    run: str
    metric: str = "time"
    metric_regex: str | None = None
    timeout: float | None = None
    build_cache: str | None = None   # keep built trees here (else a temporary directory)
    clean: str | None = None         # reuse one worktree, running this line before each build

    @property
    def recipe(self) -> str:
        """What makes a built tree: the build line (after the clean line, when one is reused)."""
        return self.build if self.clean is None else f"{self.clean}\n{self.build}"


class Bench:
    """Builds each commit's tree once, in a clean checkout, and runs it once per `sample`."""

    def __init__(self, repo: str, cache: str, spec: BenchSpec, recorder: BisectRecorder | None = None):
        self.repo = repo
        self.recorder = recorder   # stores every run's value (or why it failed) as a sample
        self.cache = cache
        self.spec = spec
        self.pattern = re.compile(spec.metric_regex) if spec.metric_regex else None
        self.devnull = open_devnull_streams()
        self.output = CapturedOutput(self.devnull.stdin)
        self.runs = 0
        self.builds = 0
        self.build_tag = hashlib.sha256(spec.recipe.encode()).hexdigest()[:8]
        self.work: str | None = None          # --clean: the one reused worktree
        self.dirs: dict[str, str] = {}        # sha -> its built tree's directory
        self.failed: dict[str, Skip] = {}     # tree key -> why its build failed

    def close(self) -> None:
        self.output.close()
        for fd in {self.devnull.stdin, self.devnull.stdout, self.devnull.stderr}:
            os.close(fd)

    def build(self, sha: str) -> None:
        """Build ``sha`` unless its tree was built already (raises Skip when the build fails)."""
        if sha in self.dirs:
            return
        key = f"{tree_hashes(self.repo, [sha])[sha][:20]}-{self.build_tag}"
        if key in self.failed:
            raise self.failed[key]
        path = os.path.join(self.cache, key)
        marker = Path(path + BUILT)
        if not (marker.exists() and marker.read_text() == self.spec.recipe):
            if self.spec.clean is None:
                self._fresh_build(sha, path, key)
            else:
                self._reused_build(sha, path, key)
            marker.write_text(self.spec.recipe)
        self.dirs[sha] = path

    def _fresh_build(self, sha: str, path: str, key: str) -> None:
        shutil.rmtree(path, ignore_errors=True)
        add_worktree(self.repo, path, sha)
        try:
            self.builds += 1
            result = _shell(self.spec.build, path)
        finally:   # a plain directory from now on: the repository keeps no worktree of it
            _detach(self.repo, path)
        if result.returncode != 0:
            shutil.rmtree(path, ignore_errors=True)
            self._failed(key, "build", result)

    def _reused_build(self, sha: str, path: str, key: str) -> None:
        """--clean: check ``sha`` out in the one reused worktree, run the clean line, then the
        build line there; the built tree is copied to ``path`` (runs need both sides' trees)."""
        if self.work is None:
            self.work = os.path.join(self.cache, f"work-{self.build_tag}")
            shutil.rmtree(self.work, ignore_errors=True)
            add_worktree(self.repo, self.work, sha)
        else:
            git_checked(self.work, "checkout", "--detach", "--force", "--quiet", sha)
        self.builds += 1
        for what, line in (("clean", self.spec.clean or ""), ("build", self.spec.build)):
            result = _shell(line, self.work)
            if result.returncode != 0:
                self._failed(key, what, result)
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(self.work, path, symlinks=True, ignore=shutil.ignore_patterns(".git"))

    def _failed(self, key: str, what: str, result: subprocess.CompletedProcess[str]) -> None:
        detail = last_line(result.stderr or result.stdout)
        self.failed[key] = Skip(f"{what} failed (exit {result.returncode}{': ' + detail if detail else ''})")
        raise self.failed[key]

    def drop_work(self) -> None:
        """Remove the reused worktree (--clean), leaving the repository no worktree of it."""
        if self.work is not None:
            _detach(self.repo, self.work)
            shutil.rmtree(self.work, ignore_errors=True)

    def sample(self, sha: str) -> float:
        """One run of the built ``sha`` in its tree's directory: the metric's value (> 0),
        stored by the recorder (a failed run: as a failed sample, then Skip)."""
        if sha not in self.dirs:
            raise RuntimeError(f"{sha[:12]} is not built")  # a driver bug
        try:
            value = self._run(sha)
        except Skip as why:
            if self.recorder is not None:
                self.recorder.failed(sha, str(why), timed_out=isinstance(why, TimedOut))
            raise
        if self.recorder is not None:
            self.recorder.sample(sha, value)
        return value

    def _run(self, sha: str) -> float:
        self.runs += 1
        env = dict(os.environ, PERFLAB_BISECT_COMMIT=sha)
        result = spawn_and_wait(SHELL, [SHELL, "-c", self.spec.run], streams=self.output.streams(),
                                env=env, cwd=self.dirs[sha], timeout=self.spec.timeout)
        stdout, stderr = self.output.read()
        if result.timed_out:
            raise TimedOut(f"run timed out after {self.spec.timeout:g} s")
        if result.exit_code != 0:
            how = f"exit {result.exit_code}" if result.exit_code is not None else f"signal {result.signal}"
            detail = last_line(stderr or stdout)
            raise Skip(f"run failed ({how}{': ' + detail if detail else ''})")
        value = self._metric(result, stdout)
        if not value > 0:
            raise Skip(f"run gave a metric value {value!r} (needs a positive number)")
        return value

    def _metric(self, result: ProcessResult, stdout: str) -> float:
        if self.pattern is not None:
            matches = self.pattern.findall(stdout)
            if not matches:
                raise Skip(f"run printed nothing matching --metric-regex {self.pattern.pattern!r}")
            last = matches[-1]
            try:
                return float(last[0] if isinstance(last, tuple) else last)
            except ValueError:
                raise Skip(f"--metric-regex matched {last!r}, not a number") from None
        return {"time": result.wall_s, "user": result.user_s, "system": result.system_s,
                "cpu": result.user_s + result.system_s}[self.spec.metric]


@contextlib.contextmanager
def open_bench(repo: str, spec: BenchSpec, recorder: BisectRecorder | None = None) -> Iterator[Bench]:
    """A Bench building into ``spec.build_cache`` (kept) or a temporary directory (removed on
    exit, SIGTERM included); the recorder's runs are sealed on the way out (interrupted
    when an exception, Ctrl-C or SIGTERM ends the bisect)."""
    with terminating_as_interrupt():
        temporary = spec.build_cache is None
        cache = tempfile.mkdtemp(prefix="perflab-bisect-") if temporary else str(spec.build_cache)
        os.makedirs(cache, exist_ok=True)
        bench = Bench(repo, cache, spec, recorder)
        interrupted = True
        try:
            yield bench
            interrupted = False
        finally:
            bench.close()
            bench.drop_work()
            if recorder is not None:
                recorder.close(interrupted=interrupted)
            if temporary:
                shutil.rmtree(cache, ignore_errors=True)
            prune_worktrees(repo)


def _shell(line: str, cwd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SHELL, "-c", line], cwd=cwd, capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL)


def _detach(repo: str, path: str) -> None:
    """``path`` a plain directory: the repository keeps no worktree of it."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(path, ".git"))
    prune_worktrees(repo)


@contextlib.contextmanager
def terminating_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt inside (as Ctrl-C does), so cleanups run; unless
    someone else already handles SIGTERM."""
    previous = signal.getsignal(signal.SIGTERM)
    ours = previous in (signal.SIG_DFL, None)
    if ours:
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        if ours:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
