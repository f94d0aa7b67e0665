"""``perflab verdict A B``: is run B like the known-good run A? (for ``git bisect run``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from perflab.model.records import RunInfo
from perflab.model.report.compare import Change, Row

#: The tests ``perflab verdict`` judges with (keys of model.methods.METHOD_NAMES), the
#: first the default: key -> why one would pick it (its --method help).
VERDICT_METHODS: dict[str, str] = {
    "mann-whitney": "Mann-Whitney U, on ranks (one stray run moves one rank)",
    "welch-log": "Welch's t-test on log values",
}
DEFAULT_VERDICT_METHOD = next(iter(VERDICT_METHODS))


class Outcome(str, enum.Enum):
    """The three-way answer, plus "skip" when B cannot be judged at all."""

    GOOD = "good"            # every judged row decided: no change or an improvement
    BAD = "bad"              # a significant regression beyond the noise floor
    UNDECIDED = "undecided"  # no regression found, but some row could not be decided
    SKIP = "skip"            # B has no usable samples (or none pairs with A)

    @property
    def exit_code(self) -> int:
        """git bisect run's codes: 0 good, 1 bad, 125 skip (undecided is never good)."""
        return {Outcome.GOOD: 0, Outcome.BAD: 1}.get(self, 125)


@dataclass(frozen=True, kw_only=True)
class RunVerdict:
    base: RunInfo
    candidate: RunInfo
    outcome: Outcome
    judged: tuple[tuple[Row, Change], ...]   # every row both runs have
    decisive: tuple[Row, Change] | None      # the worst regression, the first undecided row,
                                             # or the least favourable decided row
    test: str                                # the test and its error rates, one line
    missing: str = ""                        # what would decide an undecided verdict
    warnings: tuple[str, ...] = ()
