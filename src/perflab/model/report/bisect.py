"""A bisection as values: its steps (the ends and each probed commit) and its result.

analysis.bisect builds these; render.bisect lays them out. Every number shown (a commit's
mean ±sd, the change against good, the confidence of a call) is computed in analysis.
"""

from __future__ import annotations

from dataclasses import dataclass

from perflab.model.verdicts import StatWarning

GOOD_END = "good end"
BAD_END = "bad end"
PROBE = "probe"

#: What bisect can read of each run (--metric): the one list behind the CLI's choices.
BISECT_METRICS: dict[str, str] = {
    "time": "wall time",
    "user": "user CPU time",
    "system": "system CPU time",
    "cpu": "user + system CPU time",
}

FOUND = "found"
NO_DIFFERENCE = "no difference"
UNDECIDED = "undecided"


@dataclass(frozen=True)
class Commit:
    """One commit of good..bad on the first-parent line: index 0 is good, the last is bad."""

    sha: str
    subject: str
    index: int

    @property
    def short(self) -> str:
        return self.sha[:12]


@dataclass(frozen=True)
class BisectStep:
    """One commit that was built (and maybe run), in the order they were taken up."""

    commit: Commit
    role: str                   # GOOD_END, BAD_END or PROBE
    n: int                      # runs of it
    mean: float                 # of its values; NaN without
    stddev: float               # (n-1); NaN below 2
    vs_good_pct: float          # the change against good: the ends' ratio for bad, the paired
                                # estimate for a probe; NaN where there is none
    call: str | None            # "good" / "bad" for a probe that was called
    low_confidence: bool        # called at the maximum of runs, by the closer end
    confidence: float           # of the call (NaN: the classic fixed-runs call)
    skipped: str | None         # why, when it was skipped


@dataclass(frozen=True)
class EndsSummary:
    """Good vs bad, measured in pairs before the search."""

    significant: bool
    p_value: float              # the robust paired t-test on logs
    alpha_per_look: float
    ratio: float                # bad / good
    pairs: int


@dataclass(frozen=True)
class StepTest:
    """The per-step sequential test's settings."""

    alpha: float
    beta: float
    min_n: int
    max_n: int


@dataclass(frozen=True)
class BisectResult:
    outcome: str                        # FOUND, NO_DIFFERENCE, UNDECIDED
    message: str
    first_bad: Commit | None
    candidates: tuple[Commit, ...]      # when undecided: the first bad is one of these
    steps: tuple[BisectStep, ...]
    ends: EndsSummary | None
    runs: int                           # benchmark runs spent (probes and references)
    builds: int
    commits: int                        # commits in good..bad
    unit: str
    test: StepTest
    confidence: float                   # stated for the whole result
    seed: int
    paired: bool                        # False for the classic fixed-runs peer
    runs_per_commit: int | None         # the classic peer's fixed number
    typical: float                      # the first measured commit's mean: what units are scaled for
    warnings: tuple[StatWarning, ...] = ()

    @property
    def skipped(self) -> tuple[BisectStep, ...]:
        return tuple(s for s in self.steps if s.skipped)
