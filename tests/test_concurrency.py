"""Many perflab processes on one database at once: nothing lost, no process fails.

Issue 16, defects 1, 2 and 9: concurrent first use of a new database (schema creation,
metric registration), and several processes recovering the same dead run.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess

import pytest
import sqlalchemy as sa

from perflab.model.records import Direction, Measurement, MetricInfo, Point, RunStatus
from perflab.model.run_request import RunRequest
from perflab.store import Store
from perflab.store.schema import runs

from conftest import perflab_argv

WRITERS = 16
SAMPLES = 50
TRIALS = 3


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PERFLAB_DB", None)
    return env


def _concurrent_runs(db: str, benchmark: str | None = None) -> None:
    """WRITERS perflab runs started together on ``db``; each must exit 0 and keep all."""
    name = ["--name", benchmark] if benchmark else []
    perflab = perflab_argv()   # forked from the fork server: the 16 start closer together than 16 interpreters
    procs = [subprocess.Popen([*perflab, "--db", db, "run", "-n", str(SAMPLES), "-q",
                               "--label", f"c{i}", *name, "--", "true"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=_env(), stdin=subprocess.DEVNULL)
             for i in range(WRITERS)]
    failures = []
    for proc in procs:
        _, stderr = proc.communicate(timeout=600)
        if proc.returncode != 0:
            failures.append(f"exit {proc.returncode}: {stderr.strip()[-500:]}")
    assert not failures, failures
    with Store(db) as store:
        listed = {run.label: run for run in store.runs.all()}
        assert sorted(listed) == sorted(f"c{i}" for i in range(WRITERS))
        for run in listed.values():
            assert run.status is RunStatus.COMPLETE
            rows = store.samples.rows(run.id)
            kept = sorted(int(r) for r, m in zip(rows.repetition, rows.metric) if m == "time")
            assert kept == list(range(SAMPLES)), (run.label, kept)


@pytest.mark.parametrize("trial", range(TRIALS))
def test_concurrent_first_use_of_a_new_sqlite_database(tmp_path, trial):
    _concurrent_runs(str(tmp_path / "new.db"))


@pytest.mark.parametrize("trial", range(TRIALS))
def test_concurrent_first_use_of_a_new_postgresql_database(postgres_server, trial):
    from conftest import _new_pg_database
    _concurrent_runs(_new_pg_database(postgres_server))


def test_concurrent_registration_of_one_new_benchmark(tmp_path):
    db = str(tmp_path / "shared.db")
    Store(db, create=True).close()   # the schema exists; the benchmark name is new to all
    _concurrent_runs(db, benchmark="same-name")


def _register(db: str, start: multiprocessing.synchronize.Barrier) -> None:
    start.wait()
    with Store(db, create=True) as store:
        store.metrics.save("b", [MetricInfo("time", "s", Direction.LOWER)])


def test_metric_registration_is_idempotent_under_concurrency(db_target):
    Store(db_target, create=True).close()
    context = multiprocessing.get_context("fork")
    start = context.Barrier(8)
    workers = [context.Process(target=_register, args=(db_target, start)) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0] * 8
    with Store(db_target) as store:
        assert list(store.metrics.infos("b")) == ["time"]


def _dead_run_with_pending(db: str) -> tuple[int, str]:
    with Store(db, create=True) as store:
        run_id = store.runs.create(label="dead", host=os.uname().nodename, request=RunRequest(), environment={})
        pending = store.pending.open(run_id)
        point_id = store.samples.point_id(Point("b", {}))
        for rep in range(20):
            pending.append(point_id, rep, 1.0 + rep, [Measurement("time", 1.0 + rep, "s")])
        pending.close()
        store.conn.execute(runs.update().where(runs.c.id == run_id).values(pid=2**22 + 4321))
        store.conn.commit()
        return run_id, str(pending.path)


def _open(db: str, start: multiprocessing.synchronize.Barrier) -> None:
    start.wait()
    Store(db).close()


def test_recovering_a_dead_run_races_with_no_one(db_target):
    run_id, path = _dead_run_with_pending(db_target)
    context = multiprocessing.get_context("fork")
    start = context.Barrier(8)
    workers = [context.Process(target=_open, args=(db_target, start)) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0] * 8
    assert not os.path.exists(path)
    prefix = os.path.basename(path).split(".pending-run-")[0]   # this database's files only
    assert not [p for p in os.listdir(os.path.dirname(path))
                if p.startswith(prefix + ".pending-run-")]
    with Store(db_target) as store:
        assert store.samples.rows(run_id).value.tolist() == [1.0 + rep for rep in range(20)]


def test_a_recovered_dead_run_is_written_interrupted(db_target):
    run_id, _ = _dead_run_with_pending(db_target)
    Store(db_target).close()   # a later perflab recovers it
    engine = sa.create_engine(db_target if "://" in db_target else f"sqlite:///{db_target}")
    if engine.dialect.name == "postgresql":
        engine.dispose()
        engine = sa.create_engine(db_target.replace("postgresql://", "postgresql+psycopg://"))
    with engine.connect() as conn:
        status, finished = conn.execute(sa.select(runs.c.status, runs.c.finished_at)
                                        .where(runs.c.id == run_id)).one()
    engine.dispose()
    assert status == "interrupted"
    assert finished == 20.0   # the last sample it measured


def test_a_dead_run_without_pending_file_is_written_interrupted(db_target):
    with Store(db_target, create=True) as store:
        run_id = store.runs.create(label="dead", host=os.uname().nodename, request=RunRequest(), environment={})
        store.conn.execute(runs.update().where(runs.c.id == run_id).values(pid=2**22 + 4321))
        store.conn.commit()
    with Store(db_target) as store:
        row = store.conn.execute(sa.select(runs.c.status).where(runs.c.id == run_id)).scalar()
        assert row == "interrupted"
