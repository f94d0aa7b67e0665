"""The wis workload: its parser on real output, its rules, and real runs of every testcase."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from perflab.execute.run_plan import plan_run
from perflab.execute.runner import Runner
from perflab.model.errors import UsageError
from perflab.model.records import Direction, ProcessResult, SampleStatus
from perflab.model.run_request import Identity, RunOptions, RunRequest
from perflab.render.progress import NullProgress
from perflab.store import Store
from perflab.workloads.base import SampleContext
from perflab.workloads.registry import builtin
from perflab.workloads.wis import TESTCASES, parse_output

DATA = Path(__file__).resolve().parent / "data"
OK = ProcessResult(1.0, 1.0, 0.0, None, 0, None, False)


def run(tmp_path, sweep, repetitions=1):
    store = Store(str(tmp_path / "db"), create=True)
    plan = plan_run(builtin("wis"), sweep, RunOptions(repetitions=repetitions))
    run_id = Runner(store, [plan], NullProgress(), warn=lambda _: None).start(RunRequest(identity=Identity(label="t")))
    return store.samples.rows(run_id).own()   # without the pressure stalls every sample records


def context(stdout="", stderr="", **params):
    params = {"test": "poll2", "mode": "thread", **params}
    return SampleContext(params, 0, stdout, stderr)


# -- parsing real output -------------------------------------------------------------
def test_parse_thread_output():
    parsed = parse_output((DATA / "wis_poll2_thread_2tasks.out").read_text())
    assert parsed.total_ops_per_s == 388900
    assert parsed.per_task_ops_per_s == 194450
    assert parsed.measured_s == pytest.approx(3.0, abs=1e-3)


def test_parse_process_output():
    parsed = parse_output((DATA / "wis_context_switch1_process_1task.out").read_text())
    assert parsed.total_ops_per_s == parsed.per_task_ops_per_s == 775057


def test_output_without_result_is_an_error():
    text = (DATA / "wis_poll2_thread_2tasks.out").read_text()
    truncated = "\n".join(line for line in text.splitlines() if not line.startswith("result"))
    with pytest.raises(ValueError, match="no result line"):
        parse_output(truncated)
    with pytest.raises(ValueError, match="lacks 'measured_s'"):
        parse_output(text.replace("measured_s=", "measured="))


# -- measure: values or reasons, never made-up values ------------------------------
def test_measure_names_the_per_task_metric_by_mode():
    text = (DATA / "wis_context_switch1_process_1task.out").read_text()
    rows = builtin("wis").measure(OK, context(text, mode="process"))
    assert [(m.metric, m.value, m.unit) for m in rows] == [
        ("ops_per_s", 775057, "ops/s"), ("per_process_ops", 775057, "ops/s")]
    text = (DATA / "wis_poll2_thread_2tasks.out").read_text()
    assert [m.metric for m in builtin("wis").measure(OK, context(text))] == ["ops_per_s",
                                                                            "per_thread_ops"]


def test_failed_testcase_is_failed_with_the_programs_reason():
    stderr = (DATA / "wis_open1_no_tmpdir.err").read_text()
    failed = ProcessResult(0.1, 0.0, 0.0, None, 1, None, False)
    [row] = builtin("wis").measure(failed, context("", stderr, test="open1"))
    assert row.status is SampleStatus.FAILED and row.value is None
    assert row.note == "open1: task 0: cannot create a temporary file in /nonexistent: " \
                       "No such file or directory"


def test_usage_error_reason_is_the_complaint():
    stderr = (DATA / "wis_usage_unknown_testcase.err").read_text()
    failed = ProcessResult(0.1, 0.0, 0.0, None, 2, None, False)
    [row] = builtin("wis").measure(failed, context("", stderr))
    assert row.note == "unknown testcase (wis -l lists them)"


def test_zero_ops_is_failed_not_a_value():
    text = (DATA / "wis_poll2_thread_2tasks.out").read_text().replace(
        "result total_ops_per_s=388900", "result total_ops_per_s=0")
    [row] = builtin("wis").measure(OK, context(text))
    assert row.status is SampleStatus.FAILED and row.value is None
    assert "no operations" in row.note


def test_timeout_and_unreadable_output():
    timed_out = ProcessResult(9.0, 0.0, 0.0, None, None, 9, True)
    assert builtin("wis").measure(timed_out, context())[0].status is SampleStatus.TIMEOUT
    [row] = builtin("wis").measure(OK, context("garbage\n"))
    assert row.status is SampleStatus.FAILED and "unreadable" in row.note


# -- parameters ----------------------------------------------------------------------
def test_tasks_100_percent_means_every_usable_cpu():
    workload = builtin("wis")
    assert workload.complete({"tasks": "100%"})["tasks"] == len(os.sched_getaffinity(0))
    workload.validate({"tasks": ["100%", 1, 3]})
    for bad in (0, "50%", 1.5):
        with pytest.raises(UsageError, match="tasks"):
            workload.validate({"tasks": [bad]})


def test_metrics_are_rates_higher_is_better():
    metrics = builtin("wis").metrics
    assert metrics[0].name == "ops_per_s"
    assert {m.name for m in metrics} == {"ops_per_s", "per_thread_ops", "per_process_ops"}
    assert all(m.direction is Direction.HIGHER and m.unit == "ops/s" for m in metrics)


# -- real runs -----------------------------------------------------------------------
@pytest.mark.long   # 8-20 s: started early (tests/scheduling.py)
def test_every_testcase_runs_in_both_modes(tmp_path):
    # 0.2 s measured (0.05 s of warm-up, still printed and parsed): each task is set up before the
    # clock starts and pinned to a CPU, whose scheduler runs it within its period (tens of ms at a
    # load of 15), so every testcase counts ops whatever the load; a longer run checks nothing more
    rows = run(tmp_path, {"test": list(TESTCASES), "mode": ["thread", "process"],
                          "duration": [0.2], "warmup": [0.05]})
    assert set(rows.status) == {"ok"}, [n for n in rows.note if n]
    seen = set()
    for params, metric, value, unit in zip(rows.params, rows.metric, rows.value, rows.unit):
        assert value > 0 and unit == "ops/s"
        if metric == "ops_per_s":
            point = params
            seen.add((point["test"], point["mode"]))
    assert len(seen) == 2 * len(TESTCASES)


def test_two_tasks_yield_a_total_and_a_per_task_rate(tmp_path):
    rows = run(tmp_path, {"test": ["lseek1"], "tasks": [2], "duration": [0.5], "warmup": [0.1]})
    values = dict(zip(rows.metric, rows.value))
    assert values["ops_per_s"] > 0
    assert values["per_thread_ops"] == pytest.approx(values["ops_per_s"] / 2, rel=1e-5)


def test_a_testcase_that_cannot_set_up_is_a_failed_sample(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))
    rows = run(tmp_path, {"test": ["open1"], "mode": ["process"], "duration": [0.5],
                          "warmup": [0.1]})
    assert list(rows.status) == ["failed"] and np.isnan(rows.value[0])
    assert "cannot create a temporary file" in rows.note[0]
    assert "missing" in rows.note[0]
