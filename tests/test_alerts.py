"""Regression alerts and their triage, on real stores (SQLite and PostgreSQL) filled by real
``perflab run``s of a shell loop whose length doubles at one commit of a real git repository.

Stages of the module's store (the ``lab`` fixture): 16 commits, the loop doubled from the
11th (``line[STEP]``) on; 10 more commits at the slow level; 8 commits back at the fast level
(from ``line[BACK]``). Alerts are
updated after each stage, so the tests see what each update created and what it kept; then,
as a nightly loop does, the robot's rerun requests are honoured (`alerts --rerun`) and the
next update judges them.
"""

from __future__ import annotations

import json
import statistics
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from perflab.analysis.alerts import list_alerts, triage, update_alerts
from perflab.analysis.history import build_history
from perflab.model.alerts import ACTIONS, DUPLICATE, STATES, TRANSITIONS, UNTRIAGED, can_move, summary_state
from perflab.model.errors import UsageError
from perflab.stats.mosum import TRANSIENT
from perflab.store import Store

import services
from browser import BROWSER_GROUP
from conftest import _new_pg_database, run_cli, serving
from test_history import commit, git, new_repo

# the session's one browser: the module's tests run on its xdist worker (its fixtures built once)
pytestmark = [BROWSER_GROUP, pytest.mark.alone]   # labs: recorded with the machine alone

FAST, SLOW = "15000", "60000"  # shell loop iterations (times k = 1, 2): from ~20 ms of user time here
# a 4x step: a loaded machine's stray commit (its median at 1.5x) must not hide it
# repetitions per commit: with the robot's 10 a slow level's commits agreed within 1%, and a
# few seconds of this VM at another speed (12-25% for 2-4 commits) were rightly confirmed as
# a change, which the test does not expect; a median of 3 keeps the VM's spread in the history
PER_COMMIT = 3
HOSTILE = "<img src=x onerror=alert(1)>"


def record(db: str, repo: Path, sha: str) -> None:
    loops = git(repo, "show", f"{sha}:delay")
    run_cli("run", "-q", "-n", str(PER_COMMIT), "--repo", str(repo), "--commit", sha, "--label", "nightly",
            "--name", "loop", "-p", "k=1,2", "--",
            "sh", "-c", f"i=0; while [ $i -lt $(({loops}*{{k}})) ]; do i=$((i+1)); done",
            db=db, check=True)


def stage(db: str, repo: Path, subjects: list[str], loops: str | None) -> list[str]:
    shas = []
    for i, subject in enumerate(subjects):
        sha = commit(repo, subject, loops if i == 0 else None)
        record(db, repo, sha)
        shas.append(sha)
    return shas


# the default: mosum for the whole series, the tip detector behind it for the newest commits
METHOD = "auto"


def update(db: str) -> list:
    """The robot's update, on its own label (as `watch` runs it): the reruns' runs are evidence."""
    with Store(db) as store:
        return update_alerts(store, labels=["nightly"], method=METHOD)


def rerun(db: str) -> list:
    """The nightly loop honours the robot's rerun requests; the next update judges them."""
    run_cli("alerts", "--rerun", "--as-recorded", db=db, check=True, timeout=600)
    return update(db)


@pytest.fixture(scope="module")
def labs(tmp_path_factory, postgres_server) -> dict[str, dict]:
    """Both stores' labs, recorded one after the other with the machine alone (services.alone):
    their runs are timed and judged, and another worker's test is a real competing load (the
    recorded levels then spread 20-30% and the way back is rightly not confirmed). Both at the
    module's start, so no later exclusive block waits for another worker's long test; the
    tests that read them share the machine."""
    with services.alone():
        return {"sqlite": record_lab(tmp_path_factory, str(tmp_path_factory.mktemp("alerts") / "perflab.db")),
                "postgresql": record_lab(tmp_path_factory, _new_pg_database(postgres_server))}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def lab(request, labs) -> dict:
    return labs[request.param]


