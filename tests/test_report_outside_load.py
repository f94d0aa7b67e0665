"""A change report's outside-load warning is of the samples its table reads: the runs whose
samples of the change's test case recorded another load competing are named; a load that
competed only while another benchmark of the same runs ran is not (generated samples, both
backends; the figures of a real load: tests/test_contention.py)."""

from __future__ import annotations

import numpy as np
import pytest

from perflab.analysis.compare import Filters
from perflab.analysis.contention import OUTSIDE_SHARE, RESOURCES
from perflab.analysis.history import build_history, change_report
from perflab.model.records import (
    OUTSIDE_WINDOW_METRIC,
    Direction,
    Measurement,
    MetricInfo,
    Point,
    RunStatus,
    SampleStatus,
)
from perflab.model.run_request import RunRequest
from perflab.store import Store

from conftest import _new_pg_database, run_cli

COMMITS, STEP = 16, 8
WINDOW_US = 100_000.0
LOADED_SHARE = 0.4          # of the one CPU the runs' environment names: far over OUTSIDE_SHARE


def _record(db: str, loaded: str) -> None:
    """Two benchmarks a run, "job" stepping up at commit STEP; the runs from STEP on saw
    another load take LOADED_SHARE of the CPU while ``loaded``'s samples ran, none else."""
    rng = np.random.default_rng(7)
    cpu = next(name for name, resource in RESOURCES.items() if resource == "cpu")
    with Store(db, create=True) as store:
        for benchmark in ("job", "other"):
            store.metrics.save(benchmark, [MetricInfo("time", "s", Direction.LOWER)])
        for i in range(COMMITS):
            commit = f"{i:02d}" + "cd" * 19
            request = RunRequest.from_json({"version": 2, "identity": {"command_line": ["perflab", "run", "job"]}})
            run_id = store.runs.create(label="nightly", host="box", environment={}, request=request, commit=commit)
            for benchmark in ("job", "other"):
                level = 0.13 if benchmark == "job" and i >= STEP else 0.10
                share = LOADED_SHARE if benchmark == loaded and i >= STEP else 0.0
                for rep in range(5):
                    store.samples.add(run_id, Point(benchmark, {}), rep, [
                        Measurement("time", level * (1 + 0.01 * rng.standard_normal()), "s", SampleStatus.OK),
                        Measurement(cpu, share * WINDOW_US, "us", SampleStatus.OK),
                        *(Measurement(name, 0.0, "us", SampleStatus.OK) for name in RESOURCES if name != cpu),
                        Measurement(OUTSIDE_WINDOW_METRIC, WINDOW_US, "us", SampleStatus.OK)])
            store.series.seal(run_id)
            store.runs.set_status(run_id, RunStatus.COMPLETE)


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "perflab.db")
    return _new_pg_database(request.getfixturevalue("postgres_server"))


def _report_warnings(db: str) -> tuple[str, tuple[str, ...]]:
    with Store(db, create=False) as store:
        history = build_history(store, filters=Filters(frozenset({"job"}), (), frozenset({"time"})))
        (series,) = history.series
        (change,) = series.changes
        assert change.point.commit is not None and change.point.commit.startswith(f"{STEP:02d}")
        return change.id, change_report(store, change.id).comparison.warnings


def test_the_report_names_the_runs_a_load_competed_with_during_its_test_case(db):
    _record(db, loaded="job")
    change, warnings = _report_warnings(db)
    (line,) = [w for w in warnings if "another load competed" in w]
    assert f"over {100 * OUTSIDE_SHARE:g}%" in line and "40.0%" in line, line
    # the after side's runs (the loaded ones), never the before side's
    assert f"run {STEP + 1} " in line and "run 1 " not in line, line
    assert f"and {COMMITS - STEP - 3} more of {COMMITS} runs" in line, line
    assert "another load competed" in run_cli("report", "change", change, db=db, check=True).stdout


def test_a_load_during_another_benchmark_of_the_runs_is_not_the_reports(db):
    _record(db, loaded="other")
    _, warnings = _report_warnings(db)
    assert not [w for w in warnings if "another load" in w], warnings
    # the runs did record it: a comparison of the whole runs says so
    compared = run_cli("compare", str(STEP + 1), "1", db=db, check=True)
    assert "another load competed" in compared.stdout + compared.stderr
