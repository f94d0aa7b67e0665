"""``cgroup-switch``: context-switch cost across cgroups with perf events on them (seed 001).

perflab's own C program csrc/cgroup_switch.c: two processes pinned to one CPU ping-pong
over pipes, placed in cgroups 0 and 1 of ``cgroups`` (so with 2 or more every switch
crosses cgroups), with ``events`` perf events counting on every cgroup or on one. The
program creates its cgroups itself and always removes them (see the C source for how,
including when it is SIGKILLed).

As in the seed, a sample counts only if the kernel performed the context switches the
design implies: 2 per round trip. The program reports the kernel's count (getrusage of
both processes around their loops); off by more than 1% makes the sample INVALID.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from typing import Any

from perflab.model.errors import UsageError
from perflab.model.records import Direction, Measurement, MetricInfo, ProcessResult, SampleStatus
from perflab.workloads import native
from perflab.workloads.base import Invocation, Parameter, SampleContext, Workload
from perflab.workloads.registry import register

PROGRAM = "cgroup_switch"
FIRST_CPU = "first"
TOLERANCE = 0.01
UNIT = "us"
CHECK_TIMEOUT_S = 30.0
# A generous bound per switch (the seed's worst was 172 us) for the sample's timeout.
SLOWEST_SWITCH_S = 1e-3

_CPU = Parameter("cpu", f'CPU both processes are pinned to ("{FIRST_CPU}": the first one '
                 "the program may run on)", FIRST_CPU, kind=int, minimum=0)


@dataclass(frozen=True)
class SwitchResult:
    elapsed_s: float
    round_trips: int
    switches_expected: int
    switches_measured: int
    usec_per_switch: float
    expect_factor: float        # PERFLAB_CGROUP_SWITCH_EXPECT_FACTOR, a test hook; normally 1


def parse_output(text: str) -> SwitchResult:
    """The ``result`` line of cgroup_switch; ValueError if it is missing or incomplete."""
    for line in text.splitlines():
        words = line.split()
        if words and words[0] == "result":
            fields = dict(word.split("=", 1) for word in words[1:] if "=" in word)
            try:
                return SwitchResult(float(fields["elapsed_s"]), int(fields["round_trips"]),
                                    int(fields["switches_expected"]),
                                    int(fields["switches_measured"]),
                                    float(fields["usec_per_switch"]),
                                    float(fields["expect_factor"]))
            except KeyError as missing:
                raise ValueError(f"result line lacks {missing}") from None
    raise ValueError("no result line")


def switch_count_problem(result: SwitchResult, tolerance: float = TOLERANCE) -> str | None:
    """Why the kernel's switch count does not back the measurement, or None if it does."""
    expected, measured = result.switches_expected, result.switches_measured
    off = abs(measured - expected) / expected
    if off <= tolerance:
        return None
    scaled = (f" x {result.expect_factor:g} (PERFLAB_CGROUP_SWITCH_EXPECT_FACTOR)"
              if result.expect_factor != 1 else "")
    return (f"the kernel counted {measured} context switches where {expected} were expected "
            f"(2 per round trip x {result.round_trips}{scaled}); off by {off:.1%}, "
            f"more than {tolerance:.0%}")


@register
class CgroupSwitchWorkload(Workload):
    name = "cgroup-switch"
    report_row = "cgroups"
    description = ("pipe ping-pong on one CPU between processes in different cgroups, "
                   "with perf events per cgroup (us per context switch)")
    parameters = (
        Parameter("cgroups", "cgroups created; the two processes go into the first two",
                  2, kind=int, minimum=1),
        Parameter("events", "perf events opened per monitored cgroup", 0, kind=int, minimum=0),
        Parameter("monitor", "which cgroups get the events", "all", choices=("all", "one")),
        Parameter("event", "the software event opened (hardware counters need not exist)",
                  "cpu-clock", choices=("cpu-clock", "task-clock", "context-switches")),
        Parameter("loops", "round trips (each is two context switches)", 20000, kind=int,
                  minimum=1),
        _CPU,
    )
    def __init__(self) -> None:
        self._unavailable: str | None = None
        self._checked = False

    @property
    def metrics(self) -> list[MetricInfo]:
        return [MetricInfo("usec_per_switch", UNIT, Direction.LOWER,
                           description="wall time per context switch between the two processes")]

    def unavailable(self) -> str | None:
        """Compiles the program and asks it to create a cgroup and open a perf event on it."""
        if not self._checked:
            self._unavailable = native.compiler_missing() or self._check()
            self._checked = True
        return self._unavailable

    def _check(self) -> str | None:
        try:
            done = subprocess.run([native.binary(PROGRAM), "--check"], capture_output=True,
                                  text=True, timeout=CHECK_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return f"{PROGRAM} --check did not finish in {CHECK_TIMEOUT_S:g} s"
        if done.returncode == 0:
            return None
        return native.complaint(PROGRAM, done.stderr) or f"{PROGRAM} --check failed"

    def validate(self, sweep: dict[str, list[Any]]) -> None:
        cpus = [v for v in sweep.get("cpu", []) if v != FIRST_CPU]
        super().validate(dict(sweep, cpu=cpus) if "cpu" in sweep else sweep)
        allowed = os.sched_getaffinity(0)
        for cpu in cpus:
            if cpu not in allowed:
                raise UsageError(f"cgroup-switch cpu={cpu} is not a CPU perflab may run on",
                                 hint="available: " + ",".join(map(str, sorted(allowed))))

    def complete(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("cpu") == FIRST_CPU:
            params = {name: value for name, value in params.items() if name != "cpu"}
        return super().complete(params)

    def invocation(self, params: dict[str, Any]) -> Invocation:
        argv = [native.binary(PROGRAM), "-g", str(params["cgroups"]), "-e", str(params["events"]),
                "-m", params["monitor"], "-E", params["event"], "-l", str(params["loops"])]
        if params["cpu"] != FIRST_CPU:
            argv += ["-c", str(params["cpu"])]
        return Invocation(argv[0], argv, description=" ".join([PROGRAM, *argv[1:]]), capture=True,
                          timeout=30.0 + 2 * params["loops"] * SLOWEST_SWITCH_S)

    def measure(self, result: ProcessResult, context: SampleContext) -> list[Measurement]:
        metric = "usec_per_switch"
        if result.timed_out:
            return [Measurement(metric, None, UNIT, SampleStatus.TIMEOUT, result.describe_failure())]
        if not result.ok:
            return [Measurement(metric, None, UNIT, SampleStatus.FAILED,
                                native.failure_reason(PROGRAM, context.stderr, result))]
        try:
            parsed = parse_output(context.stdout)
        except ValueError as error:
            return [Measurement(metric, None, UNIT, SampleStatus.FAILED,
                                f"unreadable {PROGRAM} output: {error}")]
        problem = switch_count_problem(parsed)
        if problem:
            return [Measurement(metric, None, UNIT, SampleStatus.INVALID, problem)]
        return [Measurement(metric, parsed.usec_per_switch, UNIT)]
