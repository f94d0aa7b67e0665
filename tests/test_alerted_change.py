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
