"""The history page's sample budget: a history of more samples than it draws each commit's
median and range (and says so), `--samples all` / `?samples=all` every sample; the CLI's file
and the dashboard's page draw the same. A fleet's store made by bench/fleet_generate.py, the
points counted in the page's plotly JSON and in what headless chromium drew."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from perflab.render.history_html import SAMPLE_BUDGET

from browser import BROWSER_GROUP, chromium, console_errors, draw_every_plot
from conftest import run_cli, serving

pytestmark = BROWSER_GROUP   # the session's one browser: its tests run on one xdist worker

ROOT = Path(__file__).resolve().parent.parent
HOSTS, REPETITIONS = 4, 5
COMMITS = SAMPLE_BUDGET // (HOSTS * REPETITIONS) + 50   # 1,000 samples over the budget
SAMPLES = COMMITS * HOSTS * REPETITIONS
MEDIANS = "median and range per commit"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """One benchmark's metric m0 on 4 hosts over COMMITS commits of 5 samples each, and its
    history as `history --format json` gives it (every sample, by series)."""
    base = tmp_path_factory.mktemp("budget")
    db = str(base / "fleet.db")
    subprocess.run([sys.executable, str(ROOT / "bench" / "fleet_generate.py"), "--db", db, "--repo", str(base / "repo"),
                    "--commits", str(COMMITS), "--hosts", str(HOSTS), "--benchmarks", "1", "--metrics", "1",
                    "--repetitions", str(REPETITIONS)], check=True, capture_output=True, timeout=600)
    data = json.loads(run_cli("history", "--metric", "m0", "--format", "json", db=db, check=True).stdout)
    assert sum(len(p["values"]) for s in data["series"] for p in s["points"]) == SAMPLES > SAMPLE_BUDGET
    return base, db, data


def figures(page: str) -> list[dict]:
    """Each chart's plotly figure, as the page carries it."""
    return [json.loads(spec) for spec in
            re.findall(r'<script type="application/json" id="series-\d+-figure">(.*?)</script>', page, re.S)]


def traces(figure: dict) -> dict[str, dict]:
    return {t["name"]: t for t in figure["data"]}


def drawn_line(page: str) -> str | None:
    found = re.search(r'<p class="drawn">(.*?)</p>', page, re.S)
    return re.sub(r"<[^>]+>", "", found.group(1)).replace("&#39;", "'") if found else None


def cli_page(fleet, *options: str) -> str:
    base, db, _ = fleet
    out = base / f"history{''.join(options)}.html"
    run_cli("history", "--metric", "m0", "--format", "html", "-o", str(out), *options, db=db, check=True)
    return out.read_text()


def test_over_the_budget_each_commit_is_its_median_and_range(fleet):
    _, _, data = fleet
    page = cli_page(fleet)
    shown = figures(page)
    assert len(shown) == len(data["series"]) == HOSTS
    for figure, series in zip(shown, data["series"]):
        drawn = traces(figure)
        assert "samples" not in drawn and MEDIANS in drawn   # no dot of a sample
        medians = drawn[MEDIANS]
        points = series["points"]
        assert len(medians["y"]) == len(medians["error_y"]["array"]) == len(points) == COMMITS
        for i, p in enumerate(points):  # the bar runs from the commit's lowest sample to its highest
            assert medians["y"][i] == pytest.approx(p["median"])
            assert medians["y"][i] + medians["error_y"]["array"][i] == pytest.approx(max(p["values"]))
            assert medians["y"][i] - medians["error_y"]["arrayminus"][i] == pytest.approx(min(p["values"]))
        hover = medians["text"][0]
        assert f"n={REPETITIONS}, median" in hover and ", range " in hover and "subsystem 0: change 0" in hover
        # the change points and segment centres as every page draws them
        assert len(drawn["change point"]["x"]) == len(series["changes"]) > 0 and "segment centre" in drawn
    line = drawn_line(page)
    assert line == (f"{COMMITS:,} commits x {HOSTS} hosts: each commit's median and range (lowest to highest "
                    f"sample); --samples all draws its {SAMPLES:,} samples (over the page's budget of "
                    f"{SAMPLE_BUDGET:,}).")


def test_samples_all_draws_every_sample(fleet):
    _, _, data = fleet
    page = cli_page(fleet, "--samples", "all")
    assert drawn_line(page) is None
    for figure, series in zip(figures(page), data["series"]):
        drawn = traces(figure)
        assert set(drawn) == {"samples", "median per commit", "segment centre", "change point"}
        assert drawn["samples"]["y"] == [v for p in series["points"] for v in p["values"]]


def test_samples_all_is_for_the_html_page_only(fleet):
    _, db, _ = fleet
    result = run_cli("history", "--metric", "m0", "--samples", "all", db=db)
    assert result.returncode == 2 and "--samples all is for --format html" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def _counted(driver) -> dict[str, int]:
    """Per trace name, the points chromium drew over every chart of the page."""
    draw_every_plot(driver)
    return driver.execute_script("""var counts = {};
        document.querySelectorAll('.js-plotly-plot').forEach(function (p) {
            p.data.forEach(function (t) { counts[t.name] = (counts[t.name] || 0) + t.y.length; });
        });
        return counts;""")


def test_the_dashboard_draws_the_cli_page_and_links_to_every_sample(fleet):
    """The dashboard's page over the budget draws what the CLI's file draws, says so, and its
    link (clicked in chromium, as a reader would) draws every one of the samples."""
    _, db, _ = fleet
    with serving(db) as (url, _, _):
        with urllib.request.urlopen(url + "/history?metric=m0", timeout=120) as response:
            page = response.read().decode()
        for mine, cli in zip(figures(page), figures(cli_page(fleet)), strict=True):
            assert traces(mine)[MEDIANS] == traces(cli)[MEDIANS]
            assert traces(mine)["segment centre"] == traces(cli)["segment centre"]
        with chromium() as driver:
            driver.get(url + "/history?metric=m0")
            counted = _counted(driver)
            assert counted[MEDIANS] == COMMITS * HOSTS and "samples" not in counted
            text = driver.find_element("css selector", "p.drawn").text
            assert text.startswith(f"{COMMITS:,} commits x {HOSTS} hosts: each commit's median and range")
            assert f"?samples=all draws its {SAMPLES:,} samples" in text
            driver.find_element("css selector", "p.drawn a").click()
            assert driver.current_url == url + "/history?metric=m0&samples=all"
            counted = _counted(driver)
            assert counted["samples"] == SAMPLES and counted["median per commit"] == COMMITS * HOSTS
            assert driver.find_elements("css selector", "p.drawn") == []
            assert console_errors(driver) == []
        for query, said in (("samples=some", "bad samples"), ("samples=x&samples=all", "bad samples"),
                            ("samples=all&format=text", "the text page has no sample dots")):
            try:
                urllib.request.urlopen(url + "/history?metric=m0&" + query, timeout=60)
                raise AssertionError(f"?{query} was not refused")
            except urllib.error.HTTPError as refused:
                assert refused.code == 400 and said in refused.read().decode(), query
