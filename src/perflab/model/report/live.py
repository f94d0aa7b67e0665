"""What the live view of a sampling run shows: per benchmark and point, the numbers so far."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class LiveRow:
    name: str            # benchmark and point
    unit: str
    n: int
    median: float
    ci_low: float        # distribution-free 95% interval of the median (NaN while too few)
    ci_high: float


@dataclass(frozen=True, kw_only=True)
class LiveView:
    rows: tuple[LiveRow, ...]
    decision: str | None = None   # `perflab ab`'s current decision, one line
