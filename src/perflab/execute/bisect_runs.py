"""Bisect's process work: a clean build per tree, timed runs of the benchmark line, signals.

The user's checkout is never touched. Each commit is built once in a fresh git worktree
of its own (a clean checkout: nothing of another commit's build is left in it), which
is then detached from the repository and kept as a plain directory named by the commit's
tree hash and the build line, so the same tree is never built twice (a merge that
changes nothing, a revert, an empty commit), also across bisects with a ``build_cache``
directory. Without one the directories are temporary, removed at the end, also on Ctrl-C
or SIGTERM (`terminating_as_interrupt`). `analysis.bisect` decides what to build and run;
this module only does it and returns numbers, or raises `Skip` when a commit cannot be
measured.
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

from perflab.execute.process import CapturedOutput, open_devnull_streams, spawn_and_wait
from perflab.model.records import ProcessResult
from perflab.model.report.bisect import BISECT_METRICS
from perflab.vcs import add_worktree, last_line, prune_worktrees, tree_hashes

SHELL = "/bin/sh"
METRICS = tuple(BISECT_METRICS)
BUILT = ".perflab-built"   # beside a cached tree: the build line that built it


class Skip(Exception):
    """This commit cannot be measured: its build or a run failed."""


@dataclass(frozen=True)
class BenchSpec:
    """What to do with each commit: the shell lines, and what to read of a run."""

    build: str
    run: str
    metric: str = "time"
    metric_regex: str | None = None
    timeout: float | None = None
    build_cache: str | None = None   # keep built trees here (else a temporary directory)


class Bench:
    """Builds each commit's tree once, in a clean checkout, and runs it once per `sample`."""

    def __init__(self, repo: str, cache: str, spec: BenchSpec):
        self.repo = repo
        self.cache = cache
        self.spec = spec
        self.pattern = re.compile(spec.metric_regex) if spec.metric_regex else None
        self.devnull = open_devnull_streams()
        self.output = CapturedOutput(self.devnull.stdin)
        self.runs = 0
        self.builds = 0
        self.build_tag = hashlib.sha256(spec.build.encode()).hexdigest()[:8]
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
        if not (marker.exists() and marker.read_text() == self.spec.build):
            self._fresh_build(sha, path, key)
            marker.write_text(self.spec.build)
        self.dirs[sha] = path

    def _fresh_build(self, sha: str, path: str, key: str) -> None:
        shutil.rmtree(path, ignore_errors=True)
        add_worktree(self.repo, path, sha)
        try:
            self.builds += 1
            result = subprocess.run([SHELL, "-c", self.spec.build], cwd=path,
                                    capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
        finally:   # a plain directory from now on: the repository keeps no worktree of it
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(path, ".git"))
            prune_worktrees(self.repo)
        if result.returncode != 0:
            shutil.rmtree(path, ignore_errors=True)
            detail = last_line(result.stderr or result.stdout)
            self.failed[key] = Skip(f"build failed (exit {result.returncode}{': ' + detail if detail else ''})")
            raise self.failed[key]

    def sample(self, sha: str) -> float:
        """One run of the built ``sha`` in its tree's directory: the metric's value (> 0)."""
        if sha not in self.dirs:
            raise RuntimeError(f"{sha[:12]} is not built")  # a driver bug
        self.runs += 1
        env = dict(os.environ, PERFLAB_BISECT_COMMIT=sha)
        result = spawn_and_wait(SHELL, [SHELL, "-c", self.spec.run], streams=self.output.streams(),
                                env=env, cwd=self.dirs[sha], timeout=self.spec.timeout)
        stdout, stderr = self.output.read()
        if result.timed_out:
            raise Skip(f"run timed out after {self.spec.timeout:g} s")
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
def open_bench(repo: str, spec: BenchSpec) -> Iterator[Bench]:
    """A Bench building into ``spec.build_cache`` (kept) or a temporary directory (removed on
    exit, SIGTERM included)."""
    with terminating_as_interrupt():
        temporary = spec.build_cache is None
        cache = tempfile.mkdtemp(prefix="perflab-bisect-") if temporary else str(spec.build_cache)
        os.makedirs(cache, exist_ok=True)
        bench = Bench(repo, cache, spec)
        try:
            yield bench
        finally:
            bench.close()
            if temporary:
                shutil.rmtree(cache, ignore_errors=True)
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
