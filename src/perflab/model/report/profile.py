"""Profiles in reports: the profile rows beside a comparison, and one run's profile.

The rows of a comparison's profile (``ProfileReport``) sit in report/compare.py, beside
the report that holds them and the counters' report they hold.

Built by ``perflab.analysis.profile``; laid out by render/compare_profile.py (lkp style,
under a comparison) and render/profile.py (``perflab profile``). Shares are % of a
repetition's samples; changes are in percentage points, as the kernel test robot prints
``perf-profile.*`` stats. Shares have no better or worse, so their decisions are
``Shift`` values (up / down / no change / undecided).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perflab.model.params import Params, point_text
from perflab.model.report.outcomes import Interval, RuleOutcome
from perflab.model.verdicts import Shift


def stat_event(event: str) -> str:
    """An event as lkp writes it in a stat name: ``cycles:pp`` -> ``cycles-pp``."""
    return event.replace(":", "-") or "cycles-pp"


@dataclass(frozen=True, kw_only=True)
class ShareSide:
    """One side of a profile row: the share per repetition, their mean and population stddev."""

    values: tuple[float, ...]
    mean: float
    stddev: float   # population (ddof 0), as lkp's ±N%


@dataclass(frozen=True, kw_only=True)
class ProfileDelta:
    """One candidate against the baseline on one profile row."""

    change_points: float   # mean(new) - mean(base), percentage points
    ci: Interval           # t interval of the change (NaN with fewer than 2 values a side)
    p_value: float         # NaN for the rules and where no test is possible
    q_value: float         # Benjamini-Hochberg across the profile report (NaN: not tested)
    verdict: Shift
    rule: RuleOutcome | None = None

    @property
    def significant(self) -> bool:
        return self.verdict.significant


@dataclass(frozen=True, kw_only=True)
class ProfileRow:
    """One (benchmark, point, event, kind, symbol): every side's shares and each candidate's delta."""

    benchmark: str
    params: Params
    event: str
    kind: str                              # self / children / calltrace
    symbol: str                            # a calltrace's frames joined by ";", callee first
    sides: tuple[ShareSide | None, ...]    # baseline first; None: no profile of the point there
    deltas: tuple[ProfileDelta | None, ...]
    visible: bool                          # some side's mean share reaches lkp's 0.05% cut

    @property
    def name(self) -> str:
        """The lkp stat name, e.g. ``perf-profile.self.cycles-pp.__fget_light``."""
        return f"perf-profile.{self.kind}.{stat_event(self.event)}.{self.symbol.replace(';', '.')}"

    @property
    def point(self) -> str:
        return point_text(self.params)

    @property
    def changed(self) -> bool:
        return any(d is not None and d.significant for d in self.deltas)

    @property
    def size(self) -> float:
        """The largest |change| over the candidates (0 where none is known)."""
        changes = [abs(d.change_points) for d in self.deltas if d is not None and math.isfinite(d.change_points)]
        return max(changes, default=0.0)


# -- one run's profile ------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Share:
    """A symbol's (or a call trace's) share over the repetitions: mean, population sd, and
    that sd in % of the mean (lkp's ±N%; NaN where the mean is 0)."""

    name: str
    self_mean: float
    self_sd: float
    children_mean: float
    children_sd: float
    self_spread_pct: float = math.nan
    children_spread_pct: float = math.nan


@dataclass(frozen=True, kw_only=True)
class PointProfile:
    benchmark: str
    params: Params
    event: str
    repetitions: int
    symbols: list[Share]      # sorted by the chosen share, largest first
    calltraces: list[Share]   # self_* hold the share of the chain (callee first); children_* NaN

    @property
    def point(self) -> str:
        return point_text(self.params)
