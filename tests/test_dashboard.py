"""`perflab serve`: a real uvicorn on a free loopback port, pages fetched over HTTP and
in a headless chromium, against SQLite and PostgreSQL."""

from __future__ import annotations

import html
import json
import re
import urllib.error
import urllib.request

import pytest

from browser import BROWSER_GROUP, chromium, click_change_point, console_errors, plot_traces, requested_urls
from conftest import _new_pg_database, run_cli, serving
from test_history import long_history

# the session's one browser: the module's tests run on its xdist worker (its fixtures built once)
pytestmark = BROWSER_GROUP

HOSTILE = "<img src=x onerror=alert(1)>"
LABELS = ("base", "slow", HOSTILE)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def store(request, tmp_path_factory):
    if request.param == "sqlite":
        db = str(tmp_path_factory.mktemp("dash") / "perflab.db")
    else:
        db = _new_pg_database(request.getfixturevalue("postgres_server"))
    for label, ms in zip(LABELS, ("1", "3", "1")):
        run_cli("run", "-n", "5", "--label", label, "--name", "nap", "-q", "--", "sleep", f"0.00{ms}",
                db=db, check=True)
    return db


@pytest.fixture(scope="module")
def server(store):
    """`perflab serve` on a free port of 127.0.0.1 (the default host); stopped at the end."""
    with serving(store) as started:
        yield started


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_binds_loopback_only(server):
    _, port, _ = server
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                    listening.append(local.rsplit(":", 1)[0])
    assert listening == ["0100007F"]  # 127.0.0.1 and nothing else


def test_runs_list_filters_and_pages(server):
    url, _, _ = server
    status, page = get(url + "/runs")
    assert status == 200
    assert "3 run(s)" in page and ">slow<" in page and ">base<" in page
    assert HOSTILE not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    status, page = get(url + "/runs?label=slow")
    assert "1 run(s)" in page and ">slow<" in page and ">base<" not in page
    status, page = get(url + "/runs?per_page=2")
    assert "page 1 of 2" in page and 'rel="next"' in page
    status, page = get(url + "/runs?per_page=2&page=2")
    assert "page 2 of 2" in page and 'rel="prev"' in page
    status, page = get(url + "/runs?host=no-such-host")
    assert "0 run(s)" in page
    status, page = get(url + "/runs?since=2000-01-01&until=2000-01-02")
    assert "0 run(s)" in page


def test_mistakes_are_one_line_pages(server):
    url, _, _ = server
    status, page = get(url + "/runs/no-such-run")
    assert status == 404 and "no run with id or label" in page and "Traceback" not in page
    status, page = get(url + "/runs?since=yesterday-ish")
    assert status == 400 and "bad since" in page
    status, page = get(url + "/compare?run=base")
    assert status == 400 and "at least one candidate" in page


def test_run_history_and_changes_pages(server):
    url, _, _ = server
    status, page = get(url + "/runs/slow")
    assert status == 200 and "nap" in page
    status, page = get(url + "/history?metric=time")
    assert status == 200 and "nap" in page and "Plotly.newPlot" in page
    status, page = get(url + "/history?metric=time&format=text")
    assert status == 200 and "<pre>nap" in page
    status, page = get(url + "/changes")
    assert status == 200 and "<h1>changes</h1>" in page
    status, page = get(url + "/jobs?state=running,queued")
    assert status == 200 and "<h1>jobs</h1>" in page and "no jobs" in page
    status, page = get(url + "/jobs?state=finished")
    assert status == 400 and "unknown job state" in page


def test_compare_page_is_the_report(server):
    url, _, db = server
    status, page = get(url + "/compare?run=base&run=slow")
    assert status == 200
    # the same page, but plotly.js is served once (cached for good) instead of embedded
    [src] = re.findall(r'<script src="(/static/plotly-cartesian-[0-9a-f]{16}\.js)"></script>', page)
    with urllib.request.urlopen(url + src, timeout=60) as response:
        bundle = response.read().decode()
        assert "immutable" in response.headers["Cache-Control"]
    cli = run_cli("compare", "base", "slow", "--format", "html", db=db, check=True).stdout
    assert page.replace(f'<script src="{src}"></script>', f"<script>{bundle}</script>") == cli
    assert len(page) < len(cli) - 1_000_000


