"""``netstream``: TCP and UDP stream throughput over loopback with iperf3.

Mirrors the netperf rows of seed 004 (TCP_STREAM / UDP_STREAM, message sizes 64 ..
16384). The session starts ``iperf3 -s`` on 127.0.0.1 at a free port (persistent: it
serves one test after another); each sample is one client run with ``-J``.

As netperf's UDP_STREAM, UDP is sent unthrottled (``-b 0``): on loopback the sender
outruns the receiver and the difference is ``lost_percent``. It is bounded by
``duration`` like TCP.

iperf3 3.12 quirks the parser guards against: a client that cannot connect prints a
JSON report with an ``error`` key and still exits 0; ``-t`` takes whole seconds and
reads a fraction such as 0.5 as 0, which means "run forever" (hence integer
``duration``); the TCP summary's ``sum_received`` claims ``"sender": true``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from perflab.model.errors import UsageError
from perflab.model.records import (
    Direction, Measurement, MetricInfo, ProcessResult, SampleStatus,
)
from perflab.workloads import servers
from perflab.workloads.base import Invocation, Parameter, SampleContext, Workload
from perflab.workloads.registry import register

MISSING = "iperf3 not found (apt-get install iperf3)"
UNIT = "Mbit/s"
CONNECT_TIMEOUT_MS = 5000
SIZE_LIMITS = {"tcp": (1, 1048576), "udp": (16, 65507)}   # iperf3's own -l bounds


@dataclass(frozen=True)
class StreamResult:
    send_mbps: float
    recv_mbps: float
    lost_percent: float | None   # UDP only


def load_report(text: str) -> dict[str, Any]:
    """iperf3's ``-J`` report; ValueError if the text is not a JSON object."""
    try:
        report = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON ({error})") from None
    if not isinstance(report, dict):
        raise ValueError("not a JSON object")
    return report


def report_error(report: dict[str, Any]) -> str | None:
    """The error iperf3 reported (its exit status may still be 0), or None."""
    error = report.get("error")
    return str(error) if error else None


def parse_summary(report: dict[str, Any]) -> StreamResult:
    """The end summary: sender and receiver rates in Mbit/s; ValueError if absent."""
    end = report.get("end")
    if not isinstance(end, dict):
        raise ValueError("no 'end' summary")
    # older iperf3 UDP reports have only "sum", the receiver's view
    sent, received = end.get("sum_sent", end.get("sum")), end.get("sum_received", end.get("sum"))
    if not (isinstance(sent, dict) and isinstance(received, dict)):
        raise ValueError("no sum_sent and sum_received in the end summary")
    try:
        lost = received.get("lost_percent")
        return StreamResult(float(sent["bits_per_second"]) / 1e6,
                            float(received["bits_per_second"]) / 1e6,
                            None if lost is None else float(lost))
    except (KeyError, TypeError, ValueError):
        raise ValueError("no numeric bits_per_second in the end summary") from None


@register
class NetStream(servers.ServedWorkload, Workload):
    name = "netstream"
    report_title = "netstream-{protocol}"
    report_row = "size"
    description = "TCP/UDP stream throughput over loopback with iperf3, like netperf's (seed 004)"
    programs = ("iperf3",)
    parameters = (
        Parameter("protocol", "tcp, or udp sent unthrottled", "tcp", choices=("tcp", "udp")),
        Parameter("size", "bytes per send (iperf3 -l; udp: 16..65507)", 1024, kind=int,
                  minimum=1),
        Parameter("duration", "seconds (whole; iperf3 -t)", 10, kind=int, minimum=1),
    )

    @property
    def metrics(self) -> list[MetricInfo]:
        return [
            MetricInfo("send_mbps", UNIT, Direction.HIGHER, description="rate the client sent"),
            MetricInfo("recv_mbps", UNIT, Direction.HIGHER, description="rate the server received"),
            MetricInfo("lost_percent", "%", Direction.LOWER,
                       description="UDP datagrams sent but not received"),
        ]

    def unavailable(self) -> str | None:
        return None if shutil.which("iperf3") else MISSING

    def validate(self, sweep: dict[str, list[Any]]) -> None:
        super().validate(sweep)
        defaults = self.complete({})
        for protocol, size in itertools.product(sweep.get("protocol", [defaults["protocol"]]),
                                                sweep.get("size", [defaults["size"]])):
            low, high = SIZE_LIMITS[protocol]
            if not low <= int(size) <= high:
                raise UsageError(f"parameter size={size}: iperf3 takes {low}..{high} bytes "
                                 f"for {protocol}")

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        port = servers.free_port()
        argv = [shutil.which("iperf3") or "iperf3", "-s", "-B", "127.0.0.1", "-p", str(port)]
        with self._serving("iperf3 server", argv, port=port):
            yield

    def invocation(self, params: dict[str, Any]) -> Invocation:
        server = self._live_server()
        argv = ["iperf3", "-c", "127.0.0.1", "-p", str(server.port),
                "-l", str(params["size"]), "-t", str(params["duration"]),
                "--connect-timeout", str(CONNECT_TIMEOUT_MS), "-J",
                *(["-u", "-b", "0"] if params["protocol"] == "udp" else [])]
        return Invocation(shutil.which("iperf3") or "iperf3", argv, description=" ".join(argv),
                          capture=True, timeout=params["duration"] + 30.0)

    def measure(self, result: ProcessResult, context: SampleContext) -> list[Measurement]:
        if result.timed_out:
            return [self._failed(SampleStatus.TIMEOUT, result.describe_failure())]
        report: dict[str, Any] | None = None
        try:
            report = load_report(context.stdout)
        except ValueError as problem:
            unreadable = f"unreadable iperf3 report: {problem}"
        if report is not None and (error := report_error(report)):
            return [self._failed(SampleStatus.FAILED, f"iperf3: {error}")]
        if not result.ok:
            # iperf3 prefixes its own complaint with "iperf3:"; a usage text follows it
            said = next((line for line in context.stderr.splitlines() if line.startswith("iperf3:")),
                        "")
            return [self._failed(SampleStatus.FAILED, result.describe_failure()
                                 + (f": {said}" if said else ""))]
        if report is None:
            return [self._failed(SampleStatus.FAILED, unreadable)]
        try:
            parsed = parse_summary(report)
        except ValueError as problem:
            return [self._failed(SampleStatus.FAILED, f"unreadable iperf3 report: {problem}")]
        if parsed.send_mbps <= 0 or parsed.recv_mbps <= 0:
            return [self._failed(SampleStatus.INVALID, "iperf3 reported no data "
                                 f"(sent {parsed.send_mbps:g}, received {parsed.recv_mbps:g} Mbit/s)")]
        values = [Measurement("send_mbps", parsed.send_mbps, UNIT),
                  Measurement("recv_mbps", parsed.recv_mbps, UNIT)]
        if context.params["protocol"] == "udp" and parsed.lost_percent is not None:
            values.append(Measurement("lost_percent", parsed.lost_percent, "%"))
        return values


    @staticmethod
    def _failed(status: SampleStatus, note: str) -> Measurement:
        return Measurement("send_mbps", None, UNIT, status, note)