# commits before the step: the tip detector's bar is 8.7 history sds after 6 commits and 4.3
# after 10, and mosum's one-step test on 12 points needs p < 0.0012; with 6 a 4x step in this
# VM's noise went unalerted by the first update in 1 of 2 clean-clone rehearsals (as the README
# history example's 2x step did: 88% detected with 6 + 6 commits, 100% with 10 + 6)
STEP = 10
# 6 + 10 commits at the slow level, then the way back: the whole-series detector takes a
# shorter excursion that returns to its old level for a transient (mosum.TRANSIENT), so the
# way back would rest on the tip detector alone, whose bars over a 9-commit history in this
# VM's two speed regimes missed it in 2 of 3 suites (one k of the PostgreSQL lab)
BACK = STEP + TRANSIENT


def record_lab(tmp_path_factory, db: str) -> dict:
    """The module's stages recorded in ``db`` (see the module doc), alerts updated after each."""
    repo = new_repo(tmp_path_factory.mktemp("alerts") / "app")
    line = stage(db, repo, [f"fast {i}" for i in range(STEP)], FAST)
    line += stage(db, repo, ["double the loop"] + [f"slow {i}" for i in range(5)], SLOW)
    first, again = update(db), update(db)
    first += rerun(db)
    line += stage(db, repo, [f"slow more {i}" for i in range(BACK - STEP - 6)], None)
    appended = update(db)
    appended += rerun(db)
    # 8 commits after the way back, so the whole-series detector can place it too (mosum needs
    # 5 of the new level); whichever raises it names the step's own commit
    line += stage(db, repo, ["halve the loop"] + [f"fast again {i}" for i in range(7)], FAST)
    recovered = update(db)
    recovered += rerun(db)
    return {"db": db, "repo": repo, "line": line, "first": first, "again": again, "appended": appended,
            "recovered": recovered}


def alerts_at(alerts, sha: str) -> dict[int, object]:
    """The user-time alerts of the two points (k = 1, 2) whose first bad commit is ``sha``.
    User CPU time: the wall time of this loaded machine may or may not show the step."""
    return {a.params["k"]: a for a in alerts if a.first_bad == sha and a.metric == "user"}


def last_good(lab: dict, alert) -> str:
    """The step's last good commit for ``alert``'s series: the commit before the step, or the
    one before that when the commit before the step measured between the two levels (this
    VM at another speed for that commit's runs: the change is then told as spread over the
    two commits, stats/commit_series.py, and its range holds both)."""
    line = lab["line"]
    with Store(lab["db"]) as store:
        history = build_history(store, labels=["nightly"], method=METHOD)
    series = next(s for s in history.series if (s.params, s.metric) == (alert.params, alert.metric))
    value = {p.point.key: p.summary.median for p in series.points}
    fast, slow = (statistics.median(value[c] for c in part) for part in (line[:STEP - 1], line[STEP:STEP + 6]))
    return line[STEP - 2] if fast < value[line[STEP - 1]] < slow and alert.last_good == line[STEP - 2] else \
        line[STEP - 1]


def test_one_alert_per_change_grouped_by_commit_range(lab):
    line = lab["line"]
    step = alerts_at(lab["first"], line[STEP])
    assert set(step) == {1, 2}, lab["first"]
    ranges = {(last_good(lab, a), line[STEP]) for a in step.values()}
    for a in step.values():
        assert (a.last_good, a.benchmark, a.kind, a.state) == (last_good(lab, a), "loop", "regression", UNTRIAGED)
        assert a.oriented_pct < -100 and a.p_value < 0.05 and not a.recovered
    # one summary for the change, whatever the point or metric
    assert step[1].summary_id == step[2].summary_id
    with Store(lab["db"]) as store:
        summary = store.alerts.summary(step[1].summary_id)
        # each alert of the summary over the step's commit, its range from its own series' data
        assert all((a.last_good, a.first_bad) == (last_good(lab, a), line[STEP]) for a in summary.alerts), \
            summary.alerts
        assert summary.state == UNTRIAGED
        # every alert of the range, whichever update raised it (a noisy metric's change may be
        # confirmed by the tip detector a few commits later), is in that one summary
        assert {a.id for a in lab["first"] if a.first_bad == line[STEP]} <= {a.id for a in summary.alerts}
        assert {a.id for a in list_alerts(store) if (a.last_good, a.first_bad) in ranges} <= \
            {a.id for a in summary.alerts}
        created = store.alerts.events(step[1].id)
    assert [(e.who, e.action, e.to_state) for e in created][0] == ("perflab", "created", UNTRIAGED)


def test_update_is_idempotent(lab):
    assert lab["first"] and lab["again"] == []


