"""``perflab calibrate``: the run-to-run spread of each point, beside its sample noise."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Calibration:
    benchmark: str
    point: str
    metric: str
    runs: int
    within_cov_pct: float    # the samples' own spread inside a run (sd of logs, in %)
    between_cov_pct: float   # the spread of the runs' levels beyond it (sigma_b, in %)
    df: float


@dataclass(frozen=True, kw_only=True)
class HostPriorLine:
    """One kind of metric's prior of run-to-run variance on a host (analysis.host_model)."""

    kind: str                # wall time, cpu time, rate, count
    spread_pct: float        # sqrt(s0^2) of logs, in % (at the groups' typical within-run spread)
    d0: float                # its degrees of freedom: small = the host's benchmarks differ widely
    groups: int              # replicate groups it was fitted on
    benchmarks: int
    trended: bool            # conditioned on the within-run spread (limma-trend)
    default: bool            # perflab's default, not learned on this host
    stand_in: str = ""       # a default borrowed from this kind: none of its own recorded


@dataclass(frozen=True, kw_only=True)
class HostModelView:
    host: str
    priors: tuple[HostPriorLine, ...]
