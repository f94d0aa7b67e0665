"""The moderated test of two separate runs: run-to-run variance borrowed from the host.

`judge` takes the variance of a run's mean log from the host prior (`stats.host_prior`, at
the pair's own within-run part when the prior is trended), moderated by the benchmark's own
replicates: s~^2 = (d0 s0^2 + d s^2) / (d0 + d) on d0 + d df (Smyth 2004); the test is
Welch's on log values with variance 2 s~^2 (never below the pair's own). Which variance a
row takes (`choose`), by what its data support: the prior alone without replicates; with
them, the moderated one where the prior can describe a benchmark (d0 > PRIOR_DF_MIN) and
describes this one (its replicates not beyond the prior's upper tail at TAIL_ALPHA, F test);
else its own replicates alone (s^2 on d df, plus the pair's within-run part beyond theirs).
The rule looks at the prior's weight and at the upper tail only: choosing own replicates
because s^2 came out small would raise the false calls (bench/README.md, "A per-row rule").
It returns a ``blocked`` warning (the row stays undecided) where nothing stands for the
row: competing load not shown equal on both sides; its within-run part beyond any a
trended prior learned from. Two groups of values on a side (`two_groups`) block it where
the caller finds them far enough apart to move it across its verdict
(stats.resolution.unsettled against its margin). What each rule buys and costs:
bench/README.md, "Blocking rules". Method: docs/methods.md, docs/separate-runs.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perflab.model.verdicts import StatWarning
from perflab.stats.host_prior import Prior, Spread, beyond_prior, moderated, runs_to_decide
from perflab.stats.variance import RunVariance

#: Own replicates whose variance is beyond the prior's upper tail at this level are tested alone.
TAIL_ALPHA = 0.01
#: A prior on this many df or fewer is not moderated with: a scaled inverse chi-square on
#: d0 <= 4 has no finite variance (Var sigma^2 = 2 (d0 s0^2)^2 / ((d0 - 2)^2 (d0 - 4))): the
#: host's benchmarks differ in spread without bound, and its centre stands for none of them.
PRIOR_DF_MIN = 4.0
BEYOND_PRIOR = "beyond-host-prior"
WEAK_PRIOR = "weak-host-prior"   # the d0 <= PRIOR_DF_MIN rule, as `skip` names it (bench/aa_host_prior.py)
UNEQUAL_LOAD = "unequal-load"
TWO_GROUPS = "two-groups"


@dataclass(frozen=True)
class RunToRun:
    """What a row of separate runs knows of its run-to-run variance."""

    prior: Prior | None
    default: bool = False            # the prior is perflab's default, not this host's
    benchmarks: int = 0              # benchmarks the prior learned from
    own: Spread | None = None        # this row's own replicates (the same thing on this host)
    own_runs: int = 0
    load: tuple[bool, ...] = (False, False)   # another load competed with base / new
    unequal: tuple[bool, ...] = (False, False)   # a side's load not shown equal to the base's
    kind: str = ""                   # the metric's kind (wall time, cpu time, rate, count)
    stand_in: str = ""               # a default borrowed from this kind: none of its own recorded
    measured: tuple[str, ...] = ()   # each side's outside CPU share in words ("" unmeasured)

    @property
    def source(self) -> str:
        """Which variance the row used, in words."""
        if self.prior is None:
            return "run-to-run variance unknown"
        if self.default:
            own = f"own {self.own_runs} replicates + " if self.own is not None else ""
            of = f" for {self.kind}" if self.kind else ""
            borrowed = f" ({self.stand_in}'s: none of its own recorded)" if self.stand_in else ""
            return own + f"default prior{of}{borrowed}: teach this host with 'perflab calibrate'"
        if self.own is not None:
            return f"own {self.own_runs} replicates + host prior"
        return f"run-to-run: host prior from {self.benchmarks} benchmark{'s' * (self.benchmarks != 1)}"

    @property
    def d(self) -> float:
        return self.own.df if self.own is not None else 0.0


@dataclass(frozen=True)
class Judged:
    variance: RunVariance          # the posterior sigma_b^2 as the test takes it
    d0: float
    d: float
    blocked: StatWarning | None    # why the row must stay undecided, or None
    runs_needed: int | None        # runs a side that would decide a change of this size
    size: float                    # that change: the row's own, at least the noise floor


@dataclass(frozen=True)
class Choice:
    """The variance a row's data support: the prior's, its own replicates', or their moderation."""

    variance: float      # of a run's mean log
    df: float
    d0: float            # the prior's df in it (0: own replicates alone)
    weight: str          # "prior", "moderated" or "own"
    why: str = ""        # why own replicates alone, in words

    def source(self, known: str, runs: int) -> str:
        return f"own {runs} replicates alone ({self.why})" if self.weight == "own" else known


