"""tbench: its parser on real output, failure rows, real runs, and a server that never outlives perflab."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from perflab.execute.run_plan import plan_run
from perflab.execute.runner import Runner
from perflab.model.errors import EnvironmentProblem, UsageError
from perflab.model.records import Direction, ProcessResult, SampleStatus
from perflab.model.run_request import Identity, RunOptions, RunRequest
from perflab.render.progress import NullProgress
from perflab.store import Store
from perflab.workloads.base import SampleContext
from perflab.workloads.registry import builtin
from perflab.workloads.servers import listening
from perflab.workloads.tbench import PORT, parse_tbench, start_failure

from proc import cmdline, group_running, processes, running, stat, wait_for

DATA = Path(__file__).resolve().parent / "data"
OK = ProcessResult(3.1, 0.5, 1.0, None, 0, None, False)

# The runner in a child process, so that the test can kill it as a user's kill -9 would.
RUNNER_SCRIPT = """
import json, sys
from perflab.execute.runner import Runner
from perflab.execute.run_plan import plan_run
from perflab.model.run_request import RunOptions
from perflab.model.run_request import Identity, RunRequest
from perflab.render.progress import NullProgress
from perflab.store import Store
from perflab.workloads.registry import builtin
store = Store(sys.argv[1], create=True)
plan = plan_run(builtin(sys.argv[2]), json.loads(sys.argv[3]), RunOptions(repetitions=1))
Runner(store, [plan], NullProgress(), warn=print).start(RunRequest(identity=Identity(label="killed")))
"""


def output(name: str) -> tuple[str, str]:
    err = DATA / f"{name}.err"
    return (DATA / f"{name}.out").read_text(), err.read_text() if err.exists() else ""


def measure(result: ProcessResult, name: str):
    stdout, stderr = output(name)
    w = builtin("tbench")
    return w.measure(result, SampleContext(w.complete({"clients": 1, "duration": 3}), 0,
                                           stdout, stderr))


def children(parent: int, program: str) -> list[int]:
    return [pid for pid in processes()
            if (s := stat(pid)) and s[1] == parent and os.path.basename((cmdline(pid) or [""])[0]) == program]


def all_servers() -> set[int]:
    return {pid for pid in processes() if running(pid) and cmdline(pid)[:1] and
            os.path.basename(cmdline(pid)[0]) == "tbench_srv"}


# -- parsing real output -------------------------------------------------------------------
def test_parse_final_throughput_line():
    parsed = parse_tbench(output("tbench_1client_t3")[0])
    assert (parsed.throughput, parsed.max_latency_ms) == (332.527, 4.901)
    parsed = parse_tbench(output("tbench_2clients_t5")[0])
    assert (parsed.throughput, parsed.max_latency_ms) == (361.853, 8.009)


def test_no_server_is_a_start_failure_although_tbench_exits_0():
    stdout, stderr = output("tbench_no_server")
    assert parse_tbench(stdout).throughput == 0   # what tbench claims
    assert start_failure(stdout, stderr) == ("tbench: FAILED TO START 1 CLIENTS (started -1): "
                                              "failed to connect to 127.0.0.1 - Connection refused")
    assert start_failure(*output("tbench_1client_t3")) is None


def test_output_without_throughput_is_an_error():
    with pytest.raises(ValueError, match="Throughput"):
        parse_tbench(output("tbench_no_nprocs")[0])


# -- measure --------------------------------------------------------------------------------
def test_measure_values_and_units():
    rows = measure(OK, "tbench_1client_t3")
    assert [(m.metric, m.value, m.unit, m.status) for m in rows] == [
        ("throughput", 332.527, "MB/s", SampleStatus.OK), ("max_latency", 4.901, "ms", SampleStatus.OK)]


def test_failed_start_is_failed_not_zero():
    [row] = measure(OK, "tbench_no_server")
    assert row.status is SampleStatus.FAILED and row.value is None
    assert "FAILED TO START" in row.note and "Connection refused" in row.note


def test_zero_clients_throughput_0_is_invalid():
    [row] = measure(OK, "tbench_0clients")
    assert row.status is SampleStatus.INVALID and row.value is None


def test_bad_option_and_timeout():
    [row] = measure(ProcessResult(0.01, 0, 0, None, 1, None, False), "tbench_bad_option")
    assert row.status is SampleStatus.FAILED
    assert row.note == "exit status 1: Invalid option --bogus: unknown option"
    [row] = measure(ProcessResult(99, 0, 0, None, None, 9, True), "tbench_1client_t3")
    assert row.status is SampleStatus.TIMEOUT and row.value is None


def test_parameters():
    w = builtin("tbench")
    assert w.metrics[0].name == "throughput" and w.metrics[0].direction is Direction.HIGHER
    w.validate({"clients": [1, 2, 4], "duration": [2, 3.0]})
    for bad in ({"clients": [0]}, {"duration": [0.5]}, {"duration": [0]}):
        with pytest.raises(UsageError):
            w.validate(bad)


def test_missing_programs_name_their_package(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert builtin("tbench").unavailable() == (
        "tbench not found (apt-get install dbench); tbench_srv not found (apt-get install dbench); "
        "nsenter not found (apt-get install util-linux)")
    with pytest.raises(EnvironmentProblem, match="tbench not found"):
        plan_run(builtin("tbench"), {}, RunOptions(repetitions=1))


# -- the server --------------------------------------------------------------------------
def test_server_listens_in_its_own_network_only():
    w = builtin("tbench")
    with w.session():
        server = w._server
        assert server is not None and listening(server.pid, PORT)
        # not on this machine's network: nothing here listens on 7003 (ss reads our namespace)
        ours = subprocess.run(["ss", "-Hltn", f"sport = :{PORT}"], capture_output=True, text=True)
        assert ours.stdout.strip() == ""
        pid = server.pid
    assert not running(pid) and w._server is None


# -- real runs ---------------------------------------------------------------------------
def test_real_run_and_the_server_is_gone_after(tmp_path):
    before = all_servers()
    store = Store(str(tmp_path / "db"), create=True)
    plan = plan_run(builtin("tbench"), {"clients": [1, 2], "duration": [2]}, RunOptions(repetitions=1))
    run_id = Runner(store, [plan], NullProgress(), warn=print).start(RunRequest(identity=Identity(label="t")))
    rows = store.samples.rows(run_id)
    assert set(rows.status) == {"ok"}, rows.note
    throughput = [(p["clients"], v) for p, m, v in zip(rows.params, rows.metric, rows.value)
                  if m == "throughput"]
    assert sorted(c for c, _ in throughput) == [1, 2]
    assert all(1 < v < 100_000 for _, v in throughput)   # MB/s; ~400 here on loopback
    assert all_servers() <= before


def _start_killable_run(tmp_path, duration: int) -> tuple[subprocess.Popen, int]:
    """A runner in a child process, once its tbench sample is running: (process, server pid)."""
    script = subprocess.Popen([sys.executable, "-c", RUNNER_SCRIPT, str(tmp_path / "db"), "tbench",
                               json.dumps({"clients": [1], "duration": [duration]})],
                              stdout=subprocess.DEVNULL)
    servers = wait_for(lambda: children(script.pid, "tbench_srv"), 15)
    assert servers, "the runner started no tbench_srv"
    # nsenter execs tbench: the sample is running once a tbench child appears
    assert wait_for(lambda: children(script.pid, "tbench"), 15), "no tbench sample started"
    return script, servers[0]


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_server_dies_with_perflab(tmp_path, how):
    script, server = _start_killable_run(tmp_path, duration=4)
    try:
        script.send_signal(how)
        script.wait(timeout=10)
        # SIGKILL: no finally ran, the kernel's PR_SET_PDEATHSIG did it
        assert wait_for(lambda: not running(server), 5), f"tbench_srv {server} survived {how.name}"
        # its per-connection children end with their client (a bounded sample) at the latest
        assert wait_for(lambda: not group_running(server), 15)
    finally:
        script.kill()
        script.wait()
        if group_running(server):
            os.killpg(server, signal.SIGKILL)
