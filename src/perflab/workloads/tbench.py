"""``tbench``: dbench's tbench client against a local tbench_srv (seed 004's tbench4).

tbench replays the socket calls of a netbench (SMB file server) client; the server
echoes them. Throughput is MB/s with MB = 10^6 bytes.

What the programs dictate (dbench 4.0, as packaged):

- tbench_srv takes no address and no port: it listens on 0.0.0.0:7003. So the workload
  runs it in a network namespace of its own (loopback only, see ``servers``), where
  nothing outside the machine can reach it and another run's server cannot clash; the
  client joins that namespace through ``nsenter --net``.
- ``tbench -t D`` first warms up for D/5 seconds (integer division), then measures D
  seconds. The per-second "MB/sec execute" lines are running averages since the
  warm-up ended, not per-second rates, and the final ``Throughput`` line repeats the
  last of them, so the final line is the whole measurement.
- A client that cannot connect makes tbench wait 30 s, print "FAILED TO START", then
  "Throughput 0 MB/sec" and exit 0: that is a failed sample, never a value.
- "failed to create barrier semaphore" is printed whenever the semaphore gets id 0,
  which is a valid id: harmless.
"""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from perflab.model.records import Direction, Measurement, MetricInfo, ProcessResult, SampleStatus
from perflab.workloads import servers
from perflab.workloads.base import Invocation, Parameter, SampleContext, Workload, tasks_max
from perflab.workloads.registry import register

PORT = 7003                 # compiled into dbench 4.0
START_WAIT_S = 30.0         # how long tbench waits for its clients to connect
UNIT = "MB/s"
_MISSING = {"tbench": "tbench not found (apt-get install dbench)",
            "tbench_srv": "tbench_srv not found (apt-get install dbench)",
            "nsenter": "nsenter not found (apt-get install util-linux)"}
_THROUGHPUT = re.compile(r"^Throughput ([0-9.eE+-]+) MB/sec.*?max_latency=([0-9.]+) ms",
                         re.MULTILINE)
_START_FAILED = re.compile(r"^FAILED TO START .*$", re.MULTILINE)


@dataclass(frozen=True)
class TbenchResult:
    throughput: float       # MB/s over the measured seconds
    max_latency_ms: float   # the slowest operation of any client


def parse_tbench(text: str) -> TbenchResult:
    """tbench's final ``Throughput`` line; ValueError if it is missing."""
    match = _THROUGHPUT.search(text)
    if match is None:
        raise ValueError("no 'Throughput ... MB/sec' line")
    return TbenchResult(float(match.group(1)), float(match.group(2)))


def start_failure(stdout: str, stderr: str) -> str | None:
    """Why tbench's clients did not start (it still exits 0), or None if they did."""
    match = _START_FAILED.search(stdout)
    if match is None:
        return None
    cause = next((line for line in stderr.splitlines() if line.startswith("failed to connect")), "")
    return f"tbench: {match.group(0)}" + (f": {cause}" if cause else "")


@register
class Tbench(servers.ServedWorkload, Workload):
    name = "tbench"
    report_title = "tbench4"
    report_row = "clients"
    description = "dbench's tbench: netbench-like client/server load over loopback, MB/s"
    programs = ("tbench", "tbench_srv", "nsenter")
    parameters = (
        Parameter("clients", "simulated clients, one process and connection each", 1,
                  kind=int, minimum=1, maximum=tasks_max()),
        Parameter("duration", "measured seconds (whole; tbench -t), after a warm-up of "
                  "duration/5", 10, kind=int, minimum=1),
    )

    @property
    def metrics(self) -> list[MetricInfo]:
        return [
            MetricInfo("throughput", UNIT, Direction.HIGHER,
                       description="all clients together, over the measured seconds"),
            MetricInfo("max_latency", "ms", Direction.LOWER,
                       description="the slowest operation of any client"),
        ]

    def unavailable(self) -> str | None:
        missing = [_MISSING[p] for p in self.programs if shutil.which(p) is None]
        if missing:
            return "; ".join(missing)
        return servers.private_network_unavailable()

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        with self._serving("tbench_srv", [shutil.which("tbench_srv") or "tbench_srv"],
                           port=PORT, private_network=True):
            yield

    def invocation(self, params: dict[str, Any]) -> Invocation:
        server = self._live_server()   # a dead server would fail every sample, 30 s each
        tbench = shutil.which("tbench") or "tbench"
        duration, clients = params["duration"], params["clients"]
        argv = ["nsenter", f"--net={server.netns}", tbench, "-t", str(duration),
                str(clients), "127.0.0.1"]
        return Invocation(shutil.which("nsenter") or "nsenter", argv,
                          description=f"tbench -t {duration} {clients} 127.0.0.1",
                          capture=True, timeout=duration * 1.2 + START_WAIT_S + 30.0)

    def measure(self, result: ProcessResult, context: SampleContext) -> list[Measurement]:
        if result.timed_out:
            return [Measurement("throughput", None, UNIT, SampleStatus.TIMEOUT,
                                result.describe_failure())]
        failure = start_failure(context.stdout, context.stderr)
        if failure is None and not result.ok:
            said = [line.strip() for line in (context.stderr or context.stdout).splitlines()
                    if line.strip()]
            failure = result.describe_failure() + (f": {said[-1]}" if said else "")
        if failure is not None:
            return [Measurement("throughput", None, UNIT, SampleStatus.FAILED, failure)]
        try:
            parsed = parse_tbench(context.stdout)
        except ValueError as error:
            return [Measurement("throughput", None, UNIT, SampleStatus.FAILED,
                                f"unreadable tbench output: {error}")]
        if parsed.throughput <= 0:
            return [Measurement("throughput", None, UNIT, SampleStatus.INVALID,
                                "tbench reported 0 MB/sec")]
        return [Measurement("throughput", parsed.throughput, UNIT),
                Measurement("max_latency", parsed.max_latency_ms, "ms")]
