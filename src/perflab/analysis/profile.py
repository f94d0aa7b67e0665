"""Profiles beside a comparison: which symbols' shares changed, and the counters that moved.

A profile row is one (benchmark, point, event, kind, symbol) with kind ``self`` or
``children`` (or ``calltrace``: a chain of frames, callee first). Each repetition of a
point gives one value, the % of that repetition's samples; a symbol missing from a
repetition that has a profile counts as 0 (it was under perf_profile's 0.05% cut).

The change is the absolute difference of the means in **percentage points**, as the
kernel test robot prints ``perf-profile.*`` stats (seed 003: ``30.90 -20.6 10.35``).
Shares have no better or worse direction, so the verdicts are ``Shift`` values: up / down /
no change / undecided. Significance follows the report's method: Welch's t on
the shares themselves (not their logs: shares are additive and are often 0) for
``welch-log``, Mann-Whitney U for ``mann-whitney``, the tools' rules for ``mmtests`` and
``lkp``. The tested rows of the profile report share one Benjamini-Hochberg budget,
apart from the metric table's (so asking for ``--profile`` never changes a metric's
verdict), and a change must exceed a noise floor of ``NOISE_FLOOR_POINTS``.

Counters (``perf-stat.*``, ``vmstat.*`` ..., see ``model.records.is_monitor_metric``)
are compared like metrics, in a comparison of their own.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from perflab.analysis.compare import Filters, compare_runs, single_benchmark_name
from perflab.analysis.compare_report import rule_outcome
from perflab.model.errors import UsageError
from perflab.model.methods import METHOD_NAMES
from perflab.model.params import Params, point_text
from perflab.model.records import RunInfo
from perflab.model.report.compare import CompareReport, ProfileReport
from perflab.model.report.outcomes import Interval
from perflab.model.report.profile import PointProfile, ProfileDelta, ProfileRow, Share, ShareSide
from perflab.model.verdicts import Shift
from perflab.stats import RuleResult, benjamini_hochberg, lkp_range_rule, mann_whitney, mmtests_band_rule, welch_t
from perflab.store import Store
from perflab.store.profiles import ProfileSymbol, ProfileTrace

KINDS = ("self", "children", "calltrace")
NOISE_FLOOR_POINTS = 0.1   # percentage points below which no change is claimed
MIN_PCT = 0.05             # lkp drops shares under 0.05%
# Rows are tested (and share the FDR budget) only when their mean share over both sides
# pooled reaches this. The filter is independent of the test under the null (Bourgon,
# Gentleman & Huber 2010): without it the dozens of kernel symbols a noisy machine brings
# above 0.05%, a few samples each, widen the family until a real 25-point shift seen in
# 3 repetitions a side misses q < 0.05.
TEST_MIN_PCT = 0.5
PROFILE_METHOD_NAMES = {
    "welch-log": "Welch t-test on the shares (percentage points)",
    "mann-whitney": "Mann-Whitney U test",
    "mmtests": METHOD_NAMES["mmtests"],
    "lkp": METHOD_NAMES["lkp"],
}


def no_profile(run: RunInfo) -> UsageError:
    return UsageError(f"run {run.id} has no profile; record one with --monitor perf-profile")


def no_event(run: RunInfo, event: str, events: Sequence[str]) -> UsageError:
    return UsageError(f"run {run.id} has no profile of event {event!r}; it has {', '.join(events)}")


# -- comparison -------------------------------------------------------------------------------
def _rule_text(method: str, method_name: str, q: float, tested: int, noise_floor: float) -> str:
    """One sentence: how a profile row is called changed."""
    if method in ("mmtests", "lkp"):
        return f"{method_name} on the shares, no FDR control"
    return (f"{method_name}, Benjamini-Hochberg FDR {100 * q:g}% over the {tested} "
            f"profile comparisons of rows with a mean share of {TEST_MIN_PCT:g}% or more "
            f"(smaller rows are listed, not tested), change beyond {noise_floor:g} points")


Key = tuple[str, str, str, str, str]   # benchmark, point (normalised JSON), event, kind, symbol
Points = dict[str, Params]     # each point's parameters (as the store decoded them) by its JSON


def _side(store: Store, runs: Sequence[RunInfo], filters: Filters, kinds: Sequence[str],
          points: Points) -> tuple[dict[Key, np.ndarray], dict[tuple[str, str, str], int]]:
    """Every profile row of one side (the repetitions of its runs pooled): its value per
    repetition (0 where a profiled repetition lacks it), and how many repetitions each
    (benchmark, point, event) has profiled."""
    benchmarks = set(filters.benchmarks) or None
    values: dict[Key, dict[tuple[int, int], float]] = {}
    repetitions: dict[tuple[str, str, str], set[tuple[int, int]]] = {}

    def keep(row: ProfileSymbol | ProfileTrace) -> bool:
        points.setdefault(row.point, row.params)
        return not filters.params or filters.keeps(row.params)

    profiled = store.profiles.profiled_runs(r.id for r in runs)
    for run in (r for r in runs if r.id in profiled):
        for s in store.profiles.symbols(run.id, benchmarks):
            if not keep(s):
                continue
            rep = (run.id, s.repetition)
            repetitions.setdefault((s.benchmark, s.point, s.event), set()).add(rep)
            for kind, value in (("self", s.self_pct), ("children", s.children_pct)):
                if kind in kinds:
                    values.setdefault((s.benchmark, s.point, s.event, kind, s.symbol), {})[rep] = value
        if "calltrace" in kinds:
            for t in store.profiles.traces(run.id, "calltrace", benchmarks):
                if keep(t):
                    rep = (run.id, t.repetition)
                    repetitions.setdefault((t.benchmark, t.point, t.event), set()).add(rep)
                    values.setdefault((t.benchmark, t.point, t.event, "calltrace", t.frames), {})[rep] = t.value
    out = {}
    for key, by_rep in values.items():
        reps = sorted(repetitions[key[:3]])
        out[key] = np.array([by_rep.get(r, 0.0) for r in reps], dtype=float)
    return out, {point: len(reps) for point, reps in repetitions.items()}


def _pair_single_benchmarks(sides: list[tuple[dict[Key, np.ndarray], dict[tuple[str, str, str], int]]]) -> None:
    """One benchmark per run under different names (./tool vs ./tool-new) pairs up, as in compare."""
    base = single_benchmark_name([{k[0] for k in side} for side, _ in sides])
    if base is not None:
        for i in range(1, len(sides)):
            values, reps = sides[i]
            sides[i] = ({(base, *k[1:]): v for k, v in values.items()},
                        {(base, *k[1:]): n for k, n in reps.items()})


def _values(side: tuple[dict[Key, np.ndarray], dict[tuple[str, str, str], int]], key: Key) -> np.ndarray | None:
    """A row's values on one side; zeros where the side profiled the point but never saw the
    symbol (lkp's 0.00 of a new symbol); None where it has no profile of the point."""
    values, reps = side
    found = values.get(key)
    if found is None and key[:3] in reps:
        return np.zeros(reps[key[:3]])
    return found


def _pooled_mean(base: np.ndarray, new: np.ndarray) -> float:
    """A row's mean share over both sides together (the independent filter's statistic)."""
    return float(np.concatenate([base, new]).mean()) if base.size + new.size else 0.0


def _mean(values: np.ndarray | None) -> float:
    return float(values.mean()) if values is not None and values.size else math.nan


def _verdict(change: float, ci: Interval, floor: float, rejected: bool, rule: RuleResult | None) -> Shift:
    if rule is not None and rule.changed:
        return Shift.UP if rule.sign > 0 else Shift.DOWN
    if rule is None and rejected and abs(change) > floor:
        return Shift.UP if change > 0 else Shift.DOWN
    if ci.known and -floor <= ci.low and ci.high <= floor:
        return Shift.NO_CHANGE
    return Shift.UNDECIDED


@dataclass(frozen=True)
class _Tested:
    """A profile row's test before the report's FDR control decides it."""

    change_points: float
    ci: Interval
    p_value: float
    rule: RuleResult | None


def _delta(base: np.ndarray, new: np.ndarray, method: str, confidence: float) -> _Tested:
    change = _mean(new) - _mean(base)
    welch = welch_t(base, new, log=False, confidence=confidence)
    rule, p = None, math.nan
    if method == "welch-log":
        p = welch.p_value
    elif method == "mann-whitney":
        p = mann_whitney(base, new)
    elif method == "mmtests":
        rule = mmtests_band_rule(base, new)
    else:
        rule = lkp_range_rule(base, new)
    return _Tested(change, Interval(low=welch.ci_low, high=welch.ci_high, confidence=confidence), p, rule)


def _share_side(values: np.ndarray | None) -> ShareSide | None:
    if values is None:
        return None
    return ShareSide(values=tuple(float(v) for v in values), mean=_mean(values),
                     stddev=float(values.std()) if values.size else math.nan)


def compare_profiles(store: Store, runs: list[RunInfo], *, filters: Filters = Filters(),
                     method: str = "welch-log", q: float = 0.05, confidence: float = 0.95,
                     kinds: Sequence[str] = ("self", "children"),
                     noise_floor: float = NOISE_FLOOR_POINTS) -> ProfileReport:
    """The profile rows of base vs each candidate, tested and sorted by the size of the change.

    Raises UsageError naming the first run without any profile row (after the filters).
    """
    return _compare_sides(store, [[run] for run in runs], list(runs), filters=filters, method=method, q=q,
                          confidence=confidence, kinds=kinds, noise_floor=noise_floor)


def compare_pooled_profiles(store: Store, base_runs: list[RunInfo], new_runs: list[RunInfo], *,
                            filters: Filters = Filters(), q: float = 0.05,
                            kinds: Sequence[str] = ("self", "children")) -> ProfileReport:
    """Like compare_profiles for two sides of several runs each (the commits before a change
    and from it on), their repetitions pooled; labelled by the last base and first new run."""
    return _compare_sides(store, [base_runs, new_runs], [base_runs[-1], new_runs[0]], filters=filters,
                          method="welch-log", q=q, confidence=0.95, kinds=kinds,
                          noise_floor=NOISE_FLOOR_POINTS)


def _compare_sides(store: Store, side_runs: list[list[RunInfo]], runs: list[RunInfo], *, filters: Filters,
                   method: str, q: float, confidence: float, kinds: Sequence[str],
                   noise_floor: float) -> ProfileReport:
    if method not in PROFILE_METHOD_NAMES:
        raise UsageError(f"unknown method {method!r}; choose from {', '.join(PROFILE_METHOD_NAMES)}")
    unknown = set(kinds) - set(KINDS)
    if unknown:
        raise UsageError(f"unknown profile kind {sorted(unknown)[0]!r}; choose from {', '.join(KINDS)}")
    points: Points = {}
    sides = [_side(store, members, filters, kinds, points) for members in side_runs]
    for run, (side, _) in zip(runs, sides):
        if not side:
            raise no_profile(run)
    _pair_single_benchmarks(sides)
    keys = list(dict.fromkeys(k for side, _ in sides for k in side))

    items: list[tuple[Key, np.ndarray | None, list[np.ndarray | None], list[_Tested | None]]] = []
    for key in keys:
        base, others = _values(sides[0], key), [_values(side, key) for side in sides[1:]]
        if not any(_mean(v) >= MIN_PCT for v in [base, *others] if v is not None):
            continue  # under the cut everywhere, as lkp drops it
        deltas = [_delta(base, o, method, confidence) if base is not None and o is not None else None
                  for o in others]
        items.append((key, base, others, deltas))

    tested = [((i, c), d) for i, (_, base, others, deltas) in enumerate(items)
              for c, (d, new) in enumerate(zip(deltas, others))
              if d is not None and d.rule is None and base is not None and new is not None
              and _pooled_mean(base, new) >= TEST_MIN_PCT]  # a delta has both sides
    pending = [ic for ic, _ in tested]
    fdr = benjamini_hochberg([d.p_value for _, d in tested], q)
    rejected = {ic: (bool(r), float(a)) for ic, r, a in zip(pending, fdr.rejected, fdr.adjusted)}
    result = []
    for i, (key, base, others, deltas) in enumerate(items):
        decided: list[ProfileDelta | None] = []
        for c, d in enumerate(deltas):
            if d is None:
                decided.append(None)
                continue
            hit, q_value = rejected.get((i, c), (False, math.nan))
            decided.append(ProfileDelta(change_points=d.change_points, ci=d.ci, p_value=d.p_value, q_value=q_value,
                                        verdict=_verdict(d.change_points, d.ci, noise_floor, hit, d.rule),
                                        rule=rule_outcome(d.rule)))
        sides_ = tuple(_share_side(v) for v in [base, *others])
        result.append(ProfileRow(benchmark=key[0], params=points[key[1]], event=key[2], kind=key[3], symbol=key[4],
                                 sides=sides_, deltas=tuple(decided),
                                 visible=any(s is not None and s.mean >= MIN_PCT for s in sides_)))
    result.sort(key=lambda item: (-item.size, item.benchmark, item.params and json.dumps(item.params),
                                  KINDS.index(item.kind), item.symbol))
    warnings = []
    for run, (side, _) in zip(runs, sides):
        seen = {k[:2] for k in side}
        for other in keys:
            if other[:2] not in seen:
                warnings.append(f"{run.label} has no profile of {other[0]} {point_text(points[other[1]])}")
                seen.add(other[:2])
    name = PROFILE_METHOD_NAMES[method]
    return ProfileReport(rows=tuple(result), method=method, method_name=name, q=q, noise_floor=noise_floor,
                         tested=len(pending), rule=_rule_text(method, name, q, len(pending), noise_floor),
                         counters=None, warnings=tuple(warnings))


def compare_counters(store: Store, runs: list[RunInfo], *, filters: Filters = Filters(),
                     method: str = "welch-log", q: float = 0.05, confidence: float = 0.95,
                     noise_floor: float | None = None) -> CompareReport | None:
    """The monitor metrics (perf-stat.*, vmstat.* ...) of the runs, compared like metrics, in a
    report (and FDR budget) of their own; None when no run has any. Those named with
    ``--metric`` are in the main table already and are left out here."""
    only_params = Filters(filters.benchmarks, filters.params, frozenset())
    try:
        return compare_runs(store, runs, filters=only_params, method=method, q=q, confidence=confidence,
                            noise_floor=noise_floor, monitor_metrics=True, exclude_metrics=filters.metrics)
    except UsageError:
        return None  # nothing recorded by a monitor (or only metrics already in the main table)


def profile_report(store: Store, runs: list[RunInfo], *, filters: Filters = Filters(),
                   method: str = "welch-log", q: float = 0.05, confidence: float = 0.95,
                   noise_floor: float | None = None,
                   kinds: Sequence[str] = ("self", "children")) -> ProfileReport:
    """What ``perflab compare --profile`` adds: profile deltas and the counters beside them."""
    profile = compare_profiles(store, runs, filters=filters, method=method, q=q, confidence=confidence,
                               kinds=kinds)
    return replace(profile, counters=compare_counters(store, runs, filters=filters, method=method, q=q,
                                                      confidence=confidence, noise_floor=noise_floor))


# -- one run's profile ------------------------------------------------------------------------
def _spread(mean: float, sd: float) -> float:
    """The population sd in % of the mean (lkp's ±N%); NaN where the mean is not positive."""
    return 100.0 * sd / mean if mean > 0 and math.isfinite(sd) else math.nan


def run_profile(store: Store, run: RunInfo, *, filters: Filters = Filters(), order: str = "self",
                top: int | None = 20, event: str | None = None) -> list[PointProfile]:
    """Per (benchmark, point, event): every symbol's self and children share, largest first;
    only ``event``'s when given."""
    points: Points = {}
    sides, _ = _side(store, [run], filters, KINDS, points)
    if not sides:
        raise no_profile(run)
    if event is not None:
        events = list(dict.fromkeys(key[2] for key in sides))
        if event not in events:
            raise no_event(run, event, events)
        sides = {key: values for key, values in sides.items() if key[2] == event}
    groups: dict[tuple[str, str, str], dict[str, dict[str, np.ndarray]]] = {}
    for (benchmark, params, event, kind, symbol), values in sides.items():
        groups.setdefault((benchmark, params, event), {}).setdefault(symbol, {})[kind] = values
    out = []
    for (benchmark, params, event), by_symbol in groups.items():
        reps = max(v.size for kinds in by_symbol.values() for v in kinds.values())

        def stats(values: np.ndarray | None) -> tuple[float, float]:
            if values is None:
                return 0.0, 0.0
            return float(values.mean()), float(values.std())

        symbols, traces = [], []
        for symbol, kinds in by_symbol.items():
            if "calltrace" in kinds:
                m, sd = stats(kinds["calltrace"])
                traces.append(Share(name=symbol, self_mean=m, self_sd=sd, children_mean=math.nan, children_sd=math.nan,
                                    self_spread_pct=_spread(m, sd)))
            if "self" in kinds or "children" in kinds:
                (sm, ssd), (cm, csd) = stats(kinds.get("self")), stats(kinds.get("children"))
                symbols.append(Share(name=symbol, self_mean=sm, self_sd=ssd, children_mean=cm, children_sd=csd,
                                     self_spread_pct=_spread(sm, ssd), children_spread_pct=_spread(cm, csd)))
        if order == "children":
            symbols.sort(key=lambda s: (-s.children_mean, -s.self_mean, s.name))
        else:
            symbols.sort(key=lambda s: (-s.self_mean, -s.children_mean, s.name))
        traces.sort(key=lambda s: (-s.self_mean, s.name))
        symbols = [s for s in symbols if max(s.self_mean, s.children_mean) >= MIN_PCT]
        traces = [t for t in traces if t.self_mean >= MIN_PCT]
        out.append(PointProfile(benchmark=benchmark, params=points[params], event=event, repetitions=reps,
                                symbols=symbols[:top] if top else symbols, calltraces=traces[:top] if top else traces))
    return out


# -- folded stacks for flame graphs -------------------------------------------------------------
def folded_stacks(store: Store, run: RunInfo, *, filters: Filters = Filters(),
                  event: str | None = None) -> dict[tuple[str, ...], float]:
    """Root-first stacks -> weight summed over the repetitions of ``event`` (default: the
    first recorded). With several points each gets a root frame ``benchmark point``."""
    benchmarks = set(filters.benchmarks) or None
    rows = [t for t in store.profiles.traces(run.id, "stack", benchmarks)
            if not filters.params or filters.keeps(t.params)]
    if not rows:
        raise no_profile(run)
    events = list(dict.fromkeys(t.event for t in rows))
    chosen = event or events[0]
    if chosen not in events:
        raise no_event(run, chosen, events)
    rows = [t for t in rows if t.event == chosen]
    points = list(dict.fromkeys((t.benchmark, t.point) for t in rows))
    stacks: dict[tuple[str, ...], float] = {}
    for t in rows:
        frames = tuple(t.frames.split(";"))
        if len(points) > 1:
            frames = (f"{t.benchmark} {point_text(t.params)}" if t.params else t.benchmark, *frames)
        stacks[frames] = stacks.get(frames, 0.0) + t.value
    return stacks
