"""Bisect's process work: a worktree per role, builds, timed runs of the benchmark line, signals.

The user's checkout is never touched: good, bad and the probed commit are each built in
a detached git worktree of their own in a temporary directory (so runs of the three can
alternate without rebuilding), removed at the end, also on Ctrl-C or SIGTERM
(`terminating_as_interrupt`). `analysis.bisect` decides what to build and run; this
module only does it and returns numbers, or raises `Skip` when a commit cannot be measured.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType

from perflab.execute.process import CapturedOutput, open_devnull_streams, spawn_and_wait
from perflab.model.records import ProcessResult
from perflab.model.report.bisect import BISECT_METRICS
from perflab.vcs import Worktrees, last_line

SHELL = "/bin/sh"
METRICS = tuple(BISECT_METRICS)
ROLES = ("good", "bad", "probe")   # one worktree (and one build) each


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


class Bench:
    """Builds a commit in its role's worktree and runs it once per `sample`, under perflab's timing."""

    def __init__(self, trees: Worktrees, spec: BenchSpec):
        self.trees = trees
        self.spec = spec
        self.pattern = re.compile(spec.metric_regex) if spec.metric_regex else None
        self.devnull = open_devnull_streams()
        self.output = CapturedOutput(self.devnull.stdin)
        self.runs = 0
        self.builds = 0
        self.built: dict[str, str] = {}   # role -> the sha built in its worktree

    def close(self) -> None:
        self.output.close()
        for fd in {self.devnull.stdin, self.devnull.stdout, self.devnull.stderr}:
            os.close(fd)

    def build(self, role: str, sha: str) -> None:
        """Check ``sha`` out in the role's worktree and run the build line there (once per sha)."""
        if self.built.get(role) == sha:
            return
        self.built.pop(role, None)
        path = self.trees.checkout(role, sha)
        self.builds += 1
        result = subprocess.run([SHELL, "-c", self.spec.build], cwd=path,
                                capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            detail = last_line(result.stderr or result.stdout)
            raise Skip(f"build failed (exit {result.returncode}{': ' + detail if detail else ''})")
        self.built[role] = sha

    def sample(self, role: str, sha: str) -> float:
        """One run of the built ``sha`` in the role's worktree: the metric's value (> 0)."""
        if self.built.get(role) != sha:
            raise RuntimeError(f"{sha[:12]} is not built in the {role} worktree")  # a driver bug
        self.runs += 1
        env = dict(os.environ, PERFLAB_BISECT_COMMIT=sha)
        result = spawn_and_wait(SHELL, [SHELL, "-c", self.spec.run], streams=self.output.streams(),
                                env=env, cwd=self.trees.paths[role], timeout=self.spec.timeout)
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
def open_bench(repo: str, start: str, spec: BenchSpec) -> Iterator[Bench]:
    """A Bench over fresh worktrees of ``repo`` (checked out at ``start``), all removed on exit,
    SIGTERM included."""
    with terminating_as_interrupt(), Worktrees(repo, start, ROLES, prefix="perflab-bisect-") as trees:
        bench = Bench(trees, spec)
        try:
            yield bench
        finally:
            bench.close()


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
