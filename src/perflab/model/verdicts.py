"""The words every report shares: verdicts, the side a warning concerns, warnings as values.

One vocabulary for compare, history, changes, change points, bisect and verdict, so a
change is called the same thing in every output. Kept in model/ (the lowest layer) so
that stats can return these values and render can read them without importing either.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from perflab.model.records import Direction

#: The one sign convention of every change perflab prints or writes as JSON (ab, compare,
#: verdict, history, changes, bisect, report, dashboard): % with + = better, the verdict
#: word (improvement, regression) saying which way; a field named raw_* is new/old - 1.
SIGN = "+ = better"


def oriented(change_pct: float, direction: Direction) -> float:
    """`change_pct` with positive = better: negated when lower values are better."""
    return -change_pct if direction is Direction.LOWER else change_pct


def oriented_ratio(ratio: float, direction: Direction) -> float:
    """new/base as a % change with positive = better (mmtests'); never -0."""
    return oriented(100.0 * (ratio - 1.0), direction) + 0.0


def better_pct(raw_pct: float, interval: tuple[float, float],
               lower_is_better: bool) -> tuple[float, tuple[float, float]]:
    """A raw % change (new/old - 1) and its interval in the SIGN convention."""
    if not lower_is_better:
        return raw_pct, interval
    return -raw_pct + 0.0, (-interval[1] + 0.0, -interval[0] + 0.0)

class Verdict(str, enum.Enum):
    """The three-way decision on one directed change (plus "no change" when the interval
    lies inside the noise floor). Compares equal to its text."""

    IMPROVEMENT = "improvement"
    REGRESSION = "regression"
    NO_CHANGE = "no change"
    UNDECIDED = "undecided"

    @property
    def significant(self) -> bool:
        """Carries the significance mark: a decided improvement or regression."""
        return self in (Verdict.IMPROVEMENT, Verdict.REGRESSION)


class Shift(str, enum.Enum):
    """The decision on an undirected quantity (a profile symbol's share of samples has
    no better or worse): it went up, down, stayed inside the floor, or the test could not
    tell."""

    UP = "up"
    DOWN = "down"
    NO_CHANGE = "no change"
    UNDECIDED = "undecided"

    @property
    def significant(self) -> bool:
        return self in (Shift.UP, Shift.DOWN)


class WarningSide(str, enum.Enum):
    """Which data a warning is about."""

    BASE = "base"
    CANDIDATE = "candidate"
    PAIR = "pair"        # the comparison of the two (unequal n, an undefined change ...)
    REPORT = "report"    # the whole report (runs on different machines ...)


@dataclass(frozen=True)
class StatWarning:
    """One thing the reader of a statistic should know before trusting it.

    ``kind`` is a stable machine-readable code (see ``perflab.stats.warnings``), the
    ``message`` one human line carrying the numbers, ``side`` the data it concerns
    (None until the statistic is placed in a report).
    """

    kind: str
    message: str
    side: WarningSide | None = None

    def on(self, side: WarningSide) -> StatWarning:
        """The same warning, placed on ``side``."""
        return StatWarning(self.kind, self.message, side)

    def __str__(self) -> str:
        return self.message
