"""mosum, the default detector: robust multiscale moving sums calibrated to a false-alarm
rate per point, also changes in spread (the search: stats/mosum.py; docs/methods.md)."""

from __future__ import annotations

import math
from dataclasses import replace

from perflab.model.methods import MosumParams
from perflab.stats.detectors.points import ChangePoint, Values
from perflab.stats.mosum import MIN_SEGMENT, search


def find(values: Values, params: MosumParams) -> list[ChangePoint]:
    """mosum's points, described by their segments; each keeps the search's own p (its
    search-corrected tail probability), step and 95% interval, for a spread change the
    ratio of the spreads after/before. Segments hold at least max(min_size, MIN_SEGMENT)."""
    if not params.false_rate > 0.0:
        raise ValueError(f"false_rate must be > 0, got {params.false_rate}")
    found = search(values.x, rate=params.false_rate, min_segment=max(params.min_size, MIN_SEGMENT),
                   spread=params.spread)
    points = values.describe([f.index for f in found], "mosum")
    out = []
    for point, f in zip(points, found):
        if f.kind == "mean" and params.min_magnitude > 0.0:
            level = abs(point.mean_before)
            if level > 0.0 and abs(f.magnitude) / level < params.min_magnitude:
                continue
        half = 1.959964 * f.sd
        if f.kind == "spread":  # a step of log f in log|difference|: the ratio f, no level step
            out.append(replace(point, p_value=f.p_value, kind=f.kind, change_pct=math.nan,
                               magnitude=math.exp(f.magnitude), ci_low=math.exp(f.magnitude - half),
                               ci_high=math.exp(f.magnitude + half)))
            continue
        out.append(replace(point, p_value=f.p_value, kind=f.kind, magnitude=f.magnitude,
                           ci_low=f.magnitude - half, ci_high=f.magnitude + half))
    return out
