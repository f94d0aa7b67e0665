"""``netstream``: TCP and UDP stream throughput over loopback with iperf3.

Mirrors the netperf rows of seed 004 (TCP_STREAM / UDP_STREAM, message sizes 64 ..
16384). The session starts ``iperf3 -s`` on 127.0.0.1 at a free port (persistent: it
serves one test after another); each sample is one client run with ``-J``.

UDP is sent at ``rate`` (iperf3 ``-b``, 1 Gbit/s unless asked; 0 is unthrottled, as
netperf's UDP_STREAM). A sender can outrun the receiver (unthrottled on loopback, 57-72%
of the datagrams were lost here): ``recv_mbps``, the primary metric, is the rate that
arrived, ``send_mbps`` the rate sent, ``lost_percent`` the difference, and a point that
loses more than ``LOSS_WARNING_PERCENT`` is warned about. TCP points have no ``rate``.

iperf3 3.12 quirks the parser guards against: a client that cannot connect prints a
JSON report with an ``error`` key and still exits 0; ``-t`` takes whole seconds and
reads a fraction such as 0.5 as 0, which means "run forever" (hence integer
``duration``); the TCP summary's ``sum_received`` claims ``"sender": true``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from perflab.model.errors import UsageError
from perflab.model.records import Direction, Measurement, MetricInfo, ProcessResult, SampleStatus
from perflab.workloads import servers
from perflab.workloads.base import Invocation, Parameter, SampleContext, Workload
from perflab.workloads.registry import register

MISSING = "iperf3 not found (apt-get install iperf3)"
UNIT = "Mbit/s"
CONNECT_TIMEOUT_MS = 5000
SIZE_LIMITS = {"tcp": (1, 1048576), "udp": (16, 65507)}   # iperf3's own -l bounds
DEFAULT_RATE = "1G"
LOSS_WARNING_PERCENT = 1.0
_RATE = re.compile(r"^\d+(?:\.\d+)?[KMGT]?$")   # iperf3's -b syntax (bits/s, K/M/G/T)


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
    description = "TCP/UDP stream throughput over loopback with iperf3, like netperf's"
    programs = ("iperf3",)
    parameters = (
        Parameter("protocol", "tcp, or udp sent at rate", "tcp", choices=("tcp", "udp")),
        Parameter("size", "bytes per send (iperf3 -l; udp: 16..65507)", 1024, kind=int,
                  minimum=1),
        Parameter("duration", "seconds (whole; iperf3 -t)", 10, kind=int, minimum=1),
        Parameter("rate", "udp: bits/s sent (iperf3 -b: 100M, 1G; 0 = unthrottled)",
                  DEFAULT_RATE),
    )

    @property
    def metrics(self) -> list[MetricInfo]:
        return [
            MetricInfo("recv_mbps", UNIT, Direction.HIGHER, description="rate the server received"),
            MetricInfo("send_mbps", UNIT, Direction.HIGHER, description="rate the client sent"),
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
        for rate in sweep.get("rate", []):
            if not _RATE.match(str(rate)):
                raise UsageError(f"parameter rate={rate!r}: expected bits/s as iperf3 -b takes "
                                 "them, e.g. 100M or 1G (0 = unthrottled)")
        if "rate" in sweep and "udp" not in sweep.get("protocol", [defaults["protocol"]]):
            raise UsageError("parameter rate applies to protocol=udp")

    def complete(self, params: dict[str, Any]) -> dict[str, Any]:
        point = super().complete(params)
        if point["protocol"] == "tcp":
            del point["rate"]   # TCP is never throttled; its points stay as they were
        else:
            point["rate"] = str(point["rate"])
        return point

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
                *(["-u", "-b", params["rate"]] if params["protocol"] == "udp" else [])]
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
        values = [Measurement("recv_mbps", parsed.recv_mbps, UNIT),
                  Measurement("send_mbps", parsed.send_mbps, UNIT)]
        if context.params["protocol"] == "udp" and parsed.lost_percent is not None:
            values.append(Measurement("lost_percent", parsed.lost_percent, "%"))
        return values

    def warnings(self, params: dict[str, Any], measurements: list[Measurement]) -> list[str]:
        lost = next((m.value for m in measurements if m.metric == "lost_percent"), None)
        if lost is None or lost <= LOSS_WARNING_PERCENT:
            return []
        return [f"{lost:.1f}% of the UDP datagrams were lost (more than "
                f"{LOSS_WARNING_PERCENT:g}%): the receiver did not keep up at rate={params['rate']}; "
                "recv_mbps is the rate that arrived, send_mbps the rate sent "
                "(a lower -p rate= measures without loss)"]

    @staticmethod
    def _failed(status: SampleStatus, note: str) -> Measurement:
        return Measurement("recv_mbps", None, UNIT, status, note)
