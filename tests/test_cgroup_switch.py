"""The cgroup-switch workload: parser and validity rule on real output, real runs, and
cgroups that are always removed (normal exit, INVALID, SIGKILL, interrupted perflab)."""

from __future__ import annotations

import contextlib
import glob
import os
import signal
import subprocess
import sys
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
from perflab.workloads import native
from perflab.workloads.base import SampleContext
from perflab.workloads.cgroup_switch import PROGRAM, parse_output, switch_count_problem
from perflab.workloads.registry import builtin

from proc import wait_for

DATA = Path(__file__).resolve().parent / "data"
OK = ProcessResult(0.1, 0.0, 0.1, None, 0, None, False)
CLEANUP_WAIT_S = 10.0


@pytest.fixture(scope="module")
def hierarchy() -> str:
    """Where this machine's cgroup perf events live (skips where they cannot be used)."""
    reason = builtin("cgroup-switch").unavailable()
    if reason:
        pytest.skip(f"cgroup-switch unsupported here: {reason}")
    done = subprocess.run([native.binary(PROGRAM), "--check"], capture_output=True, text=True,
                          check=True)
    return done.stdout.split("hierarchy=")[1].split()[0]


def leftovers(root: str) -> list[str]:
    """The program's cgroups: at the root, or (run by perflab) below a sample's cgroup."""
    return (glob.glob(os.path.join(root, "perflab-cgroup-switch.*"))
            + glob.glob(os.path.join(root, "perflab", "**", "perflab-cgroup-switch.*"),
                        recursive=True))


@pytest.fixture
def no_leftovers(hierarchy):
    """After the test, every perflab cgroup is gone (the janitor may need a moment)."""
    yield hierarchy
    try:
        assert wait_for(lambda: not leftovers(hierarchy), CLEANUP_WAIT_S), leftovers(hierarchy)
    finally:   # a failure here must not leave its busy loops to load the tests after it
        for path in leftovers(hierarchy):
            with contextlib.suppress(OSError):
                Path(path, "cgroup.kill").write_text("1")


def run(tmp_path, sweep):
    store = Store(str(tmp_path / "db"), create=True)
    plan = plan_run(builtin("cgroup-switch"), sweep, RunOptions(repetitions=1))
    run_id = Runner(store, [plan], NullProgress(), warn=lambda _: None).start(RunRequest(identity=Identity(label="t")))
    return store.samples.rows(run_id).own()   # every sample also records pressure stalls (psi.*)


# -- parsing and the validity rule, on real output ------------------------------------
def test_parse_real_output():
    parsed = parse_output((DATA / "cgroup_switch_g2_e1.out").read_text())
    assert parsed.round_trips == 20000 and parsed.switches_expected == 40000
    assert parsed.switches_measured == 40000 and parsed.usec_per_switch == 1.7637
    assert parsed.elapsed_s == 0.070547 and parsed.expect_factor == 1
    assert switch_count_problem(parsed) is None


def test_wrong_expectation_is_a_problem_with_the_numbers():
    text = (DATA / "cgroup_switch_expect_factor2.out").read_text()
    problem = switch_count_problem(parse_output(text))
    assert problem == ("the kernel counted 10000 context switches where 20000 were expected "
                       "(2 per round trip x 5000 x 2 (PERFLAB_CGROUP_SWITCH_EXPECT_FACTOR)); "
                       "off by 50.0%, more than 1%")
    [row] = builtin("cgroup-switch").measure(OK, SampleContext({}, 0, text))
    assert row.status is SampleStatus.INVALID and row.value is None and row.note == problem


def test_within_one_percent_is_fine():
    text = (DATA / "cgroup_switch_g2_e1.out").read_text().replace(
        "switches_measured=40000", "switches_measured=40400")
    assert switch_count_problem(parse_output(text)) is None
    text = text.replace("switches_measured=40400", "switches_measured=40401")
    assert "off by 1.0%" in switch_count_problem(parse_output(text))


def test_missing_result_and_failures_are_reasons():
    workload = builtin("cgroup-switch")
    header = (DATA / "cgroup_switch_g2_e1.out").read_text().splitlines()[0]
    [row] = workload.measure(OK, SampleContext({}, 0, header))
    assert row.status is SampleStatus.FAILED and "no result line" in row.note
    failed = ProcessResult(0.1, 0.0, 0.0, None, 1, None, False)
    stderr = (DATA / "cgroup_switch_check_not_root.err").read_text()
    [row] = workload.measure(failed, SampleContext({}, 0, "", stderr))
    assert row.status is SampleStatus.FAILED
    assert row.note.startswith("cannot create cgroup /sys/fs/cgroup/unified/perflab-cgroup-switch.")
    assert row.note.endswith(": Permission denied (run as root)")


def test_unsupported_reason_comes_from_the_program():
    stderr = (DATA / "cgroup_switch_check_not_root.err").read_text()
    reason = native.complaint(PROGRAM, stderr)
    assert reason and "Permission denied (run as root)" in reason


