"""One series of a history: its points' summaries and its changes.

Detection runs on one value per point, the median of its samples (Otava works on one
value per commit; the median, so that one wild sample of a commit neither hides nor fakes
a change; missing points and failed runs are NaN gaps the detectors skip), by mosum by
default (``resolve_method``), E-divisive, PELT or binseg when asked; the newest commits are
also read by the tip detector (stats/tip.py: ``Series.tip``, a suspect or a confirmed new
level after the last change). Changes smaller than the metric's noise floor are dropped.
A change's size and verdict come from that same estimator: each segment's centre is the
mean of its per-point medians, the change % is between the two centres, oriented by the
metric's direction. The raw samples' mean ± sd and Welch p-value of the two neighbouring
segments are kept beside it (optimistic: samples of one commit share a build), with the
detector's own p-value on the per-point medians. The points are commits: detection keeps
an excursion of a few commits that comes back (a change and its fix), places each change
robustly, gives it a p its commits can support and names the commits of a change spread
over several (stats/commit_series.py).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from perflab.model.methods import AUTO_METHOD, DetectSettings, change_point_method, resolve_method
from perflab.model.params import Params
from perflab.model.records import MetricInfo
from perflab.model.report.history import (
    ALERTED_METHOD,
    CONFIRMED,
    SUSPECT,
    TIP_METHOD,
    Change,
    ChangePart,
    HistoryPoint,
    PointSummary,
    Segment,
    Series,
    SeriesPoint,
    directed_verdict,
)
from perflab.model.verdicts import oriented

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from perflab.stats.detectors.points import ChangePoint


def _summaries(samples: Sequence[np.ndarray]) -> list[PointSummary]:
    from perflab.stats.summary import group_stats
    found = group_stats(samples)
    defined = np.isfinite(found.sd) & (found.mean != 0)
    cov = np.full(found.sd.shape, math.nan)
    cov[defined] = 100.0 * found.sd[defined] / found.mean[defined]
    return [PointSummary(n=n, median=median, mean=mean, stddev=sd, cov_pct=pct)
            for n, median, mean, sd, pct in zip(found.n.tolist(), found.median.tolist(), found.mean.tolist(),
                                                found.sd.tolist(), cov.tolist(), strict=True)]


def preload() -> None:
    """Import what detection and change reports import lazily (see stats.changepoints.preload),
    solve the tip detector's bars for long histories, and build the reader of kept change
    points (0.06 s) and their code's digest: for the dashboard, whose first history page
    would otherwise pay for them."""
    from perflab.stats import changepoints, summary, tip  # noqa: F401
    changepoints.preload()
    tip.solve_long_history_bars()
    _change_points()
    _detector_code()


def make_series(host: str, benchmark: str, params: Params, params_key: str, metric: str, unit: str,
                info: MetricInfo, points: Sequence[HistoryPoint], samples: Sequence[np.ndarray],
                method: str = AUTO_METHOD, spread: bool = False, kept: KeptDetections | None = None) -> Series:
    """One series with its summaries and change points (see the module's description);
    with ``spread`` (mosum) changes in the noise's spread as well, of kind "spread". With
    ``kept``, the change points the store keeps for these very values are taken, not searched."""
    from perflab.stats.changepoints import detect as find_points
    summaries = _summaries(samples)
    centres = np.array([s.median for s in summaries])
    finite = int(np.isfinite(centres).sum())
    chosen = resolve_method(method, finite)
    # one group of samples per point: detection on their medians
    # points are commits (stats/commit_series.py), but for the spread search, which reads
    # the noise of samples
    settings = DetectSettings(min_magnitude=info.noise_floor, spread=spread)
    found = _DETECTED.get(samples, chosen + "+spread" * spread, info.noise_floor, lambda: find_points(
        list(samples), method=chosen, params=change_point_method(chosen).params_from(settings), centre="median",
        commits=not spread), kept, series_key(host, benchmark, params_key, metric, spread=spread))
    changes = []
    for k, cp in enumerate(found):
        # each side from the neighbouring change's new level to this one's first commit
        before = _segment(samples, centres, found[k - 1].last if k else 0, cp.index)
        after = _segment(samples, centres, cp.last, found[k + 1].index if k + 1 < len(found) else len(points))
        raw = (100.0 * (after.centre - before.centre) / before.centre
               if before.centre != 0 and cp.kind == "mean" else math.nan)  # spread: no level step
        better = oriented(raw, info.direction)
        previous = next(points[i] for i in range(cp.index - 1, -1, -1) if samples[i].size)
        point = points[cp.index]
        changes.append(Change(
            id=change_id(host, benchmark, params_key, metric, point.key),
            host=host, benchmark=benchmark, params=params, metric=metric, unit=unit,
            direction=info.direction, index=cp.index, point=point, previous=previous,
            before=before, after=after, change_pct=raw, oriented_pct=better,
            verdict=directed_verdict(better), p_value=cp.p_value,
            detection_p=welch_p(centres[before.first:before.end], centres[after.first:after.end]),
            method=chosen, kind=cp.kind, spread_ratio=cp.magnitude if cp.kind == "spread" else math.nan,
            parts=tuple(ChangePart(index=i, point=points[i], share=share) for i, share in cp.parts)))
    shown = [abs(s.median) for s in summaries if math.isfinite(s.median) and s.median != 0]
    typical = float(np.median(shown)) if shown else 0.0
    series = Series(host=host, benchmark=benchmark, params=params, params_key=params_key, metric=metric, unit=unit,
                    info=info,
                    points=tuple(SeriesPoint(point=p, values=tuple(x.tolist()), summary=s)
                          for p, x, s in zip(points, samples, summaries)),
                    changes=tuple(changes), method=chosen, typical=typical)
    return replace(series, tip=tip_change(series, samples))


def tip_change(series: Series, samples: Sequence[np.ndarray] | None = None,
               since: int | None = None) -> Change | None:
    """The tip detector's finding (stats/tip.py) on the newest commits of ``series``, as a
    Change of status "suspect" or "confirmed" and method "tip"; the history it reads starts
    at ``since`` (default: the series' last change). None when it finds nothing, when the
    whole-series detector has the same change, or when its size is below the noise floor."""
    from perflab.stats.tip import look
    centres = np.array(series.medians(), dtype=float)
    if since is None:  # from the last change's new level (after a spread change's last part)
        since = (series.changes[-1].parts[-1].index if series.changes[-1].parts
                 else series.changes[-1].index) if series.changes else 0
    found = look(centres, since=since)
    if found.status not in (SUSPECT, CONFIRMED) or any(c.index == found.start for c in series.changes):
        return None
    c = change_at(series, found.start, since, len(series.points), samples, method=TIP_METHOD, status=found.status)
    if math.isfinite(c.change_pct) and abs(c.change_pct) / 100.0 < series.info.noise_floor:
        return None
    return c


def change_at(series: Series, index: int, first: int, end: int, samples: Sequence[np.ndarray] | None = None, *,
              method: str, status: str = CONFIRMED) -> Change:
    """A Change of ``series`` at point ``index``, between the segments [first, index) and
    [index, end), found by ``method``."""
    if samples is None:
        samples = [np.asarray(p.values, dtype=float) for p in series.points]
    centres = np.array(series.medians(), dtype=float)
    before = _segment(samples, centres, first, index)
    after = _segment(samples, centres, index, end)
    raw = 100.0 * (after.centre - before.centre) / before.centre if before.centre else math.nan
    better = oriented(raw, series.info.direction)
    points = [p.point for p in series.points]
    previous = next(points[i] for i in range(index - 1, -1, -1) if samples[i].size)
    return Change(
        id=change_id(series.host, series.benchmark, series.params_key, series.metric, points[index].key),
        host=series.host, benchmark=series.benchmark, params=series.params, metric=series.metric,
        unit=series.unit, direction=series.info.direction, index=index, point=points[index],
        previous=previous, before=before, after=after, change_pct=raw, oriented_pct=better,
        verdict=directed_verdict(better), p_value=math.nan,
        detection_p=welch_p(centres[first:index], centres[index:end]), method=method, status=status)


def robot_change(series: Series, wanted: str, *, alerted: bool = False) -> Change | None:
    """The change whose id starts with ``wanted`` among the levels a robot looking at every
    commit confirmed (stats/tip.confirmed_starts, after the series' own changes): an alert the
    tip detector raised on a short history whose whole-series search no longer separates it.
    Else, for an ``alerted`` change that no detector places now (more data moved or dissolved
    it), the levels either side of its commit, method ALERTED_METHOD."""
    from perflab.stats.tip import confirmed_starts
    keys = [change_id(series.host, series.benchmark, series.params_key, series.metric, p.point.key)
            for p in series.points]
    if not any(k.startswith(wanted) for k in keys):
        return None
    bounds = sorted({c.index for c in series.changes} | set(confirmed_starts(series.medians())))
    edges = [0, *bounds, len(series.points)]
    for i, b in enumerate(bounds, start=1):
        if keys[b].startswith(wanted):
            return change_at(series, b, edges[i - 1], edges[i + 1], method=TIP_METHOD)
    at = next((i for i, k in enumerate(keys) if k.startswith(wanted) and i > 0), None)
    if at is None or not alerted:
        return None
    first = max((b for b in bounds if b < at), default=0)
    end = min((b for b in bounds if b > at), default=len(series.points))
    return change_at(series, at, first, end, method=ALERTED_METHOD)


class KeptDetections:
    """The change points a store keeps by series (store.detections), as read for a history:
    ``kept`` series key -> (digest, JSON); with ``writing`` (the robot's pass), ``found``
    collects those detected or known anew whose kept row is missing or stale, to be kept."""

    def __init__(self, kept: dict[str, tuple[str, str]], *, writing: bool = False):
        self.kept, self.writing = kept, writing
        self.found: dict[str, tuple[str, str]] = {}

    def take(self, key: str, digest: str) -> list[ChangePoint] | None:
        """The change points kept under ``key`` for values of ``digest``; None when none
        are, or what is kept does not read as change points (then they are found again)."""
        row = self.kept.get(key)
        if row is None or row[0] != digest:
            return None
        from pydantic import ValidationError
        try:
            return _change_points().validate_json(row[1])
        except ValidationError:
            return None

    def note(self, key: str, digest: str, found: list[ChangePoint]) -> None:
        if self.writing and self.kept.get(key, ("",))[0] != digest:
            self.found[key] = (digest, json.dumps([dataclasses.asdict(cp) for cp in found]))


@functools.cache
def _change_points() -> TypeAdapter[list[ChangePoint]]:
    from pydantic import TypeAdapter

    from perflab.stats.detectors.points import ChangePoint
    return TypeAdapter(list[ChangePoint])


@functools.cache
def _detector_code() -> bytes:
    """A digest of the code that decides a series' change points (perflab's version, the
    sources of perflab.stats, the methods' registry and this module): change points kept by
    another perflab are searched again, never taken for what this one would find."""
    from pathlib import Path

    import perflab
    root = Path(perflab.__file__).parent
    digest = hashlib.sha256(perflab.__version__.encode())
    for path in sorted([*root.joinpath("stats").rglob("*.py"), root / "model" / "methods.py", Path(__file__)]):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"")
    return digest.digest()


def series_key(host: str, benchmark: str, params_key: str, metric: str, *, spread: bool) -> str:
    """The key of one series' kept change points (its spread search's apart)."""
    text = "\0".join((host, benchmark, params_key, metric, "spread" if spread else "level"))
    return hashlib.sha1(text.encode()).hexdigest()


class _DetectionCache:
    """Change points already found, keyed by the series' own values (every point's samples,
    with the method and noise floor): a dashboard drawing the same history again skips the
    detector, and a run that lands changes the values, so nothing stale is ever returned.
    Hashing the values costs far less than reading them, which the page needs anyway. Below
    it, the store's (KeptDetections): what the robot found on the same values."""

    def __init__(self, size: int = 64):
        self._size = size
        self._found: OrderedDict[str, list[Any]] = OrderedDict()
        self._lock = threading.Lock()  # the dashboard serves pages from several threads

    def get(self, samples: Sequence[np.ndarray], method: str, floor: float, detect: Callable[[], list[Any]],
            kept: KeptDetections | None = None, key: str = "") -> list[Any]:
        digest = hashlib.sha256(_detector_code() + f"{method}\0{floor!r}\0".encode())
        digest.update(np.array([x.size for x in samples], dtype="<i8").tobytes())
        if samples:
            digest.update(np.concatenate(samples, dtype="<f8").tobytes())
        values = digest.hexdigest()
        with self._lock:
            found = self._found.get(values)
            if found is not None:
                self._found.move_to_end(values)
        if found is None and kept is not None:
            found = kept.take(key, values)
        if found is None:
            found = detect()
        with self._lock:
            self._found[values] = found
            self._found.move_to_end(values)
            while len(self._found) > self._size:
                self._found.popitem(last=False)
        if kept is not None:
            kept.note(key, values, found)
        return found


_DETECTED = _DetectionCache()


def welch_p(a: np.ndarray, b: np.ndarray) -> float:
    from perflab.stats import welch_t
    return welch_t(a[np.isfinite(a)], b[np.isfinite(b)]).p_value


def _segment(samples: Sequence[np.ndarray], centres: np.ndarray, first: int, end: int) -> Segment:
    part = samples[first:end]
    x = np.concatenate(part) if part else np.empty(0)
    c = centres[first:end]
    c = c[np.isfinite(c)]
    return Segment(first=first, end=end, points=int(c.size), n=int(x.size),
                   centre=float(c.mean()) if c.size else math.nan,
                   centre_sd=float(c.std(ddof=1)) if c.size > 1 else math.nan,
                   mean=float(x.mean()) if x.size else math.nan,
                   stddev=float(x.std(ddof=1)) if x.size > 1 else math.nan)


def change_id(host: str, benchmark: str, params_key: str, metric: str, point_key: str) -> str:
    text = "\0".join((host, benchmark, params_key, metric, point_key))
    return hashlib.sha1(text.encode()).hexdigest()[:10]
