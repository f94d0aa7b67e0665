"""perf bench workloads and hackbench: parsers on real output, failure rows, real runs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from perflab.execute.process import CapturedOutput, open_devnull_streams, spawn_and_wait
from perflab.execute.run_plan import plan_run
from perflab.execute.runner import Runner
from perflab.model.errors import EnvironmentProblem, UsageError
from perflab.model.records import Direction, ProcessResult, SampleStatus
from perflab.model.run_request import Identity, RunOptions, RunRequest
from perflab.render.progress import NullProgress
from perflab.store import Store
from perflab.workloads.base import SampleContext
from perflab.workloads.perf_bench import NO_BREAKPOINTS, breakpoints_unsupported, parse_perf_bench, parse_rt_hackbench
from perflab.workloads.registry import builtin

DATA = Path(__file__).resolve().parent / "data"
OK = ProcessResult(0.2, 0.1, 0.1, None, 0, None, False)


def exited(code: int) -> ProcessResult:
    return ProcessResult(0.01, 0.0, 0.0, None, code, None, False)


def output(name: str) -> tuple[str, str]:
    """The captured stdout and stderr (empty if the program wrote none) of a fixture."""
    err = DATA / f"{name}.err"
    return (DATA / f"{name}.out").read_text(), err.read_text() if err.exists() else ""


def measure(workload: str, result: ProcessResult, name: str, **params):
    stdout, stderr = output(name)
    w = builtin(workload)
    return w.measure(result, SampleContext(w.complete(params), 0, stdout, stderr))


def run(tmp_path, workload: str, sweep, repetitions: int = 2):
    store = Store(str(tmp_path / "db"), create=True)
    plan = plan_run(builtin(workload), sweep, RunOptions(repetitions=repetitions))
    run_id = Runner(store, [plan], NullProgress(), warn=lambda _: None).start(RunRequest(identity=Identity(label="t")))
    return store.samples.rows(run_id).own()   # without the pressure stalls every sample records


# -- parsers on real output ------------------------------------------------------------
def test_parse_breakpoint_thread():
    stdout, _ = output("perf_bench_breakpoint_thread_b4_p2_t64_r30")
    assert parse_perf_bench(stdout) == {"time": 0.131, "usec_per_op": 68.244271,
                                        "usec_per_op_per_cpu": 136.488542}


def test_parse_breakpoint_enable_and_sched_pipe():
    stdout, _ = output("perf_bench_breakpoint_enable_p1_a1_r10000")
    assert parse_perf_bench(stdout) == {"time": 0.090, "usec_per_op": 9.0462}
    stdout, _ = output("perf_bench_sched_pipe_process_l100000")
    assert parse_perf_bench(stdout) == {"time": 0.451, "usec_per_op": 4.51972,
                                        "ops_per_s": 221252}


def test_parse_messaging_and_rt_hackbench():
    stdout, _ = output("perf_bench_sched_messaging_pipe_process_g10_l100")
    assert parse_perf_bench(stdout) == {"time": 0.505}
    stdout, _ = output("rt_hackbench_socket_thread_g2_l100")
    assert parse_rt_hackbench(stdout) == 0.162


def test_parsers_reject_output_without_a_result():
    stdout, _ = output("perf_bench_breakpoint_thread_bad_option")
    with pytest.raises(ValueError, match="no result line"):
        parse_perf_bench(stdout)
    stdout, _ = output("rt_hackbench_bad_option")
    with pytest.raises(ValueError, match="Time"):
        parse_rt_hackbench(stdout)


def test_both_forms_of_no_hardware_breakpoints_are_recognised():
    # perf 6.1 (this machine, perf_event_open made to fail with ENODEV by seccomp): exit 1
    assert breakpoints_unsupported(*output("perf_bench_breakpoint_thread_enodev_seccomp"))
    assert breakpoints_unsupported(*output("perf_bench_breakpoint_enable_enodev_seccomp"))
    # newer perf prints a skip message and exits 0 (text copied from perf's source)
    assert breakpoints_unsupported(*output("perf_bench_breakpoint_thread_skip_copied_from_perf_source"))
    assert not breakpoints_unsupported(*output("perf_bench_breakpoint_thread_b5_enospc"))
    assert not breakpoints_unsupported(*output("perf_bench_breakpoint_thread_b4_p2_t64_r30"))


# -- measure: values, or a reason and no value --------------------------------------------
def test_breakpoint_thread_values_and_time_to_the_microsecond():
    rows = measure("breakpoint-thread", OK, "perf_bench_breakpoint_thread_b4_p2_t64_r30",
                   breakpoints=4, parallelism=2, threads=64, repeat=30)
    values = {m.metric: (m.value, m.unit) for m in rows}
    assert values["usec_per_op"] == (68.244271, "us")
    assert values["usec_per_op_per_cpu"] == (136.488542, "us")
    # perf printed "Total time: 0.131"; usecs/op x 30 batches x 64 threads is the same interval
    assert values["time"][0] == pytest.approx(0.131029, abs=1e-6)
    assert all(m.status is SampleStatus.OK for m in rows)


def test_skip_message_with_exit_0_is_invalid_not_a_pass():
    [row] = measure("breakpoint-thread", OK, "perf_bench_breakpoint_thread_skip_copied_from_perf_source")
    assert row.status is SampleStatus.INVALID and row.value is None
    assert row.note == NO_BREAKPOINTS == "unsupported on this machine: no hardware breakpoint support"


def test_enodev_exit_1_is_failed_as_unsupported():
    [row] = measure("breakpoint-enable", exited(1), "perf_bench_breakpoint_enable_enodev_seccomp")
    assert row.status is SampleStatus.FAILED and row.value is None and row.note == NO_BREAKPOINTS


def test_too_many_breakpoints_says_why():
    [row] = measure("breakpoint-thread", exited(1), "perf_bench_breakpoint_thread_b5_enospc",
                    breakpoints=5)
    assert row.status is SampleStatus.FAILED
    assert row.note == ("exit status 1: perf_event_open: No space left on device "
                        "(more breakpoints than the CPU has debug registers)")


def test_usage_errors_quote_the_program():
    [row] = measure("breakpoint-thread", exited(129), "perf_bench_breakpoint_thread_bad_option")
    assert row.note == "exit status 129: Error: unknown option `bogus'"
    [row] = measure("hackbench", exited(1), "rt_hackbench_bad_option", impl="rt-tests")
    assert row.note == "exit status 1: hackbench: unrecognized option '--bogus'"
    [row] = measure("hackbench", exited(1), "rt_hackbench_groups0", impl="rt-tests")
    assert row.note == "exit status 1: hackbench: --groups|-g requires an integer > 0"


def test_sched_pipe_and_hackbench_values():
    rows = measure("sched-pipe", OK, "perf_bench_sched_pipe_thread_l100000", mode="thread")
    assert [(m.metric, m.value, m.unit) for m in rows] == [
        ("usec_per_op", 4.43615, "us"), ("ops_per_s", 225420, "ops/s")]
    [row] = measure("hackbench", OK, "perf_bench_sched_messaging_pipe_process_g10_l100")
    assert (row.metric, row.value, row.unit) == ("time", 0.505, "s")
    [row] = measure("hackbench", OK, "rt_hackbench_pipe_process_g10_l100", impl="rt-tests")
    assert (row.metric, row.value, row.unit) == ("time", 0.162, "s")


def test_a_zero_time_is_below_resolution_not_a_value():
    zero = "Running in process mode with 1 groups using 40 file descriptors each (== 40 tasks)\n" \
           "Each sender will pass 1 messages of 100 bytes\nTime: 0.000\n"
    w = builtin("hackbench")
    [row] = w.measure(OK, SampleContext(w.complete({"impl": "rt-tests"}), 0, zero))
    assert row.status is SampleStatus.INVALID and row.value is None and "resolution" in row.note


def test_timeout_and_unreadable_output_have_no_value():
    timed_out = ProcessResult(600.0, 0.0, 0.0, None, None, 9, True)
    w = builtin("sched-pipe")
    [row] = w.measure(timed_out, SampleContext(w.complete({}), 0))
    assert row.status is SampleStatus.TIMEOUT and row.value is None
    [row] = w.measure(OK, SampleContext(w.complete({}), 0, "# Running 'sched/pipe' benchmark:\n"))
    assert row.status is SampleStatus.FAILED and "unreadable sched-pipe output" in row.note


# -- parameters and argv --------------------------------------------------------------------
def test_hackbench_argv_uses_each_programs_own_flags():
    w = builtin("hackbench")
    argv = lambda **p: w.invocation(w.complete(p)).argv   # noqa: E731
    assert argv(groups=3, loops=10) == ["perf", "bench", "sched", "messaging", "-p",
                                        "-g", "3", "-l", "10"]
    assert argv(mode="thread", ipc="socket") == ["perf", "bench", "sched", "messaging", "-t",
                                                 "-g", "10", "-l", "100"]
    # rt-tests: -P is --process (fork), not pipes; -p is --pipe; -T is --threads
    assert argv(impl="rt-tests", groups=3, loops=10) == ["hackbench", "-p", "-P",
                                                         "-g", "3", "-l", "10"]
    assert argv(impl="rt-tests", mode="thread", ipc="socket") == ["hackbench", "-T",
                                                                  "-g", "10", "-l", "100"]


def test_breakpoint_argv_puts_repeat_before_the_collection():
    w = builtin("breakpoint-thread")
    assert w.invocation(w.complete({"breakpoints": 0})).argv == [
        "perf", "bench", "-r", "30", "breakpoint", "thread", "-b", "0", "-p", "2", "-t", "64"]
    with pytest.raises(UsageError, match="threads"):
        w.validate({"threads": [0]})


def test_directions_and_units():
    assert [(m.name, m.unit, m.direction) for m in builtin("sched-pipe").metrics] == [
        ("usec_per_op", "us", Direction.LOWER), ("ops_per_s", "ops/s", Direction.HIGHER)]
    assert builtin("breakpoint-thread").metrics[0].name == "usec_per_op"
    assert builtin("hackbench").metrics[0].name == "time"


# -- availability, with real PATHs -------------------------------------------------------
def test_missing_programs_name_their_package(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert builtin("sched-pipe").unavailable() == "perf not found (apt-get install linux-perf)"
    assert builtin("breakpoint-thread").unavailable() == "perf not found (apt-get install linux-perf)"
    assert builtin("hackbench").unavailable() == ("perf not found (apt-get install linux-perf); "
                                                  "hackbench not found (apt-get install rt-tests)")
    with pytest.raises(EnvironmentProblem, match="perf not found"):
        plan_run(builtin("sched-pipe"), {}, RunOptions(repetitions=1))


def test_hackbench_needs_only_the_chosen_program(tmp_path, monkeypatch):
    (tmp_path / "hackbench").symlink_to(shutil.which("hackbench"))
    monkeypatch.setenv("PATH", str(tmp_path))
    w = builtin("hackbench")
    assert w.unavailable() is None
    w.validate({"impl": ["rt-tests"]})
    with pytest.raises(EnvironmentProblem, match="impl=perf: perf not found"):
        w.validate({})


@pytest.fixture
def perf_without_breakpoints(tmp_path):
    """A PATH whose ``perf`` is the real perf with perf_event_open failing with ENODEV."""
    wrapper = tmp_path / "noperf"
    subprocess.run(["cc", "-O2", "-o", str(wrapper), str(DATA / "seccomp_enodev_perf_event_open.c")],
                   check=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "perf").write_text(f'#!/bin/sh\nexec {wrapper} {shutil.which("perf")} "$@"\n')
    (bin_dir / "perf").chmod(0o755)
    return str(bin_dir)


def test_no_hardware_breakpoints_is_detected_before_the_run(perf_without_breakpoints, monkeypatch):
    monkeypatch.setenv("PATH", perf_without_breakpoints)
    w = builtin("breakpoint-thread")
    assert w.unavailable() == "no hardware breakpoint support"
    with pytest.raises(EnvironmentProblem, match="unsupported on this machine: breakpoint-thread: "
                                                 "no hardware breakpoint support"):
        plan_run(w, {}, RunOptions(repetitions=1))
    # and a sample taken anyway is a reason, not a value
    invocation = w.invocation(w.complete({}))
    devnull = open_devnull_streams()
    capture = CapturedOutput(devnull.stdin)
    result = spawn_and_wait(invocation.executable, invocation.argv, streams=capture.streams())
    stdout, stderr = capture.read()
    capture.close()
    os.close(devnull.stdin)
    os.close(devnull.stdout)
    [row] = w.measure(result, SampleContext(w.complete({}), 0, stdout, stderr))
    assert row.value is None and row.note == NO_BREAKPOINTS


# -- real runs through the runner --------------------------------------------------------
def values_of(rows, metric):
    assert set(rows.status) == {"ok"}, [n for n in rows.note if n]
    return [v for m, v in zip(rows.metric, rows.value) if m == metric]


def test_breakpoint_thread_runs(tmp_path):
    assert builtin("breakpoint-thread").unavailable() is None   # this machine has them
    rows = run(tmp_path, "breakpoint-thread", {"breakpoints": [0, 4], "parallelism": [1],
                                               "threads": [8], "repeat": [5]})
    per_op = values_of(rows, "usec_per_op")
    assert len(per_op) == 4 and all(0 < v < 10_000 for v in per_op)
    assert all(0 < v < 1 for v in values_of(rows, "time"))
    assert {p["breakpoints"] for p in rows.params} == {0, 4}


def test_breakpoint_enable_runs(tmp_path):
    rows = run(tmp_path, "breakpoint-enable", {"repeat": [1000], "passive": [1]})
    assert all(0 < v < 1000 for v in values_of(rows, "usec_per_op"))


def test_sched_pipe_runs(tmp_path):
    rows = run(tmp_path, "sched-pipe", {"loops": [1000], "mode": ["process", "thread"]})
    per_op, rate = values_of(rows, "usec_per_op"), values_of(rows, "ops_per_s")
    assert len(per_op) == 4 and all(0 < v < 1000 for v in per_op)
    for usec, ops in zip(per_op, rate):
        assert ops == pytest.approx(1e6 / usec, rel=0.01)   # the same round trip, inverted


def test_hackbench_runs_with_both_programs(tmp_path):
    rows = run(tmp_path, "hackbench", {"groups": [1], "loops": [10], "impl": ["perf", "rt-tests"],
                                       "mode": ["process", "thread"]}, repetitions=1)
    times = values_of(rows, "time")
    assert len(times) == 4 and all(0 < t < 10 for t in times)
    assert set(rows.unit) == {"s"}
