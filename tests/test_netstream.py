"""netstream (iperf3): its JSON parser on real reports, failure rows, real runs, server lifetime."""

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
from perflab.workloads.netstream import load_report, parse_summary, report_error
from perflab.workloads.registry import builtin

from proc import cmdline, processes, running, stat, wait_for

DATA = Path(__file__).resolve().parent / "data"
OK = ProcessResult(1.0, 0.1, 0.5, None, 0, None, False)
FAILED_1 = ProcessResult(0.01, 0.0, 0.0, None, 1, None, False)

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
plan = plan_run(builtin("netstream"), json.loads(sys.argv[2]), RunOptions(repetitions=1))
Runner(store, [plan], NullProgress(), warn=print).start(RunRequest(identity=Identity(label="killed")))
"""


def report(name: str) -> dict:
    return load_report((DATA / name).read_text())


def measure(result: ProcessResult, stdout: str = "", stderr: str = "", **params):
    w = builtin("netstream")
    return w.measure(result, SampleContext(w.complete(params), 0, stdout, stderr))


def text(name: str) -> str:
    return (DATA / name).read_text()


# -- processes, read from /proc ----------------------------------------------------------




def iperf3_servers(parent: int | None = None) -> list[int]:
    """Live iperf3 servers (of ``parent`` if given)."""
    return [pid for pid in processes()
            if (words := cmdline(pid)) and os.path.basename(words[0]) == "iperf3" and "-s" in words
            and running(pid) and (parent is None or (stat(pid) or ("", 0))[1] == parent)]


def iperf3_clients(ancestor: int) -> list[int]:
    """Live iperf3 clients below ``ancestor`` (a sample's client is a grandchild or deeper)."""
    def below(pid: int) -> bool:
        while pid > 1:
            pid = (stat(pid) or ("", 0))[1]
            if pid == ancestor:
                return True
        return False
    return [pid for pid in processes()
            if (words := cmdline(pid)) and os.path.basename(words[0]) == "iperf3" and "-c" in words
            and running(pid) and below(pid)]




# -- parsing real reports --------------------------------------------------------------
def test_tcp_summary():
    parsed = parse_summary(report("iperf3_tcp_l1024_t1.json"))
    assert parsed.send_mbps == pytest.approx(3526.6, abs=0.1)
    assert parsed.recv_mbps == pytest.approx(3499.6, abs=0.1)
    assert parsed.lost_percent is None


def test_udp_summary_has_the_loss():
    parsed = parse_summary(report("iperf3_udp_l1024_t1.json"))
    assert parsed.send_mbps == pytest.approx(2145.6, abs=0.1)
    assert parsed.recv_mbps == pytest.approx(1909.2, abs=0.1)
    assert parsed.lost_percent == pytest.approx(11.013, abs=0.001)


def test_udp_report_with_only_the_receivers_sum():
    # older iperf3 UDP reports have no sum_sent/sum_received: "sum" is all there is
    old = report("iperf3_udp_l64_t1.json")
    del old["end"]["sum_sent"], old["end"]["sum_received"]
    parsed = parse_summary(old)
    assert parsed.send_mbps == parsed.recv_mbps == pytest.approx(155.5, abs=0.1)
    assert parsed.lost_percent == pytest.approx(0.26, abs=0.01)


def test_error_report_and_broken_json():
    refused = report("iperf3_connection_refused.json")
    assert report_error(refused) == "unable to connect to server: Connection refused"
    with pytest.raises(ValueError, match="end"):
        parse_summary({"start": {}})
    with pytest.raises(ValueError, match="no sum_sent and sum_received"):
        parse_summary(refused)
    with pytest.raises(ValueError, match="bits_per_second"):
        parse_summary({"end": {"sum_sent": {"bytes": 1}, "sum_received": {"bits_per_second": "x"}}})
    with pytest.raises(ValueError, match="not JSON"):
        load_report(text("iperf3_udp_l70000_block_too_big.out"))
    with pytest.raises(ValueError, match="not a JSON object"):
        load_report("[1, 2]")


# -- measure ------------------------------------------------------------------------------
def test_measure_udp_values_units_and_loss():
    rows = measure(OK, text("iperf3_udp_l16384_t1.json"), protocol="udp", size=16384)
    values = {m.metric: (round(m.value, 1), m.unit) for m in rows}
    assert values == {"send_mbps": (22899.8, "Mbit/s"), "recv_mbps": (22023.6, "Mbit/s"),
                      "lost_percent": (3.8, "%")}


def test_measure_tcp_has_no_loss_metric():
    rows = measure(OK, text("iperf3_tcp_l1024_t1.json"))
    assert [m.metric for m in rows] == ["recv_mbps", "send_mbps"]   # received first: primary


def test_error_key_fails_the_sample_even_with_exit_0():
    [row] = measure(OK, text("iperf3_connection_refused.json"))
    assert row.status is SampleStatus.FAILED and row.value is None
    assert row.note == "iperf3: unable to connect to server: Connection refused"


def test_parameter_errors_quote_iperf3():
    [row] = measure(FAILED_1, text("iperf3_udp_l70000_block_too_big.out"),
                    text("iperf3_udp_l70000_block_too_big.err"), protocol="udp")
    assert row.note == ("exit status 1: iperf3: parameter error - block size invalid "
                        "(minimum = 16 bytes, maximum = 65507 bytes)")
    [row] = measure(FAILED_1, "", text("iperf3_bad_option.err"))
    assert row.note == "exit status 1: iperf3: unrecognized option '--bogus'"


def test_timeout_and_garbage():
    [row] = measure(ProcessResult(31, 0, 0, None, None, 9, True), "")
    assert row.status is SampleStatus.TIMEOUT and row.value is None
    [row] = measure(OK, "{truncated")
    assert row.status is SampleStatus.FAILED and row.note.startswith("unreadable iperf3 report: not JSON")


def test_parameters():
    w = builtin("netstream")
    assert [(m.name, m.unit, m.direction) for m in w.metrics] == [
        ("recv_mbps", "Mbit/s", Direction.HIGHER), ("send_mbps", "Mbit/s", Direction.HIGHER),
        ("lost_percent", "%", Direction.LOWER)]
    w.validate({"protocol": ["tcp", "udp"], "size": [64, 128, 256, 1024, 2048, 3312, 4096,
                                                      8192, 16384], "duration": [1]})
    with pytest.raises(UsageError, match="16..65507 bytes for udp"):
        w.validate({"protocol": ["udp"], "size": [8]})
    with pytest.raises(UsageError, match="duration"):
        w.validate({"duration": [0.5]})   # iperf3 would read 0: run forever


def test_udp_is_sent_at_a_rate_and_tcp_points_have_none():
    w = builtin("netstream")
    udp = w.complete({"protocol": "udp"})
    assert udp["rate"] == "1G"
    tcp = w.complete({"protocol": "tcp"})
    assert "rate" not in tcp   # TCP points keep the keys they always had
    w._server = type("S", (), {"port": 5201, "check_alive": lambda self: None})()
    argv = w.invocation(w.complete({"protocol": "udp", "rate": "100M"})).argv
    assert argv[argv.index("-b") + 1] == "100M" and "-u" in argv
    assert "-b" not in w.invocation(tcp).argv
    w.validate({"protocol": ["udp"], "rate": ["0", "100M", "1.5G", 1000]})
    with pytest.raises(UsageError, match="rate='fast'"):
        w.validate({"protocol": ["udp"], "rate": ["fast"]})
    with pytest.raises(UsageError, match="rate applies to protocol=udp"):
        w.validate({"rate": ["1G"]})


def test_a_loss_above_one_percent_is_warned():
    w = builtin("netstream")
    point = w.complete({"protocol": "udp", "size": 1024})
    lossy = measure(OK, text("iperf3_udp_l1024_t1.json"), protocol="udp", size=1024)
    [warning] = w.warnings(point, lossy)
    assert warning.startswith("11.0% of the UDP datagrams were lost (more than 1%)")
    assert "recv_mbps is the rate that arrived" in warning
    fine = measure(OK, text("iperf3_udp_l64_t1.json"), protocol="udp", size=64)
    assert w.warnings(point, fine) == []   # 0.26%


def test_real_unthrottled_udp_warns_once_per_point_when_it_loses(tmp_path):
    store = Store(str(tmp_path / "db"), create=True)
    plan = plan_run(builtin("netstream"), {"protocol": ["udp"], "duration": [1], "rate": ["0"]},
                    RunOptions(repetitions=2))
    warnings: list[str] = []
    run_id = Runner(store, [plan], NullProgress(), warn=warnings.append).start(RunRequest(identity=Identity(label="u")))
    rows = store.samples.rows(run_id)
    losses = [v for m, v in zip(rows.metric, rows.value) if m == "lost_percent"]
    lossy = [w for w in warnings if "UDP datagrams were lost" in w]
    assert len(lossy) == (1 if any(v > 1 for v in losses) else 0), (losses, warnings)


def test_missing_iperf3(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert builtin("netstream").unavailable() == "iperf3 not found (apt-get install iperf3)"
    with pytest.raises(EnvironmentProblem, match="iperf3 not found"):
        plan_run(builtin("netstream"), {}, RunOptions(repetitions=1))


# -- real runs ----------------------------------------------------------------------------
def test_real_tcp_and_udp_runs_and_the_server_is_gone_after(tmp_path):
    store = Store(str(tmp_path / "db"), create=True)
    # udp first: an unthrottled sender must leave the server able to serve the next test
    plan = plan_run(builtin("netstream"), {"protocol": ["udp", "tcp"], "size": [1024],
                                           "duration": [1]}, RunOptions(repetitions=1))
    run_id = Runner(store, [plan], NullProgress(), warn=print).start(RunRequest(identity=Identity(label="t")))
    rows = store.samples.rows(run_id)
    assert set(rows.status) == {"ok"}, rows.note
    by = {(p["protocol"], m): (v, u)
          for p, m, v, u in zip(rows.params, rows.metric, rows.value, rows.unit)}
    for protocol in ("tcp", "udp"):
        for metric in ("send_mbps", "recv_mbps"):
            value, unit = by[(protocol, metric)]
            assert unit == "Mbit/s" and 10 < value < 1_000_000
    assert 0 <= by[("udp", "lost_percent")][0] <= 100
    assert ("tcp", "lost_percent") not in by
    assert iperf3_servers(os.getpid()) == []


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_server_dies_with_perflab(tmp_path, how):
    script = subprocess.Popen([sys.executable, "-c", RUNNER_SCRIPT, str(tmp_path / "db"),
                               json.dumps({"protocol": ["tcp"], "duration": [3]})],
                              stdout=subprocess.DEVNULL)
    server = None
    try:
        servers = wait_for(lambda: iperf3_servers(script.pid), 15)
        assert servers, "the runner started no iperf3 server"
        server = servers[0]
        assert wait_for(lambda: iperf3_clients(script.pid), 15), "the sample's iperf3 client never started"
        script.send_signal(how)
        script.wait(timeout=10)
        assert wait_for(lambda: not running(server), 5), f"iperf3 server {server} survived {how.name}"
    finally:
        script.kill()
        script.wait()
        if server is not None and running(server):
            os.kill(server, signal.SIGKILL)