def test_change_id_is_stable_when_commits_are_appended(lab):
    line = lab["line"]
    assert alerts_at(lab["appended"], line[STEP]) == {}  # no new alert for the same step
    with Store(lab["db"]) as store:
        current = alerts_at(list_alerts(store), line[STEP])
    assert {m: a.change_id for m, a in current.items()} == {m: a.change_id
                                                            for m, a in alerts_at(lab["first"], line[STEP]).items()}


def way_back(alerts, line: list[str]) -> dict[int, object]:
    """The user-time alerts of the step back to the old level, at its commit (line[BACK]).

    This VM runs at two speeds 1.7-1.8x apart for seconds at a time. When it switches within
    the slow level, that level reads as runs of 4-7 commits at 67 and 115 ms (k = 1), which
    neither detector can tell from changes: mosum's windows span 8 commits and it found no
    change point at all in such a series; the tip detector reads the way back against the
    few commits since the last switch. So one k's way back may go unalerted (a clean-clone
    rehearsal: k = 2 alerted, k = 1 not). The tests need it alerted on at least one k and
    hold every alerted one to the rules."""
    return alerts_at(alerts, line[BACK])


def test_a_later_change_back_to_the_old_level_marks_it_recovered(lab):
    line = lab["line"]
    back = way_back(lab["recovered"], line)
    assert back and all(a.kind == "improvement" for a in back.values()), \
        [(a.metric, a.params, line.index(a.first_bad), a.kind, a.method) for a in lab["recovered"]]
    with Store(lab["db"]) as store:
        step = alerts_at(list_alerts(store), line[STEP])
        for k, b in back.items():
            assert step[k].recovered and step[k].recovered_by == b.change_id
            assert [e.action for e in store.alerts.events(step[k].id)][-1] == "recovered"
    listed = json.loads(run_cli("alerts", "--format", "json", db=lab["db"], check=True).stdout)["alerts"]
    assert {a["id"] for a in listed if a["recovered"]} >= {step[k].id for k in back}


def test_summary_state_follows_from_its_alerts():
    assert summary_state([UNTRIAGED, "invalid"]) == UNTRIAGED
    assert summary_state(["invalid", "invalid"]) == "invalid"
    assert summary_state(["invalid", "fixed"]) == "fixed"
    assert summary_state(["acknowledged", "fixed", "improvement"]) == "acknowledged"
    assert summary_state(["wontfix", "fixed"]) == "wontfix"
    assert summary_state([DUPLICATE, "invalid"]) == "invalid"
    assert summary_state([DUPLICATE]) == DUPLICATE


def _path_to(state: str) -> list[str]:
    """Actions that take an untriaged alert to ``state``."""
    return {UNTRIAGED: [], "acknowledged": ["ack"], "fixed": ["ack", "fixed"], "wontfix": ["ack", "wontfix"],
            "invalid": ["invalid"], "improvement": ["improvement"], DUPLICATE: ["duplicate-of"]}[state]


def test_every_transition_legal_or_refused(lab):
    line = lab["line"]
    with Store(lab["db"]) as store:
        alerts = list_alerts(store)
        # a way back's alert, and another to be its duplicate's original (way_back: one k's may be missing)
        alert, other = [*way_back(alerts, line).values(), *alerts_at(alerts, line[STEP]).values()][:2]

        def act(action: str) -> None:
            triage(store, alert.id, action, who="tester", note=f"to {action}",
                   duplicate_of=other.id if action == "duplicate-of" else None)

        tried = moved = 0
        for state in STATES:
            for action, to in ACTIONS.items():
                for step in _path_to(state):
                    act(step)
                # other alerts may share the state (a rerun withdraws a machine state as invalid)
                assert alert.id in {a.id for a in list_alerts(store, state=state)}
                before = len(store.alerts.events(alert.id))
                if can_move(state, to):
                    act(action)
                    now = [a for a in list_alerts(store) if a.id == alert.id][0]
                    assert now.state == to and (now.duplicate_of == other.id) == (to == DUPLICATE)
                    moved += 1
                    last = store.alerts.events(alert.id)[-1]
                    assert (last.who, last.action, last.from_state, last.to_state, last.note) == (
                        "tester", action, state, to, f"to {action}")
                else:
                    with pytest.raises(UsageError, match=f"is {state}: it cannot become {to}"):
                        act(action)
                    assert len(store.alerts.events(alert.id)) == before  # nothing recorded
                tried += 1
                if [a for a in list_alerts(store) if a.id == alert.id][0].state != UNTRIAGED:
                    act("reopen")
        assert tried == len(STATES) * len(ACTIONS)
        assert moved == sum(len(t) for t in TRANSITIONS.values()) == 12


