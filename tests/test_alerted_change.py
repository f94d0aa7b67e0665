"""An alert outlives its detector's placement: when more commits move or dissolve the change
it was raised on, its report still reads the levels either side of the alerted commit, and
says that no detector places a change there now. A commit never alerted is not a change."""

from __future__ import annotations

import numpy as np

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
