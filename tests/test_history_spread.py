"""A change of the noise's spread alone through history's model and its renderers (text,
JSON, HTML): kind "spread", its ratio, never a % step of the level or a verdict."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from perflab.analysis.series import make_series
from perflab.model.records import Direction, MetricInfo, RunInfo, RunStatus
from perflab.model.report.history import ORDER_TIME, History, HistoryPoint
from perflab.model.verdicts import Verdict
from perflab.render.history import change_line, history_json, render_history
from perflab.render.history_html import render_history_html


def spread_history() -> History:
    """600 commits of one sample each; the noise widens 4x from commit 300, the level stays."""
    values = np.random.default_rng(3).normal(0, 1, 600)
    values[300:] *= 4
    points = [HistoryPoint(key=f"{i:040x}", commit=f"{i:040x}", describe=None,
                           runs=(RunInfo(i, "nightly", f"{i:040x}", None, "vm", 1000.0 + i, 1001.0 + i,
                                         RunStatus.COMPLETE, {}, {}),), on_line=False)
              for i in range(600)]
    series = make_series("vm", "nap", {}, "{}", "time", "s", MetricInfo("time", "s", Direction.LOWER),
                         points, [np.array([10.0 + v / 10]) for v in values], method="mosum", spread=True)
    return History(series=(series,), order=ORDER_TIME, repo=None)


def test_a_spread_change_keeps_its_kind_and_shows_its_ratio():
    history = spread_history()
    (change,) = [c for c in history.changes() if abs(c.index - 300) <= 10]
    assert change.kind == "spread" and 2 < change.spread_ratio < 8
    assert math.isnan(change.change_pct) and change.verdict is Verdict.UNDECIDED
    line = change_line(change, 1.0, "s")
    assert f"spread x{change.spread_ratio:.2f}" in line and "%" not in line.splitlines()[0]
    text = render_history(history)
    assert f"spread x{change.spread_ratio:.2f} undecided  [{change.id}]" in text
    (listed,) = [c for c in json.loads(history_json(history))["series"][0]["changes"] if c["id"] == change.id]
    assert listed["change_kind"] == "spread" and listed["change_pct"] is None
    assert listed["spread_ratio"] == pytest.approx(change.spread_ratio, rel=1e-6)
    page = render_history_html(history)
    assert f"spread x{change.spread_ratio:.2f}" in page and "nan%" not in page


def test_history_reports_no_spread_change_by_default():
    history = spread_history()
    series = history.series[0]
    again = make_series("vm", "nap", {}, "{}", "time", "s", series.info, [p.point for p in series.points],
                        [np.array(p.values) for p in series.points], method="mosum")
    assert all(c.kind == "mean" for c in again.changes)