def test_triage_from_the_cli(lab):
    db, line = lab["db"], lab["line"]
    with Store(db) as store:
        alert, user = alerts_at(list_alerts(store), line[STEP]).values()
    ok = run_cli("alert", str(alert.id), "ack", "--note", "bisecting it", "--who", "ann", db=db)
    assert ok.returncode == 0 and "acknowledged" in ok.stdout, ok.stderr
    default = run_cli("alert", str(alert.id), "fixed", db=db, env={"USER": "carol"})
    assert default.returncode == 0, default.stderr
    for args, message in [
        ([str(alert.id), "invalid"], f"alert {alert.id} is fixed: it cannot become invalid (allowed: reopen)"),
        ([str(alert.id), "duplicate-of"], "cannot become duplicate"),
        ([str(user.id), "duplicate-of"], "duplicate-of needs the id of the alert it duplicates"),
        ([str(user.id), "duplicate-of", str(user.id)], "cannot duplicate itself"),
        ([str(user.id), "duplicate-of", "99999"], "no alert 99999"),
        ([str(user.id), "ack", "7"], "only 'duplicate-of N' takes an alert id"),
        (["99999", "ack"], "no alert 99999"),
        ([str(user.id), "bless"], "Invalid value for '[ACK|FIXED"),
    ]:
        result = run_cli("alert", *args, db=db)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, (args, result.stderr)
        assert message.lower() in result.stderr.lower(), (args, result.stderr)
    shown = run_cli("alert", str(alert.id), "--format", "json", db=db, check=True).stdout
    history = [(e["who"], e["action"], e["from"], e["to"], e["note"]) for e in json.loads(shown)["events"]]
    assert history[-2:] == [("ann", "ack", UNTRIAGED, "acknowledged", "bisecting it"),
                            ("carol", "fixed", "acknowledged", "fixed", "")]
    # the summary follows: one fixed, one untriaged -> untriaged; then both closed
    summaries = json.loads(run_cli("alerts", "--summary", "--format", "json", db=db, check=True).stdout)
    mine = next(s for s in summaries["summaries"] if alert.id in [a["id"] for a in s["alerts"]])
    assert mine["state"] == UNTRIAGED
    others = [a["id"] for a in mine["alerts"] if a["id"] != alert.id]  # user k=2, and time if its step was seen
    for other in others:
        run_cli("alert", str(other), "invalid", "--note", "noise", db=db, check=True)
    summaries = json.loads(run_cli("alerts", "--summary", "--format", "json", db=db, check=True).stdout)
    assert next(s for s in summaries["summaries"] if s["id"] == mine["id"])["state"] == "fixed"
    listed = run_cli("alerts", "--state", "fixed", db=db, check=True).stdout
    assert f"\n{alert.id:>2}  fixed" in listed or f" {alert.id}  fixed" in listed
    assert run_cli("alerts", "--state", "bogus", db=db).returncode == 2
    for reopened in (alert.id, *others):  # leave the step's alerts untriaged for the next tests
        run_cli("alert", str(reopened), "reopen", db=db, check=True)


def test_alert_page_changes_and_report_show_the_state(lab):
    db, line = lab["db"], lab["line"]
    with Store(db) as store:   # the step's alert of a k whose way back was alerted (way_back)
        alert = alerts_at(list_alerts(store), line[STEP])[min(way_back(lab["recovered"], line))]
    text = run_cli("alert", str(alert.id), db=db, check=True).stdout
    assert text.startswith(f"alert {alert.id}: regression of loop.user")
    assert f"{last_good(lab, alert)} (last good) .. {line[STEP]} (first bad)" in text
    assert "perflab noticed a" in text and "double the loop" in text and "history:" in text
    listed = run_cli("changes", "--format", "json", "--metric", "user", "--method", METHOD, db=db, check=True)
    changes = json.loads(listed.stdout)
    mine = next(c for c in changes["changes"] if c["id"] == alert.change_id)
    assert mine["alert"] == {"id": alert.id, "state": alert.state, "recovered": True, "summary": alert.summary_id}
    text = run_cli("changes", "--method", METHOD, db=db, check=True).stdout
    assert f"alert {alert.id} {alert.state} recovered" in text
    report = run_cli("report", "change", alert.change_id, "--method", METHOD, db=db, check=True).stdout
    assert f"alert: {alert.id} ({alert.state}, recovered; summary {alert.summary_id})" in report


