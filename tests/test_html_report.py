"""`perflab compare --format html`: one self-contained page, opened in a real headless
chromium: no console error, every chart drawn, the table's numbers those of --format
json, a hostile label shown as text and never run, no request off the machine."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from perflab.model.run_request import RunRequest

from browser import BROWSER_GROUP, chromium, console_errors, draw_every_plot, drawn_plots, plot_traces, requested_urls
from conftest import run_cli

pytestmark = BROWSER_GROUP   # the session's one browser: its tests run on one xdist worker

HOSTILE = "<img src=x onerror=alert(1)>"
LABELS = ("base", "slow", HOSTILE)


@pytest.fixture(scope="module")
def sweep_db(tmp_path_factory):
    """Three runs of a two-point sweep; the third labelled with markup."""
    db = str(tmp_path_factory.mktemp("html") / "perflab.db")
    for label, extra in zip(LABELS, ("0", "0", "5")):
        run_cli("run", "-n", "6", "--label", label, "--name", "nap", "-p", "ms=1,3", "-q", "--",
                "sh", "-c", f"sleep 0.00{{ms}}{extra}", db=db, check=True)
    return db


@pytest.fixture(scope="module")
def report(sweep_db, tmp_path_factory):
    out = tmp_path_factory.mktemp("out") / "cmp.html"
    result = run_cli("compare", *LABELS, "--format", "html", "-o", str(out), db=sweep_db)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    data = json.loads(run_cli("compare", *LABELS, "--format", "json", db=sweep_db, check=True).stdout)
    return out, data


@pytest.fixture(scope="module")
def browser():
    with chromium() as driver:
        yield driver


def test_file_is_self_contained_and_escapes(report):
    path, _ = report
    text = path.read_text()
    # plotly is embedded: no script, stylesheet or image loaded from elsewhere
    assert not re.search(r"<(script|link|img)[^>]*(src|href)=\"(?!data:)", text[:text.index("<script>") + 8] + text[
        text.index("</head>"):])
    body = text[text.index("</head>"):]
    assert HOSTILE not in body  # only ever escaped
    assert "&lt;img src=x onerror=alert(1)&gt;" in body


def test_opens_in_chromium_with_every_chart_drawn_and_no_error(report, browser):
    path, data = report
    browser.get(path.as_uri())
    browser.implicitly_wait(0)
    traces = plot_traces(browser)
    plots = browser.execute_script("return document.querySelectorAll('div.plot').length;")
    # one block per metric of the sweep: distribution, measurement order, sweep
    metrics = {row["metric"] for row in data["rows"]}
    assert plots == 3 * len(metrics)
    assert len(traces) == plots and all(n >= 1 for n in traces), traces
    kinds = browser.execute_script(
        "return Array.from(document.querySelectorAll('div.plot')).map(p => [p.dataset.kind, p.data.length]);")
    for kind, n in kinds:
        if kind in ("distribution", "sweep"):
            assert n == len(LABELS)  # one trace per side
    assert console_errors(browser) == []


def test_table_numbers_are_those_of_json(report, browser):
    path, data = report
    browser.get(path.as_uri())
    cells = browser.execute_script("""
        return Array.from(document.querySelectorAll('#compare-table tr.row')).map(tr =>
            Array.from(tr.querySelectorAll('td.side, td.change')).map(td =>
                [td.className, Number(td.dataset.side), JSON.parse(td.dataset.values), td.textContent]));""")
    assert len(cells) == len(data["rows"])
    for row, shown in zip(data["rows"], cells):
        sides = [row["base"], *row["candidates"]]
        for cls, index, values, text in shown:
            if "side" in cls.split():
                for key, value in values.items():
                    assert value == sides[index][key], (row["point"], row["metric"], key)
            else:
                comparison = sides[index]["comparison"]
                for key, value in values.items():
                    assert value == comparison[key], (row["point"], row["metric"], key)
                if comparison["change_pct"] is not None:
                    assert text.startswith(f"{comparison['change_pct']:+.2f}%")


def test_hostile_label_is_text_and_runs_nothing(report, browser):
    from selenium.common.exceptions import NoAlertPresentException

    path, _ = report
    browser.get(path.as_uri())
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert  # noqa: B018 (an alert would be the injected script)
    assert browser.execute_script("return document.querySelectorAll('img').length;") == 0
    headers = [th.text for th in browser.find_elements("css selector", "#compare-table th")]
    assert HOSTILE in headers
    draw_every_plot(browser)
    legend = browser.execute_script(
        "return Array.from(document.querySelectorAll('.legendtext')).map(t => t.textContent);")
    assert HOSTILE in legend


def test_no_request_leaves_the_machine(report, browser):
    path, _ = report
    browser.get_log("performance")  # drop what earlier tests loaded
    browser.get(path.as_uri())
    urls = requested_urls(browser)
    assert urls, "the performance log recorded no request at all"
    off = [u for u in urls if not re.match(r"(file|data|blob|about):", u)]
    assert off == []


def test_output_to_a_directory_that_does_not_exist_is_one_line(sweep_db, tmp_path):
    result = run_cli("compare", "base", "slow", "--format", "html", "-o", str(tmp_path / "no" / "cmp.html"),
                     db=sweep_db)
    assert result.returncode == 2
    assert "cannot write" in result.stderr and "Traceback" not in result.stderr


def test_html_is_in_the_format_list():
    from perflab.render.compare import FORMATS
    assert "html" in FORMATS
    assert Path(__file__).parents[1].joinpath("src/perflab/render/templates/compare.html.j2").is_file()


def test_environment_differences_name_only_what_differs():
    from perflab.model.records import RunInfo, RunStatus
    from perflab.render.compare_html import environment_differences

    def run(i, kernel, governor):
        return RunInfo(i, f"r{i}", None, None, "box", 0.0, None, RunStatus.COMPLETE, {},
                       {"kernel": {"release": kernel}, "cpu": {"governor": governor, "model": "x"}})

    diff = environment_differences((run(1, "6.1", "performance"), run(2, "6.2", "performance")))
    assert diff == [{"key": "kernel.release", "values": ["6.1", "6.2"]}]
    assert environment_differences((run(1, "6.1", "a"), run(2, "6.1", "a"))) == []


def test_report_shows_its_environment_section(report):
    path, _ = report
    body = path.read_text()
    assert "<h2>Environment differences</h2>" in body
    assert '<table id="environment">' in body or "do not differ" in body


def test_charts_are_drawn_as_they_come_into_view(tmp_path, browser):
    """A long report draws the charts of its first screen at load and the others when the
    reader scrolls to them, each with every side's samples."""
    from selenium.webdriver.support.ui import WebDriverWait

    from perflab.analysis.compare import compare_runs
    from perflab.model.records import Measurement, Point, RunStatus
    from perflab.render.compare import render_comparison
    from perflab.store import Store

    db, labels, benchmarks, samples = str(tmp_path / "many.db"), ("a", "b"), 8, 40
    with Store(db, create=True) as store:
        for s, label in enumerate(labels):
            run_id = store.runs.create(label=label, host="box", request=RunRequest(), environment={})
            for b in range(benchmarks):
                for rep in range(samples):
                    value = 1.0 + 0.01 * s + 0.001 * ((rep * 7 + b) % 11)
                    store.samples.add(run_id, Point(f"bench{b}", {}), rep, [Measurement("time", value, "s")])
            store.series.seal(run_id)
            store.runs.set_status(run_id, RunStatus.COMPLETE)
        report = compare_runs(store, [store.runs.resolve(label) for label in labels])
    path = tmp_path / "many.html"
    path.write_text(render_comparison(report, "html"))
    browser.get(path.as_uri())
    ids = browser.execute_script("return Array.from(document.querySelectorAll('div.plot')).map(p => p.id);")
    assert len(ids) == 2 * benchmarks  # distribution and measurement order per benchmark
    WebDriverWait(browser, 60).until(lambda d: ids[0] in drawn_plots(d), "the first chart was not drawn at load")
    assert ids[-1] not in drawn_plots(browser)  # 15 charts of 360 px below: not drawn yet
    draw_every_plot(browser)
    assert drawn_plots(browser) == ids
    per_chart = browser.execute_script("""
        return Array.from(document.querySelectorAll('div.plot')).map(p =>
            [p.dataset.kind, p.data.map(t => t.y.length)]);""")
    for kind, lengths in per_chart:
        # a box per side holding all its samples, a line per side through them in order
        assert lengths == [samples, samples], (kind, lengths)
    assert console_errors(browser) == []