def test_parameters():
    workload = builtin("cgroup-switch")
    assert workload.complete({})["cpu"] == "first"
    assert workload.complete({"cpu": "first", "cgroups": 3})["cgroups"] == 3
    workload.validate({"cpu": ["first", min(os.sched_getaffinity(0))], "events": [0, 10]})
    with pytest.raises(UsageError, match="not a CPU perflab may run on"):
        workload.validate({"cpu": [4096]})
    with pytest.raises(UsageError, match="monitor"):
        workload.validate({"monitor": ["some"]})
    [metric] = workload.metrics
    assert (metric.name, metric.unit, metric.direction) == ("usec_per_switch", "us", Direction.LOWER)


# -- real runs ------------------------------------------------------------------------
# exclusive: the product marks a sample whose context switches are off the round trips' count by
# more than 1% invalid, and another worker's tests preempting the two tasks add switches (one
# suite on three workers counted 10,102 of 10,000)
@pytest.mark.exclusive
def test_sweep_of_cgroups_and_events_is_plausible(tmp_path, no_leftovers):
    rows = run(tmp_path, {"cgroups": [1, 2], "events": [0, 1], "loops": [5000]})
    assert len(rows) == 4
    assert list(rows.status) == ["ok"] * 4, rows.note
    assert all(0 < v < 1000 for v in rows.value) and set(rows.unit) == {"us"}


def test_monitor_one_of_many_cgroups_and_a_chosen_cpu(tmp_path, no_leftovers):
    cpu = max(os.sched_getaffinity(0))
    rows = run(tmp_path, {"cgroups": [8], "events": [2], "monitor": ["one", "all"],
                          "event": ["context-switches"], "loops": [3000], "cpu": [cpu]})
    assert list(rows.status) == ["ok", "ok"], rows.note


def test_wrong_expectation_gives_invalid(tmp_path, no_leftovers, monkeypatch):
    monkeypatch.setenv("PERFLAB_CGROUP_SWITCH_EXPECT_FACTOR", "2")
    rows = run(tmp_path, {"loops": [3000]})
    assert list(rows.status) == ["invalid"] and np.isnan(rows.value[0])
    assert "where 12000 were expected" in rows.note[0] and "more than 1%" in rows.note[0]


def test_stale_cgroups_of_dead_owners_are_swept(no_leftovers):
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = Path(no_leftovers) / f"perflab-cgroup-switch.{dead.pid}"
    (stale / "g0").mkdir(parents=True)
    subprocess.run([native.binary(PROGRAM), "-l", "100"], check=True, capture_output=True)
    assert not stale.exists()


def test_sigkill_of_the_program_still_removes_its_cgroups(no_leftovers):
    program = subprocess.Popen([native.binary(PROGRAM), "-g", "4", "-e", "1", "-l", "100000000"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: leftovers(no_leftovers), 10)
    finally:
        program.send_signal(signal.SIGKILL)
        program.wait()


def test_sigterm_of_the_program_removes_its_cgroups_before_exit(no_leftovers):
    program = subprocess.Popen([native.binary(PROGRAM), "-l", "100000000"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert wait_for(lambda: leftovers(no_leftovers), 10)
    program.send_signal(signal.SIGTERM)
    _, stderr = program.communicate(timeout=10)
    assert program.returncode == 1 and "interrupted by SIGTERM" in stderr
    assert not leftovers(no_leftovers)   # synchronous: gone before it exited


PERFLAB_CHILD = """
import sys
from perflab.execute.runner import Runner
from perflab.execute.run_plan import plan_run
from perflab.model.run_request import RunOptions
from perflab.model.run_request import Identity, RunRequest
from perflab.render.progress import NullProgress
from perflab.store import Store
from perflab.workloads.registry import builtin
store = Store(sys.argv[1], create=True)
plan = plan_run(builtin("cgroup-switch"), {"loops": [int(sys.argv[2])]}, RunOptions(repetitions=1))
Runner(store, [plan], NullProgress(), warn=print).start(RunRequest(identity=Identity(label="t")))
"""


@pytest.mark.parametrize("how, loops", [(signal.SIGINT, 100_000_000), (signal.SIGKILL, 300_000)])
def test_interrupted_or_killed_perflab_leaves_no_cgroups(tmp_path, no_leftovers, how, loops):
    """Ctrl-C: perflab kills the sample's cgroup and removes it with the program's.
    SIGKILL of perflab: perflab's janitor does the same (the program's cgroups are below
    the sample's)."""
    perflab = subprocess.Popen([sys.executable, "-c", PERFLAB_CHILD, str(tmp_path / "db"),
                                str(loops)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: leftovers(no_leftovers), 30), "the sample never started"
    finally:
        perflab.send_signal(how)
        try:
            perflab.wait(timeout=30)
        except subprocess.TimeoutExpired:
            perflab.kill()
            perflab.wait()
            raise