def test_pages_in_chromium(server):
    url, _, _ = server
    with chromium() as driver:
        driver.get(url + "/runs")
        assert driver.find_elements("css selector", "#runs tbody tr")
        assert HOSTILE in [td.text for td in driver.find_elements("css selector", "td.label")]
        assert driver.execute_script("return document.querySelectorAll('img').length;") == 0
        # tick two runs and compare: the form leads to the report page
        boxes = driver.find_elements("css selector", "#runs input[type=checkbox]")
        boxes[-1].click()
        boxes[-2].click()
        driver.get_log("performance")
        driver.find_element("css selector", "#compare button").click()
        from selenium.webdriver.support.ui import WebDriverWait
        WebDriverWait(driver, 60).until(lambda d: "/compare?" in d.current_url and d.execute_script(
            "return document.readyState;") == "complete")
        traces = plot_traces(driver)
        assert traces and all(n >= 1 for n in traces)
        assert "compare" in driver.title
        off = [u for u in requested_urls(driver) if not u.startswith((url, "data:", "blob:", "about:"))]
        assert off == []
        assert console_errors(driver) == []


def test_serve_mistakes_are_one_line(tmp_path, server):
    _, port, db = server
    result = run_cli("serve", "--port", str(port), db=db, timeout=60)  # the fixture's server holds it
    assert result.returncode == 3 and "cannot listen on 127.0.0.1" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    result = run_cli("serve", db=str(tmp_path / "none.db"), timeout=60)
    assert result.returncode == 2 and "no perflab database" in result.stderr


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def history_server(request, tmp_path_factory):
    """The dashboard over a history of 48 commits whose 'ops' drops 10% at commit 30."""
    base = tmp_path_factory.mktemp("dash-history")
    db = None if request.param == "sqlite" else _new_pg_database(request.getfixturevalue("postgres_server"))
    db, _, _ = long_history(base, db=db)
    change = json.loads(run_cli("changes", "--format", "json", db=db, check=True).stdout)["changes"][0]
    with serving(db) as (url, _, _):
        yield url, db, change["id"]


def test_change_page_is_the_report(history_server):
    url, db, change_id = history_server
    status, page = get(f"{url}/changes/{change_id}")
    assert status == 200 and f"<h1>change {change_id}</h1>" in page
    report = run_cli("report", "change", change_id, db=db, check=True).stdout
    shown = html.unescape(page.split("<pre>", 1)[1].split("</pre>", 1)[0])
    assert shown.strip() == report.strip()
    status, page = get(f"{url}/changes/ffff")
    assert status == 404 and "no change with id" in page and "Traceback" not in page
    status, page = get(f"{url}/changes/not-hex")
    assert status == 400 and "bad change id" in page


def test_a_click_on_a_change_point_opens_its_report(history_server):
    url, db, change_id = history_server
    from selenium.webdriver.support.ui import WebDriverWait
    report = run_cli("report", "change", change_id, db=db, check=True).stdout
    with chromium() as driver:
        driver.get(url + "/history?metric=ops")
        click_change_point(driver, change_id)
        WebDriverWait(driver, 60).until(lambda d: d.current_url == f"{url}/changes/{change_id}"
                                        and d.execute_script("return document.readyState;") == "complete")
        assert driver.execute_script("return document.querySelector('h1').textContent;") == f"change {change_id}"
        shown = driver.execute_script("return document.querySelector('pre').textContent;")
        assert shown.strip() == report.strip()
        assert console_errors(driver) == []


def test_the_dashboards_compare_agrees_with_the_cli(tmp_path):
    """/compare?run=X is `perflab compare X` (a run of several commands), and runs that share
    no point are said to, as the CLI says it, rather than a table of dashes."""
    db = str(tmp_path / "perflab.db")
    run_cli("run", "-q", "-n", "4", "--label", "two", "sleep 0.001", "sleep 0.002", db=db, check=True)
    for label, values in (("small", "1,2"), ("large", "3,4")):
        run_cli("run", "-q", "-n", "2", "--label", label, "-p", f"n={values}", "--shell", "--",
                "sleep 0.00{n}", db=db, check=True)
    with serving(db) as (url, _, _):
        status, page = get(url + "/compare?run=two")
        assert status == 200 and "sleep 0.002" in page, page[:500]
        cli = run_cli("compare", "small", "large", db=db)
        status, page = get(url + "/compare?run=small&run=large")
        assert cli.returncode == 2 and "share no point" in cli.stderr
        assert status == 400 and "small and large share no point" in html.unescape(page), page[:500]
        status, page = get(url + "/compare")
        assert status == 400 and "a run of several commands" in page
