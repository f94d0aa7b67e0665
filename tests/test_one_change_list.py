"""One change, one account: every view reads the one change list (analysis/levels.py).

A lab on SQLite and PostgreSQL, recorded as the robot records: two hosts measure commits one
at a time and the alerts are updated after each. A lower-is-better time of 100 ms steps 30%
slower at commit 20, comes back at commit 24 (restored for 12 commits) and steps 30% slower
again for the last 3 commits; host B is noisier (5%, host A 1%: its own tip detector does
not confirm the way back) and never measured commit 19. Then:

- `report change`, `alert ID`, `alerts` (text and json), `changes`, `history --format json`
  and the dashboard's alert page give the step the same % (within 0.1 point) and the same p;
- the step's "after" side ends at the way back: 4 commits, the restored ones excluded;
- the step on two hosts is one summary with both hosts' rows, each its own commit range;
- the way back, seen by host A's detector, recovers host B's alert too (read on B's series),
  and B's tip detector, reading from the way back on, sees the next step (before, B missed
  the way back, read the next step against a history of both levels and missed it).

The samples are generated (seeded), so the decisions are the same on any machine.
"""

from __future__ import annotations

import html
import json
import re
import urllib.request

import numpy as np
import pytest

from perflab.render.history import p_value

from conftest import _new_pg_database, run_cli, serving

HOSTS = {"box-a": 0.01, "box-b": 0.05}    # host -> relative noise of a sample
STEP, BACK, AGAIN, COMMITS = 20, 24, 36, 39
SKIPPED = ("box-b", 19)                   # host B never measured commit 19


def sha(i: int) -> str:
    return f"{i:02d}" + "ab" * 19


def record_lab(db: str) -> str:
    """The module's lab in ``db`` (see the module doc)."""
    from perflab.analysis.alerts import update_alerts
    from perflab.model.records import Direction, Measurement, MetricInfo, Point, RunStatus, SampleStatus
    from perflab.model.run_request import RunRequest
    from perflab.store import Store

    rng = np.random.default_rng(38)
    point = Point("job", {})
    with Store(db, create=True) as store:
        store.metrics.save("job", [MetricInfo("time", "s", Direction.LOWER)])
        for i in range(COMMITS):
            level = 0.130 if STEP <= i < BACK or i >= AGAIN else 0.100
            for host, noise in HOSTS.items():
                if (host, i) == SKIPPED:
                    continue
                argv = ["perflab", "--db", db, "run", "--commit", sha(i), "-n", "5", "--", "job"]
                request = RunRequest.from_json({"version": 2, "identity": {"command_line": argv}})
                run_id = store.runs.create(label="nightly", host=host, environment={}, request=request,
                                           commit=sha(i))
                for rep in range(5):
                    value = level * (1 + noise * rng.standard_normal())
                    store.samples.add(run_id, point, rep, [Measurement("time", value, "s", SampleStatus.OK)])
                store.series.seal(run_id)
                store.runs.set_status(run_id, RunStatus.COMPLETE)
            if i >= 8:   # as the robot: an update after each commit lands
                update_alerts(store, labels=["nightly"])
    return db


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def lab(request, tmp_path_factory) -> str:
    if request.param == "sqlite":
        return record_lab(str(tmp_path_factory.mktemp("story") / "perflab.db"))
    return record_lab(_new_pg_database(request.getfixturevalue("postgres_server")))


def step_alerts(db: str) -> dict[str, dict]:
    listed = json.loads(run_cli("alerts", "--format", "json", db=db, check=True).stdout)["alerts"]
    return {a["host"]: a for a in listed if a["first_bad"] == sha(STEP)}


def test_the_step_on_two_hosts_is_one_summary(lab):
    step = step_alerts(lab)
    assert set(step) == set(HOSTS), step
    assert step["box-a"]["summary"] == step["box-b"]["summary"]
    # each host's row keeps its own range: B never measured commit 19
    assert (step["box-a"]["last_good"], step["box-b"]["last_good"]) == (sha(STEP - 1), sha(STEP - 2))
    summaries = json.loads(run_cli("alerts", "--summary", "--format", "json", db=lab, check=True).stdout)
    (mine,) = [s for s in summaries["summaries"] if s["id"] == step["box-a"]["summary"]]
    assert sorted(a["host"] for a in mine["alerts"]) == sorted(HOSTS)
    text = run_cli("alert", str(step["box-a"]["id"]), db=lab, check=True).stdout
    assert f"{step['box-b']['id']} job.time @box-b" in text


def test_a_way_back_seen_on_one_host_recovers_the_other(lab):
    step = step_alerts(lab)
    assert all(a["recovered"] for a in step.values()), step
    shown = json.loads(run_cli("alert", str(step["box-b"]["id"]), "--format", "json", db=lab, check=True).stdout)
    notes = [e["note"] for e in shown["events"] if e["action"] == "recovered"]
    assert len(notes) == 1 and f"another host of summary {step['box-b']['summary']} came back at " \
        f"{sha(BACK)[:12]}; here too: time +" in notes[0], notes


def test_the_next_step_is_seen_on_both_hosts_in_one_summary(lab):
    listed = json.loads(run_cli("alerts", "--format", "json", db=lab, check=True).stdout)["alerts"]
    again = {a["host"]: a for a in listed if a["first_bad"] == sha(AGAIN)}
    assert set(again) == set(HOSTS) and len({a["summary"] for a in again.values()}) == 1, listed
    assert all(a["kind"] == "regression" and a["change_pct"] < -20 for a in again.values()), again


