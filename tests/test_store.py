"""The store against a real SQLite file and a real PostgreSQL server."""

import os
import sqlite3

import pytest
import sqlalchemy as sa

from perflab.model.errors import EnvironmentProblem, UsageError
from perflab.model.records import Direction, Measurement, MetricInfo, Point, RunStatus, SampleStatus
from perflab.model.run_request import RunRequest
from perflab.store import Store
from perflab.store.schema import SCHEMA_VERSION, meta, runs


def _run(store: Store, label: str = "base") -> int:
    return store.runs.create(label=label, host="h", request=RunRequest(), environment={"cpu": {"model": "x"}})


def test_schema_created_with_version(db_target):
    with Store(db_target, create=True) as store:
        tables = set(sa.inspect(store.engine).get_table_names())
        assert {"runs", "points", "samples", "metrics", "artifacts", "perflab_meta"} <= tables
        version = store.conn.execute(sa.select(meta.c.value).where(meta.c.key == "schema_version")).scalar()
        assert int(version) == SCHEMA_VERSION


def test_samples_round_trip_in_long_format(db_target):
    with Store(db_target, create=True) as store:
        run_id = _run(store)
        point = Point("mytool", {"size": "small"})
        store.samples.add(run_id, point, 0, [Measurement("time", 1.5, "s"), Measurement("user", 1.0, "s")])
        store.samples.add(run_id, point, 1, [Measurement("time", None, "s", SampleStatus.FAILED, "exit status 1")])
        rows = store.samples.rows(run_id)
        assert rows.metric == ["time", "user", "time"]
        assert rows.value[0] == 1.5 and rows.value[1] == 1.0
        assert rows.value[2] != rows.value[2]  # NaN for the failed sample
        assert rows.status == ["ok", "ok", "failed"]
        assert rows.note[2] == "exit status 1"
        assert rows.points[0] == '{"size":"small"}' and rows.params[0] == {"size": "small"}
        assert store.samples.done_repetitions(run_id) == {("mytool", '{"size":"small"}', 0),
                                                          ("mytool", '{"size":"small"}', 1)}


def test_runs_listed_with_counts_and_resolved_by_label(db_target):
    with Store(db_target, create=True) as store:
        first = _run(store, "base")
        second = _run(store, "base")
        other = _run(store, "patched")
        for rep in range(3):
            store.samples.add(second, Point("b1", {}), rep, [Measurement("time", 1.0, "s"),
                                                             Measurement("user", 1.0, "s")])
        store.samples.add(second, Point("b2", {"n": 1}), 0, [Measurement("time", 1.0, "s")])
        store.runs.set_status(second, RunStatus.COMPLETE)
        listed = {r.id: r for r in store.runs.all()}
        assert listed[second].samples == 4 and listed[second].benchmarks == 2
        assert listed[first].samples == 0
        assert listed[second].status is RunStatus.COMPLETE
        assert store.runs.resolve("base").id == second  # the latest with that label
        assert store.runs.resolve(str(first)).id == first
        assert store.runs.resolve("patched").id == other
        with pytest.raises(UsageError, match="no run with id or label 'nope'"):
            store.runs.resolve("nope")


def test_metric_metadata_kept(db_target):
    with Store(db_target, create=True) as store:
        info = MetricInfo("ops", "ops/s", Direction.HIGHER, 0.02, "operations")
        store.metrics.save("wis", [info])
        store.metrics.save("wis", [info])  # idempotent
        assert store.metrics.infos("wis") == {"ops": info}


def test_newer_schema_is_refused(db_target):
    with Store(db_target, create=True) as store:
        store.conn.execute(meta.update().where(meta.c.key == "schema_version").values(value="999"))
        store.conn.commit()
    with pytest.raises(EnvironmentProblem, match="newer perflab"):
        Store(db_target)


def _index_names(store) -> set[str]:
    inspector = sa.inspect(store.conn)
    return {i["name"] for table in ("runs", "series") for i in inspector.get_indexes(table)}


