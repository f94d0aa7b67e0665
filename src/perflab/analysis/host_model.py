"""The host model: what the store knows of a host's run-to-run variance, per kind of metric.

Every replicate group on the host (`store.runs.replicates`: calibrate's runs, A/A pairs,
repeated runs of one thing) gives each of its benchmark, point and metric rows a
between-run variance (`stats.host_prior.spread`); the rows of one kind of metric fit one
prior (`stats.host_prior.fit_prior`, trended in the within-run variance where that
helps). The fit is stored and refitted when the host's replicate runs change.

A host with no prior of a kind borrows perflab's default of that kind (`DEFAULT_PRIORS`),
fitted by ``bench/aa_host_prior.py --fit-default`` on the recordings committed under
bench/data (wall time, CPU time); rates and counts, never recorded there, borrow wall time's
(docs/separate-runs.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from perflab.model.records import (
    OUTSIDE_METRIC_PREFIX,
    PRESSURE_METRIC_PREFIX,
    UNKNOWN_HOSTS,
    Direction,
    MetricInfo,
    RunInfo,
    is_monitor_metric,
)
from perflab.model.report.calibration import HostModelView, HostPriorLine
from perflab.stats.host_prior import Prior, Spread, fit_prior, metric_kind, spread
from perflab.stats.separate_runs import RunToRun
from perflab.stats.variance import RunVariance
from perflab.store import Store
from perflab.store.host_model import HostPrior

Key = tuple[str, str, str]   # benchmark, params JSON, metric

@dataclass(frozen=True)
class DefaultPrior:
    """perflab's prior of a kind of metric for a host that has none of its own."""

    prior: Prior
    benchmarks: int          # benchmarks it was fitted on
    stand_in: str = ""       # the kind whose prior it is, where none of its own was recorded


#: Flat (a trend learned on one machine, carried to another, understated a quiet benchmark's
#: spread: 18.9% A/A in the bench's simulation) and wide on purpose (docs/separate-runs.md).
#: Wall time: bench/data/noise*/ (12 benchmarks, three sessions idle to loaded, each
#: session's two runs of a benchmark a replicate pair, their first 30 values). CPU time: the
#: user and system times of bench/data/separate-runs/ (8 benchmarks x 12 runs of 30, loaded).
#: Rates and counts: none recorded, so wall time's, the widest (on logs a rate of fixed work
#: varies as its time does).
_WALL_TIME = Prior(s0_squared=0.004536, d0=0.7430, groups=36, data_df=36.0)
DEFAULT_PRIORS: dict[str, DefaultPrior] = {
    "wall time": DefaultPrior(_WALL_TIME, 12),
    "cpu time": DefaultPrior(Prior(s0_squared=0.004271, d0=1.8235, groups=16, data_df=166.0), 8),
    "rate": DefaultPrior(_WALL_TIME, 12, "wall time"),
    "count": DefaultPrior(_WALL_TIME, 12, "wall time"),
}


def replicate_spreads(store: Store, groups: Iterable[list[int]],
                      benchmarks: set[str] | None = None) -> dict[tuple[str, str, str], list[Spread]]:
    """(benchmark, point, metric) -> the spread of each replicate group that holds it."""
    out: dict[tuple[str, str, str], list[Spread]] = {}
    for ids in groups:
        per_key: dict[tuple[str, str, str], list[np.ndarray]] = {}
        for found in store.series.value_groups_of_runs(ids, benchmarks, None).values():
            for g in found:
                per_key.setdefault((g.benchmark, g.point, g.metric), []).append(g.values)
        for key, values in per_key.items():
            measured = spread(values)
            if measured is not None:
                out.setdefault(key, []).append(measured)
    return out


def kind_of(info: MetricInfo) -> str:
    return metric_kind(info.name, info.unit, info.direction is Direction.HIGHER)


def fit(spreads: dict[tuple[str, str, str], list[Spread]],
        infos: dict[tuple[str, str], MetricInfo]) -> dict[str, tuple[Prior, int]]:
    """Kind of metric -> (prior, benchmarks it learned from), from the groups' spreads."""
    by_kind: dict[str, list[tuple[str, Spread]]] = {}
    for (benchmark, _, metric), found in spreads.items():
        info = infos.get((benchmark, metric))
        # the machine's own watch (pressure, outside load, monitors) is not a benchmark's measure
        if info is None or metric.startswith((PRESSURE_METRIC_PREFIX, OUTSIDE_METRIC_PREFIX)) \
                or is_monitor_metric(metric):
            continue
        by_kind.setdefault(kind_of(info), []).extend((benchmark, s) for s in found)
    out = {}
    for kind, members in by_kind.items():
        prior = fit_prior([s.s2 for _, s in members], [s.df for _, s in members],
                          covariate=[s.within for _, s in members])
        if prior is not None:
            out[kind] = (prior, len({b for b, _ in members}))
    return out


def _infos(store: Store, benchmarks: Iterable[str]) -> dict[tuple[str, str], MetricInfo]:
    return {(b, name): info for b in set(benchmarks) for name, info in store.metrics.infos(b).items()}


