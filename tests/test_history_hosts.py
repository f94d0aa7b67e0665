"""The history of one machine: `history --host`, `changes --host`, the dashboard's ?host=, and
the store's reads of one host's series (schema 11's ix_runs_host_light), on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import numpy as np

from conftest import run_cli, serving
from test_history import long_history

OTHER = "rack2"


def with_other_host(base, db: str | None = None) -> tuple[str, list[str]]:
    """long_history's store (host "box") with a second host measuring the same benchmark and
    metric at every other commit, its own level, stepping at commit 20."""
    from perflab.model.records import Measurement, Point, RunStatus
    from perflab.model.run_request import RunRequest
    from perflab.store import Store
    db, repo, shas = long_history(base, db=db)
    rng = np.random.default_rng(3)
    with Store(db) as store:
        for i, sha in enumerate(shas[::2]):
            run_id = store.runs.create(label="nightly", host=OTHER, request=RunRequest(), environment={},
                                       commit=sha, commit_describe=sha[:7], repo=str(repo))
            for rep in range(3):
                value = (50.0 if 2 * i < 20 else 60.0) * (1 + 0.01 * rng.standard_normal())
                store.samples.add(run_id, Point("wis", {"test": "poll2", "mode": "thread"}), rep,
                                  [Measurement("ops", value, "ops/s")])
            store.series.seal(run_id)
            store.runs.set_status(run_id, RunStatus.COMPLETE)
    return db, shas


def test_one_hosts_series_are_those_of_the_whole_history(db_target, tmp_path):
    from perflab.analysis.compare import Filters
    from perflab.analysis.history import build_history
    from perflab.store import Store
    db, shas = with_other_host(tmp_path, db_target)
    with Store(db) as store:
        every = build_history(store)
        wis_ops = Filters(frozenset({"wis"}), (), frozenset({"ops"}))
        for host in ("box", OTHER):
            [wanted] = [s for s in every.series if s.host == host and s.metric == "ops"]
            for narrow in (build_history(store, hosts=frozenset({host})),
                           build_history(store, filters=wis_ops, hosts=frozenset({host}))):
                [found] = [s for s in narrow.series if s.metric == "ops"]
                assert {s.host for s in narrow.series} == {host}
                assert [p.point.key for p in found.points] == [p.point.key for p in wanted.points]
                assert [c.id for c in found.changes] == [c.id for c in wanted.changes]
            # the runs that measured it there, and its values there alone
            runs = store.runs.all(counted=False, details=False)
            assert [r.id for r in store.runs.measuring({"wis"}, {"ops"}, {host})] == [
                r.id for r in runs if r.host == host]
            values = store.series.of_one(host, "wis", wanted.params_key, "ops")
            assert [run_id for run_id, *_ in values] == [r.id for r in runs if r.host == host]
    assert [c.point.commit for c in every.changes() if c.host == OTHER] == [shas[20]]


def test_history_and_changes_of_one_host_and_of_none(tmp_path):
    db, shas = with_other_host(tmp_path)
    shown = json.loads(run_cli("history", "--metric", "ops", "--host", OTHER, "--format", "json",
                               db=db, check=True).stdout)
    assert {s["host"] for s in shown["series"]} == {OTHER}
    listed = run_cli("changes", "--host", "box", db=db, check=True).stdout
    assert shas[30][:8] in listed and shas[20][:8] not in listed
    for command, *narrowed in (("history",), ("changes",), ("history", "--metric", "ops")):
        bad = run_cli(command, *narrowed, "--host", "no-such-host", db=db)
        assert bad.returncode == 2 and "Traceback" not in bad.stderr
        assert bad.stderr.strip().splitlines() == [
            "perflab: error: no runs on host no-such-host ('perflab runs' lists them)"]
    # a host with runs, none of the metric: the filter's own line
    bad = run_cli("history", "--metric", "nope", "--host", OTHER, db=db)
    assert bad.returncode == 2 and bad.stderr.startswith("perflab: error: no runs with metric nope"), bad.stderr


def test_the_dashboards_history_of_one_host(tmp_path):
    db, shas = with_other_host(tmp_path)
    with serving(db) as (url, _, _):
        for host, shown, not_shown in ((OTHER, shas[20], shas[1]), ("box", shas[1], None)):   # OTHER: even commits
            with urllib.request.urlopen(f"{url}/history?metric=ops&host={host}&format=text", timeout=60) as page:
                text = page.read().decode()
            assert shown[:12] in text and (not_shown is None or not_shown[:12] not in text)
        with urllib.request.urlopen(f"{url}/changes?host=box", timeout=60) as page:
            listed = page.read().decode()
        assert shas[30][:8] in listed and shas[20][:8] not in listed
        try:
            urllib.request.urlopen(f"{url}/history?metric=ops&host=no-such-host", timeout=60)
            raise AssertionError("an unknown host was answered")
        except urllib.error.HTTPError as refused:
            assert refused.code == 404 and "no runs on host no-such-host" in refused.read().decode()   # names nothing