def test_update_from_the_cli_and_bad_options(lab):
    db = lab["db"]
    # on the robot's label: the reruns' runs are more samples of their commits, new data elsewhere
    result = run_cli("alerts", "--update", "--label", "nightly", "--method", METHOD, db=db)
    assert result.returncode == 0 and "0 new alert(s)" in result.stderr, result.stderr
    bad = run_cli("alerts", "--label", "nightly", db=db)
    assert bad.returncode == 2 and "go with --update" in bad.stderr


# --------------------------------------------------------------------------- the dashboard

def request(url: str, data: dict | None = None, headers: dict | None = None) -> tuple[int, str]:
    from urllib.parse import urlencode
    body = urlencode(data).encode() if data is not None else None
    req = urllib.request.Request(url, data=body, headers=headers or {}, method="POST" if body else "GET")
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.fixture(scope="module")
def servers(lab):
    """The dashboard read-only, and with a token (from the environment, as 'ps' hides it)."""
    token = "s3cret-token"
    with serving(lab["db"]) as (plain_url, _, _), \
            serving(lab["db"], env={"PERFLAB_SERVE_TOKEN": token}) as (guarded_url, _, _):
        yield plain_url, guarded_url, token


def test_alert_pages_list_filter_and_page(lab, servers):
    url, _, _ = servers
    with Store(lab["db"]) as store:
        alerts = list_alerts(store)
    status, page = request(url + "/alerts")
    assert status == 200 and f"{len(alerts)} alert(s)" in page and "loop k=1 user @" in page
    status, page = request(url + "/alerts?state=untriaged&per_page=1")
    untriaged = [a for a in alerts if a.state == UNTRIAGED]
    assert f"{len(untriaged)} alert(s); page 1 of {len(untriaged)}" in page and 'rel="next"' in page
    step = alerts_at(alerts, lab["line"][STEP])[1]
    status, page = request(url + f"/alerts/{step.id}")
    assert status == 200 and "perflab noticed a" in page and 'id="triage"' not in page
    assert request(url + "/alerts/99999")[0] == 404
    assert request(url + "/alerts/abc")[0] == 404   # names no alert
    assert request(url + "/alerts/9223372036854775808")[0] == 404   # no key holds it: never a 500
    assert request(url + "/alerts?state=bogus")[0] == 400


def test_triage_by_post_needs_the_token(lab, servers):
    plain, guarded, token = servers
    with Store(lab["db"]) as store:
        alert = alerts_at(list_alerts(store), lab["line"][STEP])[2]
    status, page = request(plain + f"/alerts/{alert.id}", {"action": "ack", "token": token})
    assert status == 403 and "read-only" in page
    status, page = request(guarded + f"/alerts/{alert.id}", {"action": "ack", "token": "wrong-token"})
    assert status == 403 and "wrong or missing token" in page
    status, page = request(guarded + f"/alerts/{alert.id}", {"action": "ack"})
    assert status == 403
    with Store(lab["db"]) as store:
        assert [a for a in list_alerts(store) if a.id == alert.id][0].state == UNTRIAGED
    status, page = request(guarded + f"/alerts/{alert.id}", {"action": "ack", "note": "by header", "who": "hal"},
                           headers={"X-Perflab-Token": token})
    assert status == 200 and "acknowledged" in page  # the redirect to the alert's page, followed
    status, page = request(guarded + f"/alerts/{alert.id}", {"action": "invalid", "token": token})
    assert status == 400 and "cannot become invalid" in page
    with Store(lab["db"]) as store:
        last = store.alerts.events(alert.id)[-1]
        assert (last.who, last.action, last.note) == ("hal", "ack", "by header")
        triage(store, alert.id, "reopen", who="tester")