def stamp_of(groups: list[list[int]]) -> str:
    """What a host model was fitted on: its replicate runs' count and newest id."""
    every = sorted(i for ids in groups for i in ids)
    return f"{len(every)}:{every[-1] if every else 0}"


def host_model(store: Store, host: str) -> list[HostPrior]:
    """The host's priors, refitted and stored first when its replicate runs changed."""
    groups = store.runs.replicates({host})
    stamp = stamp_of(groups)
    known = store.host_priors.load(host)
    if known and known[0].stamp == stamp or not known and not groups:
        return known
    spreads = replicate_spreads(store, groups)
    store.host_priors.save(host, stamp, fit(spreads, _infos(store, {k[0] for k in spreads})))
    return store.host_priors.load(host)


def _loads(store: Store, sides: list[list[RunInfo]]) -> tuple[tuple[bool, ...], tuple[bool, ...], tuple[str, ...]]:
    """Per side, whether another load competed with any of its runs (analysis.contention:
    the load outside perflab's cgroups beyond OUTSIDE_SHARE), whether its load is not
    shown equal to the base's (contention.same_load), and its CPU share in words."""
    from perflab.analysis.contention import cpu_share_text, outside_loads, same_load
    loads = [outside_loads(store, side) for side in sides]
    return (tuple(any(load.competed for load in side) for side in loads),
            tuple(not same_load(loads[0], side) for side in loads), tuple(cpu_share_text(side) for side in loads))


def _own(variance: RunVariance | None) -> Spread | None:
    if variance is None or not math.isfinite(variance.ms_between):
        return None
    # as the prior is fitted (stats.host_prior.spread): a run mean's variance, MS_between / n0,
    # and its within-run part MS_within / n0
    return Spread(variance.ms_between / variance.n0, variance.df, variance.ms_within / variance.n0, variance.n0)


def separate_runs_knowledge(store: Store, sides: list[list[RunInfo]], keys: Iterable[Key],
                            infos: dict[tuple[str, str], MetricInfo],
                            own: dict[Key, RunVariance | None]) -> dict[Key, RunToRun]:
    """Per row of single-run sides: the host prior of its kind of metric (the baseline's
    host; where the host has none, perflab's default of the kind if the row has no
    replicates of its own either, else no prior: its own replicates alone), its own
    replicates, on which sides another load competed and which sides' loads are not shown
    equal to the base's (``load`` and ``unequal`` hold every side; a cell takes its pair's).
    A host named 'unknown' has no model."""
    host = sides[0][0].host
    priors = _priors_without(store, host, {run.id for side in sides for run in side})
    load, unequal, measured = _loads(store, sides)
    out = {}
    for key in keys:
        kind = kind_of(infos[(key[0], key[2])])
        variance = own.get(key)
        learned = priors.get(kind)
        # the default stands in for nothing known; a row with replicates of its own on this
        # host is tested on them alone (the run as the unit) rather than on another machine's spread
        fallback = DEFAULT_PRIORS[kind] if learned is None and variance is None else None
        prior, benchmarks = learned or ((fallback.prior, fallback.benchmarks) if fallback else (None, 0))
        out[key] = RunToRun(prior, learned is None, benchmarks, _own(variance),
                            variance.runs if variance is not None else 0, load, unequal, kind,
                            fallback.stand_in if fallback else "", measured)
    return out


def _priors_without(store: Store, host: str, compared: set[int]) -> dict[str, tuple[Prior, int]]:
    """The host's priors by kind, fitted without the runs being compared: their own
    difference is what is tested, and a real change among them would widen the prior of
    every benchmark (the stored model when none of them is a replicate, else a refit)."""
    if host in UNKNOWN_HOSTS:
        return {}
    if not compared & {i for ids in store.runs.replicates({host}) for i in ids}:
        return {p.kind: (p.prior, p.benchmarks) for p in host_model(store, host)}
    spreads = replicate_spreads(store, store.runs.replicates({host}, exclude=compared))
    return fit(spreads, _infos(store, {k[0] for k in spreads}))


def view(store: Store | None, host: str) -> HostModelView:
    """The host model as shown by doctor and calibrate: the host's priors (none without a
    store), and perflab's default for each kind the host has none of."""
    learned = host_model(store, host) if store is not None and host not in UNKNOWN_HOSTS else []
    lines = [_line(p.kind, p.prior, p.benchmarks, False) for p in learned]
    known = {p.kind for p in learned}
    lines += [_line(kind, default.prior, default.benchmarks, True, default.stand_in)
              for kind, default in DEFAULT_PRIORS.items() if kind not in known]
    return HostModelView(host=host, priors=tuple(lines))


def _line(kind: str, prior: Prior, benchmarks: int, default: bool, stand_in: str = "") -> HostPriorLine:
    return HostPriorLine(kind=kind, spread_pct=prior.cov_pct, d0=prior.d0, groups=prior.groups, benchmarks=benchmarks,
                         trended=prior.slope != 0.0, default=default,
                         stand_in=stand_in)
