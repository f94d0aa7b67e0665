"""Profile rows and artifacts in the store (schema 2), and the migration from schema 1."""

import hashlib
import sqlite3

import sqlalchemy as sa

from perflab.model.records import Point
from perflab.model.run_request import RunRequest
from perflab.store import Store
from perflab.store.schema import SCHEMA_VERSION, meta


def _run(store: Store) -> int:
    return store.runs.create(label="base", host="h", request=RunRequest(), environment={})


def test_profile_rows_round_trip_and_a_rerun_replaces_them(db_target):
    with Store(db_target, create=True) as store:
        run_id = _run(store)
        point_id = store.samples.point_id(Point("prog", {"n": 1}))
        store.profiles.add(run_id, point_id, 0, "cpu-clock",
                           [("hot_loop", 79.0, 79.5), ("main", 0.5, 99.9)],
                           [("calltrace", "hot_loop;main", 79.0), ("stack", "main;hot_loop", 316.0)])
        store.profiles.add(run_id, point_id, 1, "cpu-clock", [("hot_loop", 80.0, 80.0)], [])
        store.profiles.add(run_id, point_id, 1, "cpu-clock", [("hot_loop", 81.0, 81.0)], [])
        symbols = store.profiles.symbols(run_id)
        assert [(s.symbol, s.repetition, s.self_pct) for s in symbols] == [
            ("hot_loop", 0, 79.0), ("hot_loop", 1, 81.0), ("main", 0, 0.5)]
        assert symbols[0].benchmark == "prog" and symbols[0].point == '{"n":1}' and symbols[0].params == {"n": 1}
        traces = store.profiles.traces(run_id, "stack")
        assert [(t.frames, t.value) for t in traces] == [("main;hot_loop", 316.0)]
        assert store.profiles.symbols(run_id, {"other"}) == []


def test_the_profiled_runs_of_more_runs_than_one_list_holds(db_target):
    """Of 1,200 runs (over RUNS_BY_ID: several lists on SQLite, one array on PostgreSQL), the
    profiled ones, by symbols or by traces alone; none asked, none found."""
    from perflab.store.connection import RUNS_BY_ID
    with Store(db_target, create=True) as store:
        point_id = store.samples.point_id(Point("prog", {}))
        ids = [_run(store) for _ in range(1200)]
        assert len(ids) > 2 * RUNS_BY_ID
        by_symbols, by_traces = ids[3::250], ids[700::333]
        for run_id in by_symbols:
            store.profiles.add(run_id, point_id, 0, "cpu-clock", [("hot", 50.0, 60.0)], [])
        for run_id in by_traces:
            store.profiles.add(run_id, point_id, 0, "cpu-clock", [], [("stack", "main;hot", 10.0)])
        assert store.profiles.profiled_runs(ids) == set(by_symbols) | set(by_traces)
        assert store.profiles.profiled_runs(ids[:3]) == set()
        assert store.profiles.profiled_runs([]) == set()


def test_artifacts_are_stored_once_by_content_hash_beside_the_database(tmp_path):
    db = tmp_path / "lab.db"
    with Store(str(db), create=True) as store:
        run_id = _run(store)
        point_id = store.samples.point_id(Point("prog", {}))
        for repetition in range(2):
            source = tmp_path / f"perf-{repetition}.data"
            source.write_bytes(b"PERFILE2 same bytes")
            artifact = store.artifacts.add(run_id, point_id, repetition, "perf.data", source)
            assert not source.exists()
        sha = hashlib.sha256(b"PERFILE2 same bytes").hexdigest()
        assert artifact.path == tmp_path / "lab.db.artifacts" / sha[:2] / sha
        assert artifact.path.read_bytes() == b"PERFILE2 same bytes"
        listed = store.artifacts.of_run(run_id)
        assert [(a.repetition, a.kind, a.sha256, a.size, a.benchmark) for a in listed] == [
            (0, "perf.data", sha, 19, "prog"), (1, "perf.data", sha, 19, "prog")]


def test_a_schema_1_database_gains_the_profile_tables(tmp_path):
    db = tmp_path / "old.db"
    with Store(str(db), create=True) as store:
        run_id = _run(store)
    with sqlite3.connect(db) as conn:  # make it look like a schema-1 file
        conn.execute("DROP TABLE profile_symbols")
        conn.execute("DROP TABLE profile_traces")
        conn.execute("UPDATE perflab_meta SET value='1' WHERE key='schema_version'")
    with Store(str(db)) as store:
        version = store.conn.execute(sa.select(meta.c.value).where(meta.c.key == "schema_version")).scalar()
        assert int(version) == SCHEMA_VERSION
        assert {"profile_symbols", "profile_traces"} <= set(sa.inspect(store.engine).get_table_names())
        assert store.runs.resolve(str(run_id)).id == run_id
        assert store.profiles.symbols(run_id) == []
