"""What a test or a rule says of one change: its confidence interval, a reference tool's
verdict. The rows of a comparison (report.compare) and of a profile (report.profile) carry them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from perflab.model.verdicts import StatWarning


@dataclass(frozen=True, kw_only=True)
class Interval:
    low: float
    high: float
    confidence: float
    warnings: tuple[StatWarning, ...] = ()   # why it is undefined or wider than asked

    @property
    def known(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)


@dataclass(frozen=True, kw_only=True)
class RuleOutcome:
    """A reference tool's rule (mmtests band, lkp range): no p-value, its own verdict."""

    name: str
    changed: bool
    detail: str