def test_triage_form_in_chromium_escapes_the_note(lab, servers):
    from selenium.webdriver.support.ui import Select

    from browser import chromium
    _, url, token = servers
    with Store(lab["db"]) as store:
        alert = alerts_at(list_alerts(store), lab["line"][STEP])[1]
    with chromium() as driver:
        driver.get(url + f"/alerts/{alert.id}")
        Select(driver.find_element("name", "action")).select_by_value("invalid")
        driver.find_element("name", "note").send_keys(HOSTILE)
        driver.find_element("name", "who").send_keys("dana")
        driver.find_element("name", "token").send_keys(token)
        driver.find_element("css selector", "#triage button").click()
        from selenium.common.exceptions import JavascriptException
        from selenium.webdriver.support.ui import WebDriverWait

        # the redirect may replace the page while it is read: read it in one script, no
        # element handle that could go stale (chromium: "Node ... does not belong to the
        # document"), and look again until the new page says so
        state = "var e = document.getElementById('state'); return e ? e.textContent.trim() : null;"
        WebDriverWait(driver, 60, ignored_exceptions=(JavascriptException,)).until(
            lambda d: d.execute_script(state) == "invalid")
        cells = driver.execute_script(
            "return Array.from(document.querySelectorAll('#events td')).map(td => td.innerText);")
        assert HOSTILE in cells and "dana" in cells
        assert driver.execute_script("return document.querySelectorAll('img').length;") == 0
    with Store(lab["db"]) as store:
        triage(store, alert.id, "reopen", who="tester")


# --------------------------------------------------------------------------- evidence

def test_rerun_attaches_a_fresh_run_of_each_side(lab):
    db, line = lab["db"], lab["line"]
    with Store(db) as store:
        alert = alerts_at(list_alerts(store), line[STEP])[1]
    result = run_cli("alert", str(alert.id), "rerun", "--note", "is it noise?", "--who", "eve", db=db, timeout=300)
    assert result.returncode == 0, result.stderr
    with Store(db) as store:
        attached = [e for e in store.alerts.events(alert.id) if e.action == "evidence"]
        runs = {r.id: r for r in store.runs.all()}
        assert [runs[e.run_id].commit for e in attached[-2:]] == [last_good(lab, alert), line[STEP]]
        assert [runs[e.run_id].label for e in attached[-2:]] == [
            f"alert{alert.id}-{side}-{runs[attached[-1].run_id].label.rsplit('-', 1)[1]}" for side in ("good", "bad")]
        assert all(e.who == "eve" and "is it noise?" in e.note for e in attached[-2:])
        good = runs[attached[-2].run_id]
        assert f"$(({FAST}*{{k}}))" in good.request.identity.command_line[-1]
    given = run_cli("alert", str(alert.id), "rerun", "--run", str(good.id), db=db)
    assert given.returncode == 0, given.stderr
    bad = run_cli("alert", str(alert.id), "rerun", "--run", "no-such-run", db=db)
    assert bad.returncode == 2 and "no run with id or label" in bad.stderr


def test_a_schema_2_database_gains_the_alert_tables(tmp_path):
    import sqlite3

    import sqlalchemy as sa

    from perflab.store.schema import SCHEMA_VERSION, meta
    db = tmp_path / "old.db"
    run_cli("run", "-q", "-n", "2", "--label", "old", "--", "true", db=str(db), check=True)
    with sqlite3.connect(db) as conn:  # make it look like a schema-2 file
        for name in ("alert_events", "alerts", "alert_summaries"):
            conn.execute(f"DROP TABLE {name}")
        conn.execute("UPDATE perflab_meta SET value='2' WHERE key='schema_version'")
    listed = run_cli("alerts", db=str(db))  # a reader upgrades it
    assert listed.returncode == 0 and listed.stdout == "no alerts\n", listed.stderr
    with Store(str(db)) as store:
        version = store.conn.execute(sa.select(meta.c.value).where(meta.c.key == "schema_version")).scalar()
        assert int(version) == SCHEMA_VERSION
        assert {"alerts", "alert_summaries", "alert_events"} <= set(sa.inspect(store.engine).get_table_names())
        assert store.runs.resolve("old").label == "old"


def test_a_short_serve_token_is_refused(tmp_path):
    result = run_cli("serve", "--token", "short", db=str(tmp_path / "none.db"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "at least 8 characters" in result.stderr
