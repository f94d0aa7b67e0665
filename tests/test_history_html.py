"""`perflab history --format html`: a real repository's series, opened in headless chromium."""

from __future__ import annotations

import json

import pytest

from browser import BROWSER_GROUP, chromium, click_change_point, console_errors, plot_traces, requested_urls
from conftest import run_cli
from test_history import long_history

pytestmark = BROWSER_GROUP   # the session's one browser: its tests run on one xdist worker


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    base = tmp_path_factory.mktemp("hhtml")
    db, repo, shas = long_history(base)
    out = base / "h.html"
    result = run_cli("history", "--metric", "ops", "--format", "html", "-o", str(out), db=db)
    assert result.returncode == 0, result.stderr
    data = json.loads(run_cli("history", "--metric", "ops", "--format", "json", db=db, check=True).stdout)
    return out, data, shas


def test_history_page_draws_samples_segments_and_change_points(page):
    out, data, shas = page
    series = data["series"]
    assert len(series) == 1 and series[0]["changes"]
    with chromium() as driver:
        driver.get(out.as_uri())
        assert plot_traces(driver) == [4]  # samples, medians, segment centres, change points
        plot = driver.execute_script("""var p = document.querySelector('.js-plotly-plot');
            return {names: p.data.map(t => t.name), samples: p.data[0].y.length, hover: p.data[1].text,
                    shapes: (p.layout.shapes || []).length, markers: p.data[3].x.length};""")
        assert plot["names"] == ["samples", "median per commit", "segment centre", "change point"]
        assert plot["markers"] == len(series[0]["changes"])
        points = series[0]["points"]
        assert plot["samples"] == sum(len(p["values"]) for p in points)
        assert plot["shapes"] == len(series[0]["changes"])
        change = series[0]["changes"][0]
        at = next(i for i, p in enumerate(points) if p["commit"] == change["commit"])
        hover = plot["hover"][at]
        index = shas.index(change["commit"])
        assert change["commit"][:12] in hover and f"change {index}" in hover  # commit and subject
        assert "n=" in hover and "segment centre" in hover
        assert all(u.startswith(("file:", "data:", "blob:", "about:")) for u in requested_urls(driver))
        assert console_errors(driver) == []


def test_a_click_on_a_change_point_shows_its_report(page):
    """The diamond of a change point, clicked as a reader would, leads to that change's
    report, embedded in the file: the text of 'perflab report change ID'."""
    out, data, _ = page
    change = data["series"][0]["changes"][0]
    db = str(out.parent / "perflab.db")
    expected = run_cli("report", "change", change["id"], db=db, check=True).stdout
    with chromium() as driver:
        driver.get(out.as_uri())
        assert "#" not in driver.current_url
        click_change_point(driver, change["id"])
        assert driver.current_url.endswith(f"#report-{change['id']}")
        shown = driver.execute_script("return document.querySelector(location.hash + ' pre').textContent;")
        assert shown.strip() == expected.strip()
        assert f"Change {change['id']}" in driver.execute_script(
            "return document.querySelector(location.hash + ' h2').textContent;")
        assert console_errors(driver) == []