def choose(prior: Prior, own: Spread | None, part: float, skip: frozenset[str] = frozenset()) -> Choice:
    """The variance of a run's mean log that the row's data support, for a pair of runs of
    within-run part ``part`` (sigma_w^2 / n): the prior alone without replicates; with
    them, their own alone where the prior cannot describe one benchmark (d0 <= PRIOR_DF_MIN:
    no finite spread) or does not describe this one (F test, TAIL_ALPHA), else the moderated
    (d0 s0^2 + d s^2) / (d0 + d) on d0 + d df. The choice never looks at whether s^2 came out
    small (that would choose the test after seeing the data)."""
    s2, d = (own.s2, own.df) if own is not None else (math.nan, 0.0)
    variance, df = moderated(prior, s2, d, part)
    if own is None or not d > 0:
        return Choice(variance, df, prior.d0, "prior")
    typical = 100 * math.sqrt(prior.scale(part))
    if prior.d0 <= PRIOR_DF_MIN and WEAK_PRIOR not in skip:
        return Choice(own_variance(own, part), d, 0.0, "own", f"the host prior, {typical:.2g}% on d0 "
                      f"{prior.d0:.2g}, describes no benchmark in particular: its benchmarks' spreads differ "
                      "too widely")
    p = beyond_prior(prior, s2, d, part) if BEYOND_PRIOR not in skip else math.nan
    if p < TAIL_ALPHA:   # the prior does not describe this benchmark
        return Choice(own_variance(own, part), d, 0.0, "own",
                      f"they vary beyond the host prior's {typical:.2g}%, F test p = {p:.2g}")
    return Choice(variance, df, prior.d0, "moderated")


def own_variance(own: Spread, part: float) -> float:
    """A run mean's variance from the row's replicates, for runs of within-run part ``part``:
    their between-run part plus the larger of theirs and the pair's within-run parts (the
    levels add, Kalibera and Jones; a pair noisier inside than its replicates varies more)."""
    excess = part - own.within if math.isfinite(part) and math.isfinite(own.within) else 0.0
    return max(own.s2, 0.0) + max(excess, 0.0)


def within_run(x: np.ndarray) -> float:
    """The variance (n - 1) of the logs of a run's finite positive values; NaN below 2 of them."""
    logs = np.log(x[np.isfinite(x) & (x > 0)])
    return float(logs.var(ddof=1)) if logs.size >= 2 else math.nan