@pytest.mark.parametrize("version", [9, 10])
def test_an_older_store_gains_the_indexes_a_history_reads_alone(db_target, version):
    """Schemas 10 and 11: a store of schema 9 (no index of runs by host) or 10 (that index
    without the columns a history reads; schema 8's index of series by point without their
    values) opened by this perflab has, on PostgreSQL, the indexes that carry them (INCLUDE)
    in place of those; SQLite keeps schema 8's and never has an index of runs by host. Its
    runs and values unchanged."""
    covering = {"ix_runs_host_light", "ix_series_point_values"}
    with Store(db_target, create=True) as store:
        run_id = _run(store)
        for rep in range(3):
            store.samples.add(run_id, Point("b", {}), rep, [Measurement("ops", 10.0 + rep, "ops/s")])
        store.series.seal(run_id)
        store.runs.set_status(run_id, RunStatus.COMPLETE)
        values = store.series.of_one("h", "b", "{}", "ops")
        assert [list(v) for *_, v in values] == [[10.0, 11.0, 12.0]]
        server = store.is_server
        assert covering <= _index_names(store) if server else not covering & _index_names(store)
        if server:   # the indexes of the older schema
            for name in covering:
                store.conn.exec_driver_sql(f"DROP INDEX {name}")
            store.conn.exec_driver_sql("CREATE INDEX ix_series_point_metric ON series (point_id, metric, run_id)")
            if version == 10:
                store.conn.exec_driver_sql("CREATE INDEX ix_runs_host ON runs (host, id)")
        store.conn.execute(meta.update().where(meta.c.key == "schema_version").values(value=str(version)))
        store.conn.commit()
    with Store(db_target) as store:
        names = _index_names(store)
        if server:
            assert covering <= names and not {"ix_runs_host", "ix_series_point_metric"} & names
            defined = dict(store.conn.exec_driver_sql(
                "SELECT indexname, indexdef FROM pg_indexes WHERE indexname IN "
                "('ix_runs_host_light', 'ix_series_point_values')").all())
            assert "INCLUDE (label, " in defined["ix_runs_host_light"]
            assert "INCLUDE (unit, failures, ok_values)" in defined["ix_series_point_values"]
        else:
            assert "ix_series_point_metric" in names and not covering & names
        assert int(store.conn.execute(sa.select(meta.c.value).where(meta.c.key == "schema_version")).scalar()) \
            == SCHEMA_VERSION
        assert [r.id for r in store.runs.all()] == [run_id]
        assert [(i, list(v)) for i, *_, v in store.series.of_one("h", "b", "{}", "ops")] \
            == [(i, list(v)) for i, *_, v in values]


def test_foreign_database_is_refused(db_target):
    engine = sa.create_engine(db_target.replace("postgresql://", "postgresql+psycopg://")
                              if "://" in db_target else f"sqlite:///{db_target}")
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE customers (id integer)"))
    engine.dispose()
    with pytest.raises(UsageError, match="not a perflab database"):
        Store(db_target, create=True)


def test_non_sqlite_file_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello, this is not a database\n")
    with pytest.raises(UsageError, match="not a perflab database"):
        Store(str(path), create=True)
    assert path.read_text() == "hello, this is not a database\n"


def test_readers_do_not_create_a_database(tmp_path):
    path = tmp_path / "absent.db"
    with pytest.raises(UsageError, match="no perflab database"):
        Store(str(path))
    assert not path.exists()


