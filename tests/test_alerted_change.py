"""An alert outlives its detector's placement: when more commits move or dissolve the change
it was raised on, its report still reads the levels either side of the alerted commit, and
says that no detector places a change there now. A commit never alerted is not a change."""

from __future__ import annotations

import numpy as np
import pytest

from perflab.analysis.series import change_id, make_series, robot_change
from perflab.model.alerts import ALERTED_METHOD
from perflab.model.records import Direction, MetricInfo, RunInfo, RunStatus
from perflab.model.report.history import HistoryPoint


def _series():
    """30 commits, 5 samples each: the level doubles from commit 15 on."""
    rng = np.random.default_rng(7)
    points = [HistoryPoint(key=f"{i:040x}", commit=f"{i:040x}", describe=None,
                           runs=(RunInfo(i, "nightly", f"{i:040x}", None, "vm", 1000.0 + i, 1001.0 + i,
                                         RunStatus.COMPLETE, {}, {}),), on_line=False)
              for i in range(30)]
    samples = [rng.normal(10.0 if i < 15 else 20.0, 0.2, 5) for i in range(30)]
    return make_series("vm", "loop", {}, "{}", "time", "s", MetricInfo("time", "s", Direction.LOWER),
                       points, samples)


def test_an_alerted_commit_no_detector_places_reads_the_levels_either_side():
    series = _series()
    assert [c.index for c in series.changes] == [15]
    moved = change_id("vm", "loop", "{}", "time", series.points[16].point.key)   # alerted one commit late
    found = robot_change(series, moved, alerted=True)
    assert found is not None and found.method == ALERTED_METHOD and found.index == 16
    # bounded by the change the detector places now (15): both sides at the new level
    assert (found.before.first, found.after.end) == (15, 30) and abs(found.change_pct) < 5
    dissolved = robot_change(series, change_id("vm", "loop", "{}", "time", series.points[5].point.key), alerted=True)
    assert dissolved is not None and (dissolved.before.first, dissolved.after.end) == (0, 15)
    assert robot_change(series, moved) is None                 # never alerted: not a change


def test_a_level_is_back_when_nearer_the_old_one_by_ratio():
    """The CI lab's user times (ms): a 4x step 31.6 -> 118.6, then 9 commits of the VM 1.8x
    faster at 67.1, then the way back to 19.0. By differences 67.1 is nearer the old level
    (35.5 against 51.5); by ratio, as for any time, it is nearer the new one (2.1x against 1.8x)."""
    from perflab.analysis.alerts import _nearer
    assert not _nearer(67.06, 31.61, 118.6)
    assert _nearer(19.03, 31.61, 118.6)
    assert _nearer(-1.0, 0.0, 4.0) and not _nearer(3.0, 0.0, 4.0)   # a level at or below 0: by difference


def _alert(series, index: int, *, method: str = "tip", recovered_by: str | None = None, state: str = "untriaged"):
    from perflab.model.alerts import Alert
    key = series.points[index].point.key
    return Alert(index, 1, change_id("vm", "loop", "{}", "time", key), "vm", "loop", {}, "time", "s", "lower",
                 "regression", series.points[index - 1].point.key, key, 10.0, 20.0, 100.0, -100.0, 0.0, method,
                 state, None, recovered_by is not None, recovered_by, 0.0, 0.0)


def _excursion():
    """30 commits, 5 samples each: 10 s, 13 s for commits 12-15, then 10 s again: a level
    too short for the whole-series detector (a transient to mosum), alerted by the robot."""
    rng = np.random.default_rng(11)
    points = [HistoryPoint(key=f"{i:040x}", commit=f"{i:040x}", describe=None,
                           runs=(RunInfo(i, "nightly", f"{i:040x}", None, "vm", 1000.0 + i, 1001.0 + i,
                                         RunStatus.COMPLETE, {}, {}),), on_line=False)
              for i in range(30)]
    samples = [rng.normal(13.0 if 12 <= i < 16 else 10.0, 0.1, 5) for i in range(30)]
    return make_series("vm", "loop", {}, "{}", "time", "s", MetricInfo("time", "s", Direction.LOWER),
                       points, samples)


def test_the_one_change_list_ends_a_level_at_its_way_back():
    """analysis/levels: an alerted level the detectors no longer place is a change whose
    after side ends at the way back that recovered it; restored commits are not pooled."""
    from perflab.analysis.levels import levels
    series = _excursion()
    assert not series.changes   # mosum: a 4-commit excursion that came back is a transient
    back = change_id("vm", "loop", "{}", "time", series.points[16].point.key)
    found = levels(series, [_alert(series, 12, recovered_by=back)])
    step, way_back = found.changes
    assert (step.index, step.before.first, step.after.end, step.method) == (12, 0, 16, ALERTED_METHOD)
    assert step.oriented_pct == pytest.approx(-30, abs=1) and step.detection_p < 1e-6
    assert (way_back.index, way_back.before.first, way_back.after.end) == (16, 12, 30)
    assert levels(found, [_alert(series, 12, recovered_by=back)]) == found   # idempotent
    # without its way back known, the level runs to the end, diluted by the restored commits
    unbounded = levels(series, [_alert(series, 12)]).changes
    assert unbounded[0].after.end == 30 and abs(unbounded[0].oriented_pct) < 15
    # a withdrawn (invalid) or suspect alert is no level
    assert not levels(series, [_alert(series, 12, state="invalid", recovered_by=back)]).changes
    assert not levels(series, [_alert(series, 12, method="tip-suspect")]).changes


def test_an_alert_a_commit_from_the_detectors_step_is_that_step():
    from perflab.analysis.levels import levels
    series = _series()   # the detector's step at 15
    found = levels(series, [_alert(series, 16)])
    assert [(c.index, c.after.end) for c in found.changes] == [(15, 30)]
    assert found.changes == series.changes
