"""The watch's log (fleet/watch.py AlertLog, render/watch_log.py) on a real store: the alerts'
events since the watch started, one line each, stamped with the event's own UTC time. The
fleet's watch prints them (tests/test_fleet.py)."""

from __future__ import annotations

import re

from perflab.fleet.watch import AlertLog
from perflab.model.alerts import BISECT_QUEUED, BISECTED, EVIDENCE, RERUN_REQUESTED, UNTRIAGED
from perflab.model.run_request import RunRequest
from perflab.render.watch_log import log_line, utc
from perflab.store import Store


def _alert(store: Store, change: str, method: str) -> int:
    values = {"change_id": change, "host": "bm1", "benchmark": "prog", "params": {}, "metric": "time",
              "unit": "s", "direction": "lower", "kind": "regression", "before": 1.0, "after": 1.3,
              "change_pct": 30.0, "oriented_pct": -23.1, "p_value": 0.001, "method": method,
              "state": UNTRIAGED, "duplicate_of": None}
    alert_id = store.alerts.create(values, last_good="a" * 40, first_bad="b" * 40, repo=None, who="perflab")
    assert alert_id is not None
    return alert_id


def test_each_alert_event_since_the_watch_started_is_one_stamped_line(tmp_path):
    with Store(str(tmp_path / "perflab.db"), create=True) as store:
        _alert(store, "before", "tip")                         # before the watch: not its to log
        log = AlertLog(store)
        assert log.new_lines(store) == []
        suspect = _alert(store, "c1", "tip-suspect")
        store.alerts.note(store.alerts.get(suspect), RERUN_REQUESTED, who="perflab", note="asked")
        run = store.runs.create(label="x", host="bm1", request=RunRequest(), environment={})
        store.alerts.add_evidence(store.alerts.get(suspect), run, who="perflab", note="run")
        store.alerts.confirm(store.alerts.get(suspect), who="perflab", note="the new level held (tip)")
        store.alerts.note(store.alerts.get(suspect), BISECT_QUEUED, who="perflab", note="bisect job 3 on bm1")
        store.alerts.note(store.alerts.get(suspect), BISECTED, who="perflab", note="bisect job 3 on bm1: found")
        store.alerts.move(store.alerts.get(suspect), "acknowledged", action="ack", who="ann", note="mine")
        lines = log.new_lines(store)
        assert log.new_lines(store) == []                      # each event is logged once
        events = [e for e in store.alerts.events(suspect) if e.action not in (EVIDENCE, RERUN_REQUESTED)]
    words = [line.text.split(":")[0] for line in lines]
    assert words == ["suspect", "confirmed", "bisect queued", "bisect answer", "ack"], lines
    assert [line.at for line in lines] == [e.at for e in events]
    assert lines[0].text.startswith(f"suspect: alert {suspect} (prog time @bm1, -23.1% regression, commits ")
    assert lines[3].text.endswith(": bisect job 3 on bm1: found")
    assert lines[4].text.startswith(f"ack: alert {suspect} by ann (")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ suspect: .*", log_line(lines[0].at, lines[0].text))
    assert utc(1795867203.7) == "2026-11-28T12:00:03Z"