def test_sqlite_uses_wal(sqlite_db):
    Store(sqlite_db, create=True).close()
    with sqlite3.connect(sqlite_db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_unwritable_location_is_an_environment_problem(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    import os
    # root writes anywhere; a read-only place for root is /proc.
    target = "/proc/perflab/perflab.db" if os.geteuid() == 0 else str(locked / "sub" / "perflab.db")
    with pytest.raises(EnvironmentProblem, match="cannot create the database"):
        Store(target, create=True)


def test_pending_samples_of_a_dead_run_are_recovered_once(db_target):
    with Store(db_target, create=True) as store:
        run_id = _run(store)
        point = Point("b", {"n": 1})
        pending = store.pending.open(run_id)
        for rep in range(3):
            pending.append(store.samples.point_id(point), rep, 1.0, [Measurement("time", 0.5 + rep, "s")])
        pending.close()
        # a crash after a flush but before the truncation: the same lines again
        with open(pending.path, "ab") as handle:
            handle.write(pending.path.read_bytes())
        # owned by a perflab on this host that is gone
        store.conn.execute(runs.update().where(runs.c.id == run_id)
                           .values(pid=2**22 + 12345, host=os.uname().nodename))
        store.conn.commit()
        path = pending.path
    with Store(db_target) as store:  # a later perflab opens the database
        values = store.samples.rows(run_id).value.tolist()
        assert values == [0.5, 1.5, 2.5]
        assert not path.exists()


def test_pending_samples_of_a_live_run_are_left_to_it(db_target):
    with Store(db_target, create=True) as store:
        run_id = _run(store)  # status running, owned by this (live) process
        pending = store.pending.open(run_id)
        pending.append(store.samples.point_id(Point("b", {})), 0, 1.0, [Measurement("time", 1.0, "s")])
        with Store(db_target) as other:
            assert len(other.samples.rows(run_id)) == 0
        assert pending.path.exists()
        store.pending.flush(run_id, pending)
        assert store.samples.rows(run_id).value.tolist() == [1.0]
        assert pending.path.stat().st_size == 0
        pending.close()


def test_runs_listed_without_details_refuse_their_spec_until_read(db_target):
    """A history's runs come without spec and environment: reading them raises (never an
    empty record passed off as the run's), and with_details reads the real ones."""
    import json
    spec, environment = {"command_line": ["perflab", "run", "x"]}, {"kernel": {"release": "6.1"}}
    with Store(db_target, create=True) as store:
        ids = [store.runs.create(label=f"r{i}", host="box", request=RunRequest.from_json(spec),
                                 environment=environment, commit=f"{i:040x}")
                for i in range(3)]
        full = store.runs.all(counted=False)
        light = store.runs.all(counted=False, details=False)
        assert [(r.id, r.label, r.commit, r.status, r.started_at) for r in light] == \
            [(r.id, r.label, r.commit, r.status, r.started_at) for r in full]
        for use in (lambda r: r.spec.get("command_line"), lambda r: r.environment or {},
                    lambda r: json.dumps(r.spec), lambda r: dict(r.environment), lambda r: "kernel" in r.environment):
            with pytest.raises(LookupError, match="not loaded"):
                use(light[0])
        detailed = store.runs.with_details(light[1:])
        assert sorted(detailed) == ids[1:]
        assert all(detailed[i].request == RunRequest.from_json(spec) and detailed[i].environment == environment
                   for i in ids[1:])


def test_value_groups_of_many_runs_are_each_runs_own(db_target):
    """One query for many runs gives each run what value_groups gives it: sealed runs from
    their series, an unsealed one from its rows, a failed sample left out."""
    with Store(db_target, create=True) as store:
        ids = []
        for r in range(3):
            run_id = store.runs.create(label=f"r{r}", host="box", request=RunRequest(), environment={})
            for rep in range(4):
                for name in ("fast", "slow"):
                    status = SampleStatus.FAILED if (r, rep, name) == (1, 2, "slow") else SampleStatus.OK
                    store.samples.add(run_id, Point(name, {"n": rep % 2}), rep,
                                      [Measurement("time", 1.0 + r + rep / 10, "s", status),
                                       Measurement("rss", 100.0 * (r + 1), "B")])
            if r != 2:
                store.series.seal(run_id)  # the last run stays unsealed
            ids.append(run_id)
        for benchmarks, metrics in ((None, None), ({"slow"}, None), (None, {"time"})):
            many = store.series.value_groups_of_runs(ids[1:], benchmarks, metrics)
            assert set(many) == set(ids[1:])
            for run_id in ids[1:]:
                one = store.series.value_groups(run_id, benchmarks, metrics)
                key = lambda g: (g.benchmark, g.point, g.metric)  # noqa: E731
                assert sorted(map(key, many[run_id])) == sorted(map(key, one))
                for a, b in zip(sorted(many[run_id], key=key), sorted(one, key=key)):
                    assert a.values.tolist() == b.values.tolist() and a.failures == b.failures
        assert store.series.value_groups_of_runs([]) == {}


def test_replicate_runs_are_the_same_thing_on_the_same_host_kernel_and_commit(db_target):
    """Replicates: runs of one command with the same set-up on one host, kernel and commit,
    grouped by a label they share or pooled when each has a label of its own; runs being
    compared are left out, and a different command, option, kernel or commit is another thing."""
    def spec(argv: list[str], cpus: list[int] | None = None, n: int = 25) -> dict:
        return {"plans": [{"workload": {"workload": "command", "argv": argv, "benchmark": "t"},
                           "sweep": {}, "options": {"repetitions": n, "seed": n, "cpus": cpus},
                           "shell_overhead": [0.001 * n, 0.0, 0.0]}]}
    kernel = {"kernel": {"release": "6.1", "version": "#1"}}
    nap = ["sleep", "0.01"]
    with Store(db_target, create=True) as store:
        def run(label: str, s: dict, environment: dict = kernel, commit: str | None = None, done: bool = True) -> int:
            run_id = store.runs.create(label=label, host="box", request=RunRequest.from_json(s),
                                       environment=environment, commit=commit)
            if done:
                store.runs.set_status(run_id, RunStatus.COMPLETE)
            return run_id
        aa = [run(f"{side}{i}", spec(nap, n=10 + i)) for i in range(3) for side in "ab"]  # own labels
        calibrated = [run("calibrate", spec(nap)) for _ in range(3)]                          # one label
        builds = [run(label, spec(nap)) for label in ("base", "base", "new", "new")]         # two builds
        others = [run("a9", spec(["sleep", "0.02"])), run("a8", spec(["sleep", "0.02"]), commit="c" * 40),
                  run("a7", spec(nap, cpus=[1])), run("a6", spec(nap), {"kernel": {"release": "6.2"}}),
                  run("a5", spec(nap), done=False)]
        groups = sorted(sorted(g) for g in store.runs.replicates({"box"}))
        assert groups == sorted([aa, calibrated, builds[:2], builds[2:]])
        assert not any(set(g) & set(others) for g in groups)
        # the runs compared are not their own replicates: what is left of their groups is
        groups = sorted(sorted(g) for g in store.runs.replicates({"box"}, exclude={aa[0], aa[1], builds[0]}))
        assert groups == sorted([aa[2:], calibrated, builds[2:]])
        assert store.runs.replicates({"elsewhere"}) == []


def test_a_kept_engine_serves_the_next_store_with_the_same_connection(db_target):
    """The dashboard's stores (web/app.py, ``_Dashboard.store``): on PostgreSQL the second
    request's store is served by the first's pooled connection (one server process, which has
    read the catalog), its engine left open at close; on SQLite every store has its own engine."""
    from perflab.web.app import _Dashboard
    with Store(db_target, create=True) as store:
        _run(store)
    pages = _Dashboard(db_target, None)
    with pages.store() as first:
        server = first.is_server
        if server:
            pid = first.conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
        engine = first.engine
    with pages.store() as second:
        assert (second.engine is engine) == server
        if server:
            assert second.conn.exec_driver_sql("SELECT pg_backend_pid()").scalar() == pid
        assert [r.label for r in second.runs.all()] == ["base"]