def judge(known: RunToRun, sizes: tuple[int, int], within_runs: tuple[float, float], *, floor: float,
          change: float, confidence: float = 0.95, skip: frozenset[str] = frozenset()) -> Judged | None:
    """The posterior run-to-run variance of a row of separate runs of ``sizes`` values a
    side (``within_runs``: each side's `within_run`) and whether the row may be judged at
    all; None without a prior. ``change`` (relative) and ``floor`` size the change that
    `runs_to_decide` is asked about: the larger of the two. ``skip``: rules, by kind, not applied."""
    prior = known.prior
    if prior is None:
        return None
    within = [w / size if size else math.nan for w, size in zip(within_runs, sizes)]   # sigma_w^2 / n a side
    n = 2 / sum(1 / size for size in sizes) if all(sizes) else math.nan
    finite = [w for w in within if math.isfinite(w)]
    part = sum(finite) / len(finite) if finite else math.nan
    chosen = choose(prior, known.own, part, skip)
    variance, df, d0 = chosen.variance, chosen.df, chosen.d0
    source = chosen.source(known.source, known.own_runs)
    if chosen.weight != "own" and prior.slope == 0.0 and math.isfinite(part):
        variance += _within_beyond(prior, part, known.default)
    blocked = _blocked(known, prior, within, skip)
    size = max(floor, abs(change)) if math.isfinite(change) else floor
    needed = runs_to_decide(variance, d0, size, alpha=1 - confidence)
    # as mean squares at the pair's run size: 2 s~^2 on d0 + d df is the difference's variance
    ms_within = part * n if math.isfinite(part) else math.nan
    run = RunVariance(variance, df, known.own_runs, source, variance * n, ms_within, max(n - 1, 1.0), n)
    return Judged(run, d0, known.d, blocked, needed, size)


def _within_beyond(prior: Prior, part: float, default: bool) -> float:
    """What a flat prior's s0^2 leaves out of the variance of a mean of runs of within-run
    part ``part`` (the levels add, Kalibera and Jones): the excess over its groups' typical
    within-run part; for perflab's ``default`` (fitted on another machine's runs, with no
    record of theirs), all of it: a run's own noise must never stand in for its level's (the
    pair's own variance on its Welch df was the test: 22.9% A/A on loaded separate runs)."""
    if default:
        return part
    return max(0.0, part - math.exp(prior.centre)) if math.isfinite(prior.low) else 0.0


def _unequal_load(known: RunToRun) -> str:
    """What was measured of the load beside the two runs, and why that leaves the row open."""
    shares = [*known.measured, "", ""][:2]
    if known.load[0] != known.load[1]:
        which, share = ("the base run", shares[0]) if known.load[0] else ("the new run", shares[1])
        return (f"separate runs: another load competed with {which} only"
                + (f" ({share} outside perflab)" if share else "") + ": a difference may be the load's; not judged")
    both = f" (base {shares[0]}, new {shares[1]})" if all(shares) else ""
    return (f"separate runs: both runs shared the machine with another load{both}, not shown equal within "
            "5 points (its clock ticks' error included): a difference may be the load's; not judged")


def two_groups(bimodal: tuple[bool, bool]) -> StatWarning:
    """Separate runs with values in two groups on a side, far enough apart to move the row
    across its verdict: a run's level is then how its samples split."""
    return StatWarning(TWO_GROUPS, "separate runs: values in two groups on "
                       + ("both sides" if all(bimodal) else "one side")
                       + ", far enough apart to move the row across its verdict: a run's level is then how its "
                       "samples split; not judged")


def load_blocked(known: RunToRun | None, skip: frozenset[str] = frozenset()) -> StatWarning | None:
    """The unequal-load rule alone: another load competed with the two runs and its shares
    are not shown equal (whatever variance the row is then judged with: a host prior's, or
    its own replicates' alone, as a calibration measured in another moment gives)."""
    if known is not None and any(known.unequal) and UNEQUAL_LOAD not in skip:
        return StatWarning(UNEQUAL_LOAD, _unequal_load(known))
    return None


def _blocked(known: RunToRun, prior: Prior, within: list[float], skip: frozenset[str]) -> StatWarning | None:
    """The first rule (by kind, less those in ``skip``) that leaves the row undecided."""
    unequal = load_blocked(known, skip)
    if unequal is not None:
        return unequal
    if BEYOND_PRIOR in skip:
        return None
    widest = max((w for w in within if math.isfinite(w)), default=math.nan)
    if prior.slope != 0.0 and math.isfinite(prior.high) and widest > math.exp(prior.high):
        inside, learned = 100 * math.sqrt(widest), 100 * math.exp(prior.high / 2)
        return StatWarning(BEYOND_PRIOR, f"separate runs: the noise of these runs' means ({inside:.2g}%, the "
                           f"spread inside a run over sqrt(n)) is beyond any the host prior learned from "
                           f"({learned:.2g}%); not judged")
    return None
