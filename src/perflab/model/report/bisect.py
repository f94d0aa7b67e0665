"""A bisection as values: its steps (the ends and each probed commit) and its result.

analysis.bisect builds these; render.bisect lays them out. Every number shown (a commit's
mean ±sd, the change against good, the confidence of a call) is computed in analysis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

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
OTHER_DIRECTION = "other direction"   # the ends differ, but not the way --direction asked for
STOPPED = "stopped at neither"       # --neither stop, at a commit like neither end

# what a probe like neither end is (BisectStep.neither)
BETWEEN = "between"          # significantly apart from both ends, between them: a gradual change
BEYOND_OLD = "beyond old"    # significantly apart from both ends, past the old one
BEYOND_NEW = "beyond new"    # ... past the new one


@dataclass(frozen=True, kw_only=True)
class Commit:
    """One commit of good..bad: index 0 is good, then parents before children, the last is bad."""

    sha: str
    subject: str
    index: int
    merge: bool = False

    @property
    def short(self) -> str:
        return self.sha[:12]


@dataclass(frozen=True, kw_only=True)
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
    neither: str | None = None  # BETWEEN, BEYOND_OLD, BEYOND_NEW: like neither end (the test: Neither)
    vs_old_pct: float = math.nan  # the probe against each end measured beside it (+ = better)
    vs_new_pct: float = math.nan
    position: float = math.nan  # where it sits: 0 = at old, 1 = at new


@dataclass(frozen=True, kw_only=True)
class Share:
    """One commit's part of a change spread over several commits."""

    commit: Commit
    position: float             # where it sits: 0 = at old, 1 = at new
    share: float                # position less the previous commit's: its part of the whole step
    change_pct: float           # that part as a % of the metric (+ = better)
    se: float = math.nan        # the share's standard error (its two positions' errors together)


#: A commit of a gradual change carries a material part of it from this share of the step on:
#: a fifth, the bar issue 38 sets for a culprit (a commit's share is the difference of two
#: positions, each known to a tenth to a fifth of the step after its settling pairs: see `material`).
MATERIAL_SHARE = 0.2


#: A share is named material when it is MATERIAL_Z standard errors above MATERIAL_SHARE, the
#: test made at most MATERIAL_LOOKS times (bisect measures a share it leaves undecided more,
#: then looks again): Bonferroni over the looks, so a commit that carries exactly a fifth is
#: named with at most MATERIAL_ERROR (one-sided), one that carries less with less.
MATERIAL_ERROR = 0.05
MATERIAL_LOOKS = 3
MATERIAL_Z = NormalDist().inv_cdf(1 - MATERIAL_ERROR / MATERIAL_LOOKS)


def material(share: Share) -> bool:
    """The commit carries a material part of the change: its share's lower bound (MATERIAL_Z
    standard errors below it) reaches MATERIAL_SHARE (without a standard error: its share does)."""
    error = share.se if math.isfinite(share.se) else 0.0
    return share.share - MATERIAL_Z * error >= MATERIAL_SHARE


def below_material(share: Share) -> bool:
    """The share is shown under MATERIAL_SHARE: its upper bound (MATERIAL_Z standard errors
    above it) is below a fifth."""
    error = share.se if math.isfinite(share.se) else 0.0
    return share.share + MATERIAL_Z * error < MATERIAL_SHARE


def first_carrier(gradual: tuple[Share, ...]) -> Share | None:
    """The first commit (in order) of a material share; without one, the first whose share
    is not shown under a fifth; None when every share is shown under it."""
    return next((s for s in gradual if material(s)), None) or \
        next((s for s in gradual if not below_material(s)), None)


def spread(gradual: tuple[Share, ...]) -> bool:
    """Not one commit: two or more may carry a material part (their shares not shown under
    a fifth), or none may (a change spread thin over many commits)."""
    return sum(not below_material(s) for s in gradual) != 1


def carriers_text(gradual: tuple[Share, ...]) -> str:
    """"3 commits carry 85% of the change: a 40%, b 30%, c 15%": the commits of a gradual
    change with a material share (`material`), largest first ("" when not gradual)."""
    material_ = sorted((s for s in gradual if material(s)), key=lambda s: -s.share)
    if not gradual:
        return ""
    if not material_:
        return f"no commit is shown to carry a fifth of it ({MATERIAL_Z:.2f} standard errors above)"
    total = sum(s.share for s in material_)
    named = ", ".join(f"{s.commit.short} {100 * s.share:.0f}%" for s in material_)
    count = f"{len(material_)} commits carry" if len(material_) > 1 else "1 commit carries"
    return f"{count} {100 * total:.0f}% of the change: {named}"


@dataclass(frozen=True, kw_only=True)
class EndsSummary:
    """Good vs bad, measured in pairs before the search."""

    significant: bool
    p_value: float              # the robust paired t-test on logs
    alpha_per_look: float
    ratio: float                # bad / good
    pairs: int


@dataclass(frozen=True, kw_only=True)
class StepTest:
    """The per-step sequential test's settings."""

    alpha: float
    beta: float
    min_n: int
    max_n: int


@dataclass(frozen=True, kw_only=True)
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
    first_parent: bool = False          # searched the first-parent line only (descending into merges)
    path: tuple[Commit, ...] = ()       # how the found commit joins the first-parent line: merge(s), then it
    change: str = ""                    # what the ends measure: "slower", "faster", "higher", "lower"
    verdict: str = ""                   # "regression" or "improvement"
    terms: tuple[str, str] = ("old", "new")
    gradual: tuple[Share, ...] = ()     # the commits a gradual change is spread over, each with its share
    neither_test: str = ""              # the three-way test as stated
    label: str = ""                     # the label its runs were stored under
    stored: tuple[tuple[str, int], ...] = ()   # (commit sha, its stored run id), in order of first run

    @property
    def skipped(self) -> tuple[BisectStep, ...]:
        return tuple(s for s in self.steps if s.skipped)
