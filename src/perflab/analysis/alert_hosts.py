"""One change seen on several hosts: one alert summary, and a way back seen on one host
looked for on the others.

Each host's series keeps its own detectors and its own alerts (its noise, its levels, its
commit range), but a change of one stat (benchmark, point, metric) in one direction whose
commit ranges on two hosts share a candidate culprit is one change: the second host's
alert joins the first one's summary (unless a summary of its own range exists: alerts of
one range stay one summary). On one host, a benchmark's alerts whose ranges share a
candidate culprit are one change too (one point's change spread over two commits, the
other's one step at the second). Ranges are half-open, (last good, first bad]: two
hosts that measured different commits around the change (a fleet spreads its jobs)
overlap; a change placed on distinct commits is two summaries until bisect names one.

A way back seen on one host (its alert recovered by a later change) is looked for at the
same commit on each other host of the summary, reading that host's own series: its alert is
recovered there when the level from that commit differs from the alerted one (Welch's
t-test of the per-commit medians, p < levels.ALPHA, a test at one place named by the other
host, not a search) and lies nearer the old level than the alerted one (levels.nearer).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence

from perflab.analysis.levels import ALPHA, nearer
from perflab.analysis.series import change_at, change_id
from perflab.model.alerts import INVALID, Alert
from perflab.model.report.history import ALERTED_METHOD, Change, History, Series

__all__ = ["alerted_already", "peer_summary", "positions", "way_back_elsewhere"]


def _stat(host_free: Alert | Change) -> tuple[str, str, str, str]:
    kind = host_free.kind if isinstance(host_free, Alert) else host_free.verdict.value
    return (host_free.benchmark, json.dumps(host_free.params, sort_keys=True, default=str), host_free.metric, kind)


def peer_summary(alerts: Sequence[Alert], c: Change, order: Mapping[str, int]) -> int | None:
    """The summary of the oldest alert of ``c``'s change on another host, or of its
    benchmark on its own host, over a range that shares a commit with ``c``'s (see the
    module); ``order`` every point's key -> its place in history order (`positions`); None
    when there is none."""
    found = _overlapping(alerts, c, order, lambda a: a.benchmark == c.benchmark if a.host == c.host
                         else _stat(a) == _stat(c))
    return found.summary_id if found is not None else None


def alerted_already(alerts: Sequence[Alert], c: Change, order: Mapping[str, int]) -> Alert | None:
    """The alert of ``c``'s own series and kind over a range that shares a commit with
    ``c``'s: the same change, alerted as another detector placed it (the tip detector's
    step at a commit, then the whole-series detector's change spread from the one before)."""
    return _overlapping(alerts, c, order, lambda a: a.host == c.host and _stat(a) == _stat(c))


def positions(history: History) -> dict[str, int]:
    """Each point's key -> its place in history order (made once for a pass over the series)."""
    return {k: i for i, k in enumerate(history.keys)}


def _overlapping(alerts: Sequence[Alert], c: Change, at: Mapping[str, int],
                 wanted: Callable[[Alert], bool]) -> Alert | None:
    """The oldest alert (not invalid) that ``wanted`` takes whose range (last good, first
    bad] shares a commit with ``c``'s; ``at`` each point's key -> its place in history order."""
    mine = tuple(at.get(k) for k in c.commit_range)
    if None in mine:
        return None
    for a in sorted(alerts, key=lambda a: a.id):
        if a.state == INVALID or not wanted(a):
            continue
        theirs = (at.get(a.last_good), at.get(a.first_bad))
        if None not in theirs and theirs[0] < mine[1] and mine[0] < theirs[1]:  # type: ignore[operator]
            return a
    return None


def way_back_elsewhere(alert: Alert, alerts: Sequence[Alert], history: History, s: Series) -> Change | None:
    """The way back of ``alert`` (on series ``s``) at the commit where another host's alert
    of its summary recovered, read on ``s`` (see the module), or None."""
    keys = [p.point.key for p in s.points]
    if alert.first_bad not in keys or not (math.isfinite(alert.before) and math.isfinite(alert.after)):
        return None
    start = keys.index(alert.first_bad)
    order = positions(history)
    for peer in alerts:
        if peer.summary_id != alert.summary_id or peer.host == alert.host or not peer.recovered:
            continue
        back = _recovery_key(peer, history)
        if back is None or back not in order:
            continue
        # the first point of ``s`` at or after that commit (this host may not have measured it)
        j = next((i for i, k in enumerate(keys) if order.get(k, -1) >= order[back]), None)
        if j is None or j <= start:
            continue
        later = [c.index for c in (*s.changes, *((s.tip,) if s.tip else ())) if c.index > j]
        found = change_at(s, j, start, min(later, default=len(keys)), method=ALERTED_METHOD)
        if found.detection_p < ALPHA and nearer(found.after.centre, alert.before, alert.after):
            return found
    return None


def _recovery_key(peer: Alert, history: History) -> str | None:
    """The point key where ``peer``'s recovering change starts, on ``peer``'s own series."""
    for s in history.series:
        if (s.host, s.benchmark, s.metric) != (peer.host, peer.benchmark, peer.metric):
            continue
        for p in s.points:
            if change_id(s.host, s.benchmark, s.params_key, s.metric, p.point.key) == peer.recovered_by:
                return p.point.key
    return None
