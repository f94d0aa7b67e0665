"""The host model in the store: fitted from replicate groups, stored on SQLite and
PostgreSQL alike, refitted when replicates are added, borrowed by compare."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
import sqlalchemy as sa

from perflab.analysis.compare import Filters, compare_runs
from perflab.analysis.host_model import host_model
from perflab.model.records import Direction, Measurement, MetricInfo, Point, RunStatus
from perflab.model.run_request import RunRequest
from perflab.store import Store

from conftest import run_cli

KERNEL = {"kernel": {"release": "6.1", "version": "#1"}}


def _spec(benchmark: str) -> RunRequest:
    return RunRequest.from_json({"plans": [{"workload": {"workload": "command", "argv": [benchmark],
                                                         "benchmark": benchmark}, "sweep": {}, "options": {}}]})


def _record(store: Store, benchmark: str, label: str, level: float, rng: np.random.Generator,
            host: str = "box") -> int:
    run_id = store.runs.create(label=label, host=host, request=_spec(benchmark), environment=KERNEL)
    store.metrics.save(benchmark, [MetricInfo("time", "s", Direction.LOWER)])
    for rep, value in enumerate(np.exp(level + rng.normal(0, 0.01, 20))):
        store.samples.add(run_id, Point(benchmark, {}), rep, [Measurement("time", 0.01 * float(value), "s")])
    store.runs.set_status(run_id, RunStatus.COMPLETE)
    store.series.seal(run_id)
    return run_id


def _calibrate(store: Store, benchmark: str, k: int, rng: np.random.Generator, spread: float = 0.03) -> None:
    for _ in range(k):
        _record(store, benchmark, f"calibrate-{benchmark}", rng.normal(0, spread), rng)


def test_the_host_model_is_fitted_stored_and_refitted_on_new_replicates(db_target):
    rng = np.random.default_rng(1)
    with Store(db_target, create=True) as store:
        assert host_model(store, "box") == []
        for name in ("a", "b", "c", "d"):
            _calibrate(store, name, 4, rng)
        [first] = host_model(store, "box")
        assert first.kind == "wall time" and first.benchmarks == 4 and first.prior.groups == 4
        assert 1.0 < first.prior.cov_pct < 8.0           # the runs' levels differ by 3%
        assert [p.updated_at for p in store.host_priors.load("box")] == [first.updated_at]   # stored
        assert host_model(store, "box")[0].updated_at == first.updated_at                   # not refitted
        _calibrate(store, "e", 4, rng)
        [second] = host_model(store, "box")
        assert second.benchmarks == 5 and second.updated_at >= first.updated_at and second.stamp != first.stamp
        assert host_model(store, "elsewhere") == []


def test_compare_of_two_runs_borrows_the_host_prior_and_says_so(db_target):
    rng = np.random.default_rng(2)
    with Store(db_target, create=True) as store:
        for name in ("a", "b", "c", "d", "e"):
            _calibrate(store, name, 4, rng, spread=0.01)
        base, new = (_record(store, "x", label, 0.0, rng) for label in ("base", "new"))
        slow = _record(store, "x", "slow", float(np.log(1.3)), rng)
        runs = [store.runs.resolve(str(i)) for i in (base, new, slow)]
        # x's three runs are a replicate group too, but the runs compared are left out of the
        # prior (a real change among them would widen it) as of the row's own replicates
        report = compare_runs(store, runs, filters=Filters(metrics=frozenset({"time"})))
        [row] = report.rows
        used = [cell.change.run_to_run for cell in row.cells if cell.change is not None]
        assert [u.source for u in used if u is not None] == ["run-to-run: host prior from 5 benchmarks"] * 2
        assert row.cells[1].change is not None and row.cells[1].change.verdict.value == "regression"
        assert any("host prior from 5 benchmarks" in w for w in report.warnings)


def test_two_runs_with_nothing_known_name_the_default_and_the_command_that_teaches(sqlite_db):
    rng = np.random.default_rng(3)
    with Store(sqlite_db, create=True) as store:
        for label in ("base", "new"):
            _record(store, "x", label, 0.0, rng)
    out = run_cli("compare", "base", "new", db=sqlite_db, check=True).stdout
    assert "default prior for wall time: teach this host with 'perflab calibrate'" in out
    assert "undecided (1): x time" in out


def test_every_kind_with_nothing_known_borrows_its_stated_default(sqlite_db):
    """No rule of thumb decides two single runs: each kind of metric takes its default prior
    (wall time's and CPU time's fitted on bench/data, rates and counts borrowing wall time's),
    says which, and calls only what that prior can back: CPU time tripled is a regression,
    20% more of anything is undecided (docs/separate-runs.md)."""
    metrics = [MetricInfo("time", "s", Direction.LOWER), MetricInfo("user", "s", Direction.LOWER),
               MetricInfo("ops", "ops/s", Direction.HIGHER), MetricInfo("faults", "", Direction.LOWER)]
    rng = np.random.default_rng(5)
    with Store(sqlite_db, create=True) as store:
        ids = []
        for label, factor, cpu in (("base", 1.0, 1.0), ("more", 1.2, 1.2), ("tripled", 1.0, 3.0)):
            run_id = store.runs.create(label=label, host="box", request=_spec("x"), environment=KERNEL)
            store.metrics.save("x", metrics)
            for rep in range(20):
                noise = float(np.exp(rng.normal(0, 0.01)))
                store.samples.add(run_id, Point("x", {}), rep, [
                    Measurement("time", 0.01 * factor * noise, "s"), Measurement("user", 0.005 * cpu * noise, "s"),
                    Measurement("ops", 1000.0 / factor * noise, "ops/s"),
                    Measurement("faults", 500 * factor * noise, "")])
            store.runs.set_status(run_id, RunStatus.COMPLETE)
            store.series.seal(run_id)
            ids.append(run_id)
        base, more, tripled = (store.runs.resolve(str(i)) for i in ids)
        report = compare_runs(store, [base, more], all_metrics=True)
        cpu = compare_runs(store, [base, tripled], filters=Filters(metrics=frozenset({"user"})))
    teach = ": teach this host with 'perflab calibrate'"
    sources = {"time": "default prior for wall time" + teach, "user": "default prior for cpu time" + teach,
               "ops": "default prior for rate (wall time's: none of its own recorded)" + teach,
               "faults": "default prior for count (wall time's: none of its own recorded)" + teach}
    assert {row.metric for row in report.rows} == set(sources)
    for row in report.rows:
        change = row.cells[0].change
        assert change is not None and change.run_to_run is not None
        assert change.run_to_run.source == sources[row.metric]
        assert change.verdict.value == "undecided" and abs(change.pct) > 15, row.metric
    [row] = cpu.rows
    change = row.cells[0].change
    assert change is not None and change.verdict.value == "regression", change
    assert change.run_to_run is not None and change.run_to_run.source == sources["user"]
    assert not any("2%" in w for w in report.warnings)


def test_a_schema_4_database_gains_the_host_model_table(tmp_path):
    db = tmp_path / "old.db"
    Store(str(db), create=True).close()
    with sqlite3.connect(db) as conn:  # make it look like a schema-4 file
        conn.execute("DROP TABLE host_priors")
        conn.execute("UPDATE perflab_meta SET value='4' WHERE key='schema_version'")
    with Store(str(db)) as store:
        assert "host_priors" in set(sa.inspect(store.engine).get_table_names())


@pytest.mark.parametrize("has_store", [True, False])
def test_doctor_shows_the_host_model(sqlite_db, has_store):
    if has_store:
        with Store(sqlite_db, create=True) as store:
            _record(store, "x", "base", 0.0, np.random.default_rng(4))
    out = run_cli("doctor", db=sqlite_db, check=True).stdout
    assert "host model of run-to-run variance" in out and "perflab's default" in out


def test_calibrate_records_every_entry_k_times_and_shows_the_host_model(sqlite_db):
    out = run_cli("calibrate", "-k", "3", "-n", "4", "-c", "sleep 0.001", "-c", "sleep 0.002", "-c", "true",
                  db=sqlite_db, check=True).stdout
    assert "host model of run-to-run variance" in out
    assert "3 benchmark(s)" in out      # wall time, learned from the three commands
    with Store(sqlite_db) as store:
        assert [run.label for run in store.runs.all()] == ["calibrate"] * 3
        kinds = {p.kind for p in host_model(store, store.runs.all()[0].host)}
        assert "wall time" in kinds
