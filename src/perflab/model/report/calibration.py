"""``perflab calibrate``: the run-to-run spread of each point, beside its sample noise."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Calibration:
    benchmark: str
    point: str
    metric: str
    runs: int
    within_cov_pct: float    # the samples' own spread inside a run (sd of logs, in %)
    between_cov_pct: float   # the spread of the runs' levels beyond it (sigma_b, in %)
    df: float
