"""The dashboard's front page and an alert's page in a real headless chromium, over a real
`perflab serve`: alerts above the runs, the empty state, the alert's range drawn, and the
writes (triage, rerun, assignee) done with the token and refused without it."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from urllib.parse import urlencode

import pytest

from browser import BROWSER_GROUP, chromium, console_errors, requested_urls
from conftest import run_cli, serving
from test_history import long_history

pytestmark = BROWSER_GROUP
TOKEN = "front-page-token"
STEP_AT = 30   # long_history's 'ops' drops 10% at this commit


@pytest.fixture(scope="module")
def alerted(tmp_path_factory):
    """A history of 48 commits with its step alerted, served with a token: (url, db, shas, alert)."""
    db, _, shas = long_history(tmp_path_factory.mktemp("front-alerted"))
    run_cli("alerts", "--update", db=db, check=True)
    alert = json.loads(run_cli("alerts", "--format", "json", db=db, check=True).stdout)["alerts"][0]
    with serving(db, env={"PERFLAB_SERVE_TOKEN": TOKEN}) as (url, _, _):
        yield url, db, shas, alert


@pytest.fixture(scope="module")
def quiet(tmp_path_factory):
    """The same history, never alerted on."""
    db, _, _ = long_history(tmp_path_factory.mktemp("front-quiet"))
    with serving(db) as (url, _, _):
        yield url


def top(driver, selector: str) -> float:
    return driver.execute_script("return document.querySelector(arguments[0]).getBoundingClientRect().top"
                                 " + window.scrollY;", selector)


def page_bytes(driver) -> int:
    """What the page transferred: the document and every resource it loaded."""
    return driver.execute_script(
        "const n = performance.getEntriesByType('navigation')[0];"
        "return n.transferSize + performance.getEntriesByType('resource')"
        ".reduce((s, e) => s + e.transferSize, 0);")


def test_front_page_shows_the_alerts_above_the_runs(alerted):
    url, _, shas, alert = alerted
    with chromium() as driver:
        driver.get(url + "/")
        rows = driver.find_elements("css selector", "#untriaged tbody tr")
        assert len(rows) == 1
        text = rows[0].text
        # the first bad commit as people read it: its hash, subject and author
        assert shas[STEP_AT][:12] in text and f"change {STEP_AT}" in text and "-10.0%" in text and "box" in text
        # the range's sparkline, an image of its own: drawn, with the first bad commit's dot
        from selenium.webdriver.support.ui import WebDriverWait
        spark = rows[0].find_element("css selector", "img.spark")
        WebDriverWait(driver, 60).until(lambda d: d.execute_script(
            "return arguments[0].complete && arguments[0].naturalWidth > 0;", spark))
        with urllib.request.urlopen(spark.get_attribute("src"), timeout=60) as response:
            svg = response.read().decode()
            assert response.headers["Content-Type"].startswith("image/svg+xml")
        assert "<path d=\"M" in svg and "<circle" in svg
        assert top(driver, "#untriaged") < top(driver, "#fleet") < top(driver, "#recent-runs")
        assert driver.find_elements("css selector", "#recent-runs tbody tr")
        assert rows[0].find_element("css selector", "a").get_attribute("href") == f"{url}/alerts/{alert['id']}"
        # no request leaves the machine, and the page is light without a plot library
        off = [u for u in requested_urls(driver) if not u.startswith((url, "data:", "about:"))]
        assert off == []
        assert 0 < page_bytes(driver) < 300_000
        assert console_errors(driver) == []
        html = driver.page_source
    assert not [u for u in re.findall(r'(?:src|href)="([^"]*)"', html) if not u.startswith(("/", "data:", "#"))]


def test_front_page_without_alerts_says_what_to_do(quiet):
    with chromium() as driver:
        driver.get(quiet + "/")
        empty = driver.find_element("id", "no-alerts").text
        assert "No untriaged alerts" in empty and "perflab watch" in empty and "perflab alerts --update" in empty
        assert not driver.find_elements("css selector", "#untriaged")
        assert "No worker has reported" in driver.find_element("id", "fleet-section").text
        assert driver.find_elements("css selector", "#recent-runs tbody tr")


def test_alert_page_draws_its_range_and_levels(alerted):
    url, _, shas, alert = alerted
    with chromium() as driver:
        driver.get(f"{url}/alerts/{alert['id']}")
        shapes = driver.execute_script("""
            const svg = document.getElementById('series'), box = e => e.getBoundingClientRect();
            const r = svg.querySelector('rect.range'), c = svg.querySelector('line.culprit');
            return {range: [box(r).left, box(r).right], culprit: box(c).left,
                    culprit_title: c.textContent, dots: svg.querySelectorAll('circle.dot').length,
                    levels: Array.from(svg.querySelectorAll('line.level')).map(
                        l => [l.getAttribute('class'), l.dataset.value, box(l).left, box(l).right])};""")
        assert shapes["dots"] >= 40
        assert shapes["range"][0] < shapes["range"][1] and abs(shapes["range"][1] - shapes["culprit"]) < 2
        assert shapes["culprit_title"] == f"first bad: {shas[STEP_AT][:12]}"
        (before_class, before, b_left, b_right), (after_class, after, a_left, a_right) = shapes["levels"]
        assert (before_class, after_class) == ("level before", "level after")
        assert b_right <= shapes["culprit"] + 1 <= a_left + 2
        # the levels drawn are the report's: the alert's centres before and after
        assert float(before) == pytest.approx(alert["before"], rel=1e-9)
        assert float(after) == pytest.approx(alert["after"], rel=1e-9)
        assert f"change {STEP_AT}" in driver.find_element("id", "first-bad").text
        assert "perflab noticed a" in driver.find_element("id", "report").text
        assert console_errors(driver) == []
        # its series' history, of its host alone: the step at the first bad commit
        link = driver.find_element("id", "history").get_attribute("href")
        assert f"host={alert['host']}" in link and "metric=ops" in link
        with urllib.request.urlopen(link + "&format=text", timeout=60) as page:
            assert shas[STEP_AT][:12] in page.read().decode()


def _post(url: str, data: dict) -> tuple[int, str]:
    request = urllib.request.Request(url, data=urlencode(data).encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _submit(driver, form: str, fields: dict[str, str]) -> None:
    from selenium.webdriver.support.ui import WebDriverWait
    for name, value in fields.items():
        box = driver.find_element("css selector", f"#{form} [name={name}]")
        box.clear()
        box.send_keys(value)
    old = driver.find_element("tag name", "html")
    driver.find_element("css selector", f"#{form} button").click()
    WebDriverWait(driver, 60).until(lambda d: old.id != d.find_element("tag name", "html").id)


def test_rerun_triage_and_owner_need_the_token(alerted):
    url, db, _, alert = alerted
    page_url = f"{url}/alerts/{alert['id']}"
    with chromium() as driver:
        driver.get(page_url)
        _submit(driver, "rerun", {"token": "not-the-token"})
        assert "wrong or missing token" in driver.find_element("tag name", "main").text
        driver.get(page_url)
        _submit(driver, "rerun", {"token": TOKEN})
        assert driver.current_url == page_url
        assert driver.find_element("id", "awaiting").text == "rerun requested"
        assert "rerun requested" in driver.find_element("id", "events").text
        assert driver.find_element("css selector", "#rerun button").get_attribute("disabled")
        _submit(driver, "owner", {"assignee": "dana", "bug": "https://bugs.example.org/1234", "token": TOKEN})
        assert driver.find_element("id", "assignee").text == "dana"
        assert driver.find_element("css selector", "#bug a").get_attribute("href") == "https://bugs.example.org/1234"
        _submit(driver, "triage", {"note": "looking", "token": TOKEN})   # the first action: ack
        assert driver.find_element("id", "state").text == "acknowledged"
    # the robot sees the request: the range is pending a rerun
    shown = json.loads(run_cli("alert", str(alert["id"]), "--format", "json", db=db, check=True).stdout)
    actions = [e["action"] for e in shown["events"]]
    assert actions[-3:] == ["rerun requested", "assigned", "ack"]
    # without the token every write is refused, and changes nothing
    for path, data in (("", {"action": "reopen"}), ("/rerun", {}), ("/owner", {"assignee": "eve"})):
        status, body = _post(page_url + path, data)
        assert status == 403 and "token" in body
    status, body = _post(page_url + "/owner", {"bug": "javascript:alert(1)", "token": TOKEN})
    assert status == 400 and "bad bug link" in body
    after = json.loads(run_cli("alert", str(alert["id"]), "--format", "json", db=db, check=True).stdout)
    assert len(after["events"]) == len(shown["events"]) and after["alert"]["state"] == "acknowledged"


def test_commit_links_follow_the_template(tmp_path):
    db, _, shas = long_history(tmp_path)
    template = "https://git.example.org/c/{sha}"
    with serving(db, "--commit-url", template) as (url, _, _), \
            urllib.request.urlopen(url + "/runs", timeout=60) as response:
        page = response.read().decode()
    assert f'href="https://git.example.org/c/{shas[-1]}"' in page
    bad = run_cli("serve", "--commit-url", "ftp://x/{sha}", db=db, timeout=60)
    assert bad.returncode == 2 and "bad --commit-url" in bad.stderr and "Traceback" not in bad.stderr


def test_runs_since(tmp_path):
    db, _, _ = long_history(tmp_path)
    every = run_cli("runs", db=db, check=True).stdout.splitlines()
    assert run_cli("runs", "--since", "1d", db=db, check=True).stdout.splitlines() == every
    assert run_cli("runs", "--since", "2000-01-01", db=db, check=True).stdout.splitlines() == every
    assert run_cli("runs", "--since", "2999-01-01", db=db, check=True).stdout == ""
    bad = run_cli("runs", "--since", "yesterday", db=db)
    assert bad.returncode == 2 and "bad --since 'yesterday'" in bad.stderr and "Traceback" not in bad.stderr


def test_a_narrowed_history_is_the_same_history(tmp_path):
    """An alert's page reads its series alone (the runs that measured it, on its host): the
    same points and changes as the history of every run."""
    from perflab.analysis.compare import Filters
    from perflab.analysis.history import build_history
    from perflab.model.records import Measurement, Point, RunStatus
    from perflab.model.run_request import RunRequest
    from perflab.store import Store
    db, _, shas = long_history(tmp_path)
    with Store(db) as store:   # another host's run of another benchmark, between the commits
        run_id = store.runs.create(label="nightly", host="other", request=RunRequest(), environment={},
                                   commit=shas[20])
        store.samples.add(run_id, Point("other", {}), 0, [Measurement("ops", 5.0, "ops/s")])
        store.series.seal(run_id)
        store.runs.set_status(run_id, RunStatus.COMPLETE)
        every = build_history(store)
        narrow = build_history(store, filters=Filters(frozenset({"wis"}), (), frozenset({"ops"})),
                               hosts=frozenset({"box"}))
    [wanted] = [s for s in every.series if s.benchmark == "wis" and s.metric == "ops" and s.host == "box"]
    [found] = narrow.series
    assert [p.point.key for p in found.points] == [p.point.key for p in wanted.points]
    assert [c.id for c in found.changes] == [c.id for c in wanted.changes] and found.changes


def test_a_bisected_range_is_told_by_its_culprit(tmp_path):
    """Once the robot's bisect answered (its "bisected" event, its run the culprit's), the front
    page tells the range by the bisected commit and the alert page names it with the answer."""
    from perflab.store import Store
    db, _, shas = long_history(tmp_path)
    run_cli("alerts", "--update", db=db, check=True)
    with Store(db) as store:
        alert = store.alerts.all()[0]
        run = next(r for r in store.runs.all() if r.commit == alert.first_bad)
        store.alerts.note(alert, "bisected", who="perflab", run_id=run.id,
                          note=f"bisect job 3 on box: first slower commit (a regression): {run.commit[:12]}")
    with serving(db) as (url, _, _):
        with urllib.request.urlopen(url + "/", timeout=60) as response:
            front = response.read().decode()
        with urllib.request.urlopen(f"{url}/alerts/{alert.id}", timeout=60) as response:
            page = response.read().decode()
    row = front[front.index('id="untriaged"'):]
    assert 'class="pill">bisected<' in row and alert.first_bad[:12] in row
    culprit = page[page.index('id="culprit"'):]
    assert alert.first_bad[:12] in culprit and "bisect job 3 on box" in culprit
