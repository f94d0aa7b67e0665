"""Commit series through `perflab history` and `perflab changepoints` (issue 38): an excursion
of a few commits that comes back is two changes, the newest commits are shown, a short
series gets a p its commits can support and a robust place, and a change spread over
commits names each one's share. Runs are written through the Store API the runner uses
(tests/test_history.py's `stored_series`); the same values go to `changepoints` as a file."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from conftest import run_cli
from test_history import stored_series

# issue 38, item 8: a will-it-scale history of 10 commits recorded here, one outlying commit
# (index 1) before the step at index 6
WILL_IT_SCALE = [495956, 250119, 465118, 450258, 458140, 485906, 239946, 247451, 249088, 246560]


def samples_of(levels: list[float], rng: np.random.Generator, runs: int = 5, sd: float = 0.003) -> list[list[float]]:
    """``runs`` samples per commit about each level (relative sd ``sd``)."""
    return [list(level * (1 + sd * rng.standard_normal(runs))) for level in levels]


def history_series(db: str) -> dict:
    data = json.loads(run_cli("history", "--format", "json", db=db, check=True).stdout)
    (series,) = data["series"]
    return series


def file_points(tmp_path, levels: list[list[float]]) -> list[dict]:
    """`changepoints --format json` of the samples written as a CSV of commits."""
    path = tmp_path / "series.csv"
    path.write_text("commit,value\n" + "".join(f"c{i:03d},{float(v)!r}\n" for i, values in enumerate(levels)
                                              for v in values))
    data = json.loads(run_cli("changepoints", str(path), "--format", "json", check=True).stdout)
    (column,) = data["columns"]
    assert column["commits"] is True
    return column["change_points"]


def recorded(tmp_path, levels: list[list[float]]) -> tuple[dict, list[dict], list[str]]:
    db = str(tmp_path / "perflab.db")
    shas = stored_series(db, levels)
    return history_series(db), file_points(tmp_path, levels), shas


def test_a_short_history_places_the_step_robustly_with_a_p_its_commits_support(tmp_path):
    """10 commits of 5 runs each: pooled as independent samples the two sides gave p < 1e-300
    and the step at index 5 (still the old level); the commits' own values give index 6 and
    a p that 10 values can support (Welch's t-test of the commits, docs/change-detection.md)."""
    levels = samples_of(WILL_IT_SCALE, np.random.default_rng(8))
    series, points, shas = recorded(tmp_path, levels)
    (change,) = series["changes"]
    assert change["index"] == 6 and change["commit"] == shas[6]
    assert 1e-6 < change["p_value"] < 0.05 and 1e-6 < change["detection_p"] < 0.05, change
    (point,) = points
    assert point["index"] == 6 and point["label"] == "c006"
    assert point["p_value"] == pytest.approx(change["p_value"], rel=1e-6)


def test_an_excursion_of_seven_commits_that_comes_back_is_two_changes(tmp_path):
    """+10 sd for commits 7-13 of 21, then back: a regression and its fix (mosum alone took
    an excursion shorter than 16 points for a burst, the right call for samples only)."""
    rng = np.random.default_rng(21)
    noise = 0.01
    medians = 1.0 + noise * rng.standard_normal(21)
    medians[7:14] += 10 * noise
    series, points, _ = recorded(tmp_path, samples_of(list(medians), rng, sd=0.001))
    assert [c["index"] for c in series["changes"]] == [7, 14]
    assert [c["kind"] for c in series["changes"]] == ["regression", "improvement"]
    assert [p["index"] for p in points] == [7, 14]


def test_a_step_on_the_last_three_of_33_commits_is_shown(tmp_path):
    """+10 sd on the newest 3 commits: too few for the whole-series detector's segments, the
    tip detector's (suspect or confirmed) in both."""
    rng = np.random.default_rng(33)
    medians = 1.0 + 0.01 * rng.standard_normal(33)
    medians[30:] += 0.1
    series, points, _ = recorded(tmp_path, samples_of(list(medians), rng, sd=0.001))
    shown = [*series["changes"], *([series["tip"]] if series["tip"] else [])]
    assert [c["index"] for c in shown] == [30], shown
    assert shown[0]["status"] in ("suspect", "confirmed") and shown[0]["kind"] == "regression"
    assert [p["index"] for p in points] == [30], points
    assert points[0]["status"] in ("suspect", "confirmed")
    db = str(tmp_path / "perflab.db")
    text = run_cli("history", db=db, check=True).stdout
    assert "newest commits (tip detector)" in text or "change [" in text
    # the chart draws the new level, not one centre line across it (issue 40)
    page = tmp_path / "h.html"
    run_cli("history", "--format", "html", "-o", str(page), db=db, check=True)
    figure = json.loads(re.search(r'<script type="application/json"[^>]*>(.*?)</script>', page.read_text(),
                                  re.S).group(1))
    (centre,) = [t for t in figure["data"] if t["name"] == "segment centre"]
    levels = [(x, y) for x, y in zip(centre["x"], centre["y"]) if y is not None]
    assert levels[-1][1] == pytest.approx(float(np.median(medians[30:])), rel=0.01), levels
    assert levels[-3][1] == pytest.approx(float(np.median(medians[:30])), rel=0.01), levels
    (marks,) = [t for t in figure["data"] if t["name"] == "change point"]
    assert marks["x"] == [29.5] and "newest commits" in marks["text"][0]


def test_a_change_spread_evenly_over_three_commits_names_each_one(tmp_path):
    """The level moves a third of the way at each of commits 15, 16 and 17 (10 sd each):
    one change spread over those three, each carrying about a third, not one at 100%."""
    rng = np.random.default_rng(15)
    noise = 0.01
    medians = 1.0 + noise * rng.standard_normal(36)
    medians[15:] += 30 * noise * np.clip((np.arange(15, 36) - 14) / 3, 0, 1)
    series, points, shas = recorded(tmp_path, samples_of(list(medians), rng, sd=0.001))
    (change,) = series["changes"]
    assert change["index"] == 15 and change["commit"] == shas[15]
    assert [p["commit"] for p in change["parts"]] == shas[15:18]
    assert [p["share"] for p in change["parts"]] == pytest.approx([1 / 3] * 3, abs=0.1)
    # the centres either side leave the commits of the change out: the whole 30 sd
    assert change["raw_change_pct"] == pytest.approx(30, abs=3)
    db = str(tmp_path / "perflab.db")
    text = run_cli("history", db=db, check=True).stdout
    assert f"spread over 3 commits ({shas[15][:8]}..{shas[17][:8]})" in text, text
    assert "(over 3 commits)" in run_cli("changes", db=db, check=True).stdout
    (point,) = points
    assert [(p["index"], p["label"]) for p in point["parts"]] == [(15, "c015"), (16, "c016"), (17, "c017")]
    table = run_cli("changepoints", str(tmp_path / "series.csv"), check=True).stdout
    assert "3 commits carry it: c015 3" in table, table


def test_a_change_spread_over_30_commits_is_found(tmp_path):
    """A 24% improvement (times fall) spread evenly over 30 commits, 2% noise, 10 commits
    either side: the default detector finds it within those commits, as one change or a
    few, each an improvement (mosum alone took the ramp for drift and found nothing)."""
    rng = np.random.default_rng(30)
    done = np.clip((np.arange(50) - 9) / 30, 0, 1)
    medians = (1.0 - 0.24 * done) * (1 + 0.02 * rng.standard_normal(50))
    series, points, _ = recorded(tmp_path, samples_of(list(medians), rng, sd=0.002))
    assert series["changes"], series
    assert all(10 <= c["index"] <= 40 and c["kind"] == "improvement" for c in series["changes"])
    assert sum(c["change_pct"] for c in series["changes"]) > 10
    assert points and all(10 <= p["index"] <= 40 for p in points)


def test_a_tip_level_after_a_change_ends_the_changes_level_line(tmp_path):
    """1.0 for 30 commits, 1.2 for 27 (a change), 1.5 for the newest 3 (the tip detector's):
    the chart's centre lines are three levels side by side, the middle one ending where the
    tip's begins (analysis.levels bounds a change by the tip's finding; a chart drawn from
    unbounded changes would draw it to the end, over the new level, at the mean of both)."""
    rng = np.random.default_rng(57)
    medians = np.r_[np.full(30, 1.0), np.full(27, 1.2), np.full(3, 1.5)] * (1 + 0.005 * rng.standard_normal(60))
    series, _, _ = recorded(tmp_path, samples_of(list(medians), rng, sd=0.001))
    assert [c["index"] for c in series["changes"]] == [30] and series["tip"]["index"] == 57, series
    page = tmp_path / "h.html"
    run_cli("history", "--format", "html", "-o", str(page), db=str(tmp_path / "perflab.db"), check=True)
    figure = json.loads(re.search(r'<script type="application/json"[^>]*>(.*?)</script>', page.read_text(),
                                  re.S).group(1))
    (centre,) = [t for t in figure["data"] if t["name"] == "segment centre"]
    lines = [(x, y) for x, y in zip(centre["x"], centre["y"]) if y is not None]
    spans = [(lines[i][0], lines[i + 1][0], lines[i][1]) for i in range(0, len(lines), 2)]
    assert [(round(a), round(b)) for a, b, _ in spans] == [(0, 29), (30, 56), (57, 59)], spans
    assert [y for _, _, y in spans] == pytest.approx([1.0, 1.2, 1.5], rel=0.02)