def _figures(text: str, pattern: str) -> tuple[float, str]:
    found = re.search(pattern, text)
    assert found, (pattern, text)
    return float(found.group(1)), found.group(2)


def test_every_view_gives_the_same_percent_and_p(lab):
    step = step_alerts(lab)
    history = json.loads(run_cli("history", "--format", "json", db=lab, check=True).stdout)
    listing = json.loads(run_cli("changes", "--format", "json", db=lab, check=True).stdout)
    changes = {c["id"]: c for c in listing["changes"]}
    table = run_cli("alerts", db=lab, check=True).stdout
    with serving(lab) as (url, _, _):
        pages = {host: html.unescape(urllib.request.urlopen(f"{url}/alerts/{a['id']}", timeout=60).read().decode())
                 for host, a in step.items()}
    for host, alert in step.items():
        pct, p = alert["change_pct"], alert["p_value"]
        assert pct < -25 and p < 1e-3, alert
        (series,) = [s for s in history["series"] if s["host"] == host and s["metric"] == "time"]
        (change,) = [c for c in series["changes"] if c["id"] == alert["change"]]
        listed = changes[alert["change"]]
        for other in (change, listed):
            assert other["change_pct"] == pytest.approx(pct, abs=0.1) and other["detection_p"] == pytest.approx(p)
        assert alert["detection_p"] == p
        shown_p = p_value(p)
        row = next(line for line in table.splitlines() if line.lstrip().startswith(f"{alert['id']} "))
        assert _figures(row, r"([+-][0-9.]+)% regression\s+(\S+)\s*$") == (round(pct, 1), shown_p), row
        detail = run_cli("alert", str(alert["id"]), db=lab, check=True).stdout
        report = run_cli("report", "change", alert["change"], db=lab, check=True).stdout
        header = _figures(detail, r"^alert \d+: regression of job\.time ([+-][0-9.]+)%.*\n(?:.*\n){2}change: \S+ "
                                  r"\(\S+\), p = (\S+)")
        assert header == (round(pct, 1), shown_p), detail
        for text in (detail, report, pages[host]):
            headline = re.search(r"perflab noticed a ([+-][0-9.]+)% regression", text)
            assert headline and float(headline.group(1)) == round(pct, 1), text
            assert f"between the centres, p = {shown_p} (Welch" in text, text


def test_the_after_side_ends_at_the_way_back(lab):
    step = step_alerts(lab)
    history = json.loads(run_cli("history", "--format", "json", db=lab, check=True).stdout)
    for host, alert in step.items():
        (series,) = [s for s in history["series"] if s["host"] == host and s["metric"] == "time"]
        by_id = {c["id"]: c for c in series["changes"]}
        change = by_id[alert["change"]]
        assert change["after"]["points"] == BACK - STEP, change   # the restored commits are not pooled
        assert change["after"]["centre"] == pytest.approx(0.130, rel=0.03)
        back = by_id[alert["recovered_by"]]
        assert back["index"] == change["index"] + BACK - STEP and back["kind"] == "improvement"
        assert back["before"]["points"] == BACK - STEP
        report = run_cli("report", "change", alert["change"], db=lab, check=True).stdout
        assert "(centre of 4 commits)" in report.split("after:")[1].splitlines()[0], report
        # the table is headed by the spans its values are the centres of
        assert f"{sha(STEP)[:7]}..{sha(BACK - 1)[:7]}" in report and '("centre of 4 commits")' in report


def test_a_schema_5_database_gives_each_alert_its_summarys_range(db_target):
    import sqlalchemy as sa

    from perflab.store import Store
    from perflab.store.schema import SCHEMA_VERSION
    values = {"change_id": "c0ffee0000", "host": "box-a", "benchmark": "job", "params": {}, "metric": "time",
              "unit": "s", "direction": "lower", "kind": "regression", "before": 0.1, "after": 0.13,
              "change_pct": 30.0, "oriented_pct": -30.0, "p_value": 1e-6, "method": "tip", "state": "untriaged",
              "duplicate_of": None}
    with Store(db_target, create=True) as store:
        store.alerts.create(values, last_good=sha(1), first_bad=sha(2), repo=None, who="perflab")
    url = (db_target.replace("postgresql://", "postgresql+psycopg://") if "://" in db_target
           else f"sqlite:///{db_target}")
    engine = sa.create_engine(url)
    with engine.begin() as conn:   # as schema 5 wrote it: the range only on the summary
        conn.execute(sa.text("ALTER TABLE alerts DROP COLUMN last_good"))
        conn.execute(sa.text("ALTER TABLE alerts DROP COLUMN first_bad"))
        conn.execute(sa.text("UPDATE perflab_meta SET value='5' WHERE key='schema_version'"))
    with Store(db_target) as store:
        (alert,) = store.alerts.all()
        assert (alert.last_good, alert.first_bad) == (sha(1), sha(2))
    with engine.connect() as conn:
        assert tuple(conn.execute(sa.text("SELECT last_good, first_bad FROM alerts")).one()) == (sha(1), sha(2))
        assert conn.execute(sa.text("SELECT value FROM perflab_meta WHERE key='schema_version'")).scalar() == \
            str(SCHEMA_VERSION)
    engine.dispose()
