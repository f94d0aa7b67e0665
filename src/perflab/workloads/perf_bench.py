"""Workloads around ``perf bench`` (linux-perf) and rt-tests' ``hackbench``.

- ``breakpoint-thread`` (seed 000): ``perf bench -r R breakpoint thread -b B -p P -t T``.
  B inherited hardware breakpoints; P parallel workers take batches of T threads to
  create and join from one shared budget of R batches (so R is the total, not per
  worker). perf prints usecs/op = elapsed / (R x T) and usecs/op/cpu = usecs/op x P.
- ``breakpoint-enable``: ``perf bench -r R breakpoint enable -p passive -a active``:
  R DISABLE/ENABLE ioctl pairs on one inherited breakpoint; usecs/op = elapsed / R.
- ``sched-pipe``: ``perf bench sched pipe -l L [-T]``: two tasks ping-pong 4 bytes over
  two pipes; one op is one round trip (each side one write and one read). The clock
  starts before the fork, so at small L task creation is part of the result.
- ``hackbench`` (seed 004): groups of 20 senders x 20 receivers, 100-byte messages,
  run by ``perf bench sched messaging`` or rt-tests ``hackbench``; seconds.

perf prints "Total time" to the millisecond only; where usecs/op is printed (to the
microsecond of the same interval) ``time`` is derived from it instead.

A machine without hardware breakpoints makes perf_event_open fail with ENODEV: perf
6.1 reports "perf_event_open: No such device" and exits 1; later perfs print
"Skipping perf bench breakpoint ...: No hardware support" and exit 0. Both are
"unsupported here", never a value.
"""

from __future__ import annotations

import abc
import functools
import re
import shutil
import subprocess
from typing import Any

from perflab.model.errors import EnvironmentProblem
from perflab.model.records import Direction, Measurement, MetricInfo, ProcessResult, SampleStatus
from perflab.workloads.base import Invocation, Parameter, SampleContext, Workload, tasks_max
from perflab.workloads.registry import register

PERF_MISSING = "perf not found (apt-get install linux-perf)"
HACKBENCH_MISSING = "hackbench not found (apt-get install rt-tests)"
NO_BREAKPOINTS = "unsupported on this machine: no hardware breakpoint support"
TIMEOUT_S = 600.0        # a bound for a wedged benchmark; real points take seconds
PROBE_TIMEOUT_S = 10.0

_LINES = {  # perf bench's result lines (default format) -> our metric names
    "time": re.compile(r"^\s*Total time:\s*([0-9.]+) \[sec\]", re.MULTILINE),
    "usec_per_op": re.compile(r"^\s*([0-9.]+) usecs/op$", re.MULTILINE),
    "usec_per_op_per_cpu": re.compile(r"^\s*([0-9.]+) usecs/op/cpu$", re.MULTILINE),
    "ops_per_s": re.compile(r"^\s*([0-9]+) ops/sec$", re.MULTILINE),
}
_RT_TIME = re.compile(r"^Time:\s*([0-9.]+)\s*$", re.MULTILINE)


# -- parsers (pure) --------------------------------------------------------------------
def parse_perf_bench(text: str) -> dict[str, float]:
    """The result lines found in perf bench's output; ValueError if there is none."""
    found = {name: float(match.group(1)) for name, pattern in _LINES.items()
             if (match := pattern.search(text))}
    if not found:
        raise ValueError("no result line (Total time, usecs/op)")
    return found


def parse_rt_hackbench(text: str) -> float:
    """Seconds from rt-tests hackbench's ``Time: X`` line; ValueError if missing."""
    match = _RT_TIME.search(text)
    if match is None:
        raise ValueError("no 'Time:' line")
    return float(match.group(1))


def breakpoints_unsupported(stdout: str, stderr: str) -> bool:
    """Whether perf bench breakpoint says the machine has no hardware breakpoints."""
    return "No hardware support" in stdout or "perf_event_open: No such device" in stderr


def complaint(stderr: str) -> str:
    """The line of a benchmark's stderr that says what went wrong ("" if silent)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return next((line for line in lines if "error" in line.lower()), lines[-1] if lines else "")


# -- the workloads -----------------------------------------------------------------------
class _Benchmark(Workload):
    """What the perf-bench-like workloads share: one run, one parsed output."""

    programs: tuple[str, ...] = ("perf",)

    def unavailable(self) -> str | None:
        return None if shutil.which("perf") else PERF_MISSING


    @abc.abstractmethod
    def command(self, params: dict[str, Any]) -> list[str]:
        """argv, program name first (found on PATH)."""

    @abc.abstractmethod
    def values(self, stdout: str, params: dict[str, Any]) -> dict[str, float]:
        """The metric values in the output; ValueError if they are not there."""

    def invocation(self, params: dict[str, Any]) -> Invocation:
        argv = self.command(params)
        executable = shutil.which(argv[0])
        if executable is None:
            raise EnvironmentProblem(PERF_MISSING if argv[0] == "perf" else HACKBENCH_MISSING)
        return Invocation(executable, argv, description=" ".join(argv), capture=True,
                          timeout=TIMEOUT_S)

    def problem(self, result: ProcessResult, context: SampleContext) -> Measurement | None:
        """The failure row of a sample that has no values, or None."""
        primary = self.metrics[0]
        if result.timed_out:
            return Measurement(primary.name, None, primary.unit, SampleStatus.TIMEOUT,
                               result.describe_failure())
        if not result.ok:
            said = complaint(context.stderr) or complaint(context.stdout)
            note = f"{result.describe_failure()}: {said}" if said else result.describe_failure()
            return Measurement(primary.name, None, primary.unit, SampleStatus.FAILED, note)
        return None

    def measure(self, result: ProcessResult, context: SampleContext) -> list[Measurement]:
        failed = self.problem(result, context)
        if failed is not None:
            return [failed]
        primary = self.metrics[0]
        try:
            values = self.values(context.stdout, context.params)
        except ValueError as error:
            return [Measurement(primary.name, None, primary.unit, SampleStatus.FAILED,
                                f"unreadable {self.name} output: {error}")]
        if values[primary.name] <= 0:   # a zero is the printed resolution, not a time
            return [Measurement(primary.name, None, primary.unit, SampleStatus.INVALID,
                                f"{self.name} printed {primary.name} 0: below its resolution "
                                "(make the run longer)")]
        return [Measurement(m.name, values[m.name], m.unit) for m in self.metrics if m.name in values]


class _Breakpoint(_Benchmark):
    def unavailable(self) -> str | None:
        perf = shutil.which("perf")
        return PERF_MISSING if perf is None else _breakpoint_probe(perf)

    def problem(self, result: ProcessResult, context: SampleContext) -> Measurement | None:
        if not result.timed_out and breakpoints_unsupported(context.stdout, context.stderr):
            # later perfs exit 0 here: without this check it would look like a pass
            status = SampleStatus.INVALID if result.ok else SampleStatus.FAILED
            return Measurement(self.metrics[0].name, None, self.metrics[0].unit, status,
                               NO_BREAKPOINTS)
        failed = super().problem(result, context)
        if failed is not None and "No space left on device" in context.stderr:
            # x86 has 4 debug registers: a 5th breakpoint cannot be scheduled
            failed = Measurement(failed.metric, None, failed.unit, failed.status,
                                 f"{failed.note} (more breakpoints than the CPU has "
                                 "debug registers)")
        return failed


@functools.cache
def _breakpoint_probe(perf: str) -> str | None:
    """Why hardware breakpoints cannot be used here, from one tiny run (cached)."""
    try:
        probe = subprocess.run([perf, "bench", "-r", "1", "breakpoint", "thread",
                                "-b", "1", "-p", "1", "-t", "1"],
                               capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"perf bench breakpoint did not run: {error}"
    if breakpoints_unsupported(probe.stdout, probe.stderr):
        return NO_BREAKPOINTS.removeprefix("unsupported on this machine: ")
    if probe.returncode != 0:
        said = complaint(probe.stderr) or f"exit status {probe.returncode}"
        hint = (" (as non-root it needs kernel.perf_event_paranoid <= 2)"
                if "Permission denied" in said or "not permitted" in said else "")
        return f"perf bench breakpoint fails: {said}{hint}"
    return None


@register
class BreakpointThread(_Breakpoint):
    name = "breakpoint-thread"
    report_row = "threads"
    description = ("perf bench breakpoint thread: thread create/join cost with inherited "
                   "hardware breakpoints")
    parameters = (
        Parameter("breakpoints", "inherited hardware breakpoints (-b; x86 has 4 debug "
                  "registers, 0 = the no-breakpoint baseline)", 4, kind=int, minimum=0),
        Parameter("parallelism", "parallel workers creating threads (-p)", 2, kind=int,
                  minimum=1),
        Parameter("threads", "threads each worker creates and joins per batch (-t)", 64,
                  kind=int, minimum=1),
        Parameter("repeat", "batches in all, shared by the workers (perf bench -r)", 30,
                  kind=int, minimum=1),
    )

    @property
    def metrics(self) -> list[MetricInfo]:
        return [
            MetricInfo("usec_per_op", "us", Direction.LOWER,
                       description="elapsed time per thread created and joined"),
            MetricInfo("usec_per_op_per_cpu", "us", Direction.LOWER,
                       description="usec_per_op x parallelism (perf's usecs/op/cpu)"),
            MetricInfo("time", "s", Direction.LOWER, description="elapsed time of all batches"),
        ]

    def command(self, params: dict[str, Any]) -> list[str]:
        return ["perf", "bench", "-r", str(params["repeat"]), "breakpoint", "thread",
                "-b", str(params["breakpoints"]), "-p", str(params["parallelism"]),
                "-t", str(params["threads"])]

    def values(self, stdout: str, params: dict[str, Any]) -> dict[str, float]:
        found = parse_perf_bench(stdout)
        if "usec_per_op" not in found or "usec_per_op_per_cpu" not in found:
            raise ValueError("no usecs/op or usecs/op/cpu line")
        return {"usec_per_op": found["usec_per_op"],
                "usec_per_op_per_cpu": found["usec_per_op_per_cpu"],
                "time": found["usec_per_op"] * params["repeat"] * params["threads"] / 1e6}


@register
class BreakpointEnable(_Breakpoint):
    name = "breakpoint-enable"
    description = ("perf bench breakpoint enable: cost of disabling and enabling an "
                   "inherited hardware breakpoint")
    parameters = (
        Parameter("passive", "threads blocked in futex_wait (-p)", 0, kind=int, minimum=0),
        Parameter("active", "threads spinning on a CPU (-a)", 0, kind=int, minimum=0),
        Parameter("repeat", "disable/enable pairs (perf bench -r; perf's default 10 gives "
                  "0.1 us resolution)", 10000, kind=int, minimum=1),
    )

    @property
    def metrics(self) -> list[MetricInfo]:
        return [
            MetricInfo("usec_per_op", "us", Direction.LOWER,
                       description="elapsed time per PERF_EVENT_IOC_DISABLE + ENABLE pair"),
            MetricInfo("time", "s", Direction.LOWER, description="elapsed time of all pairs"),
        ]

    def command(self, params: dict[str, Any]) -> list[str]:
        return ["perf", "bench", "-r", str(params["repeat"]), "breakpoint", "enable",
                "-p", str(params["passive"]), "-a", str(params["active"])]

    def values(self, stdout: str, params: dict[str, Any]) -> dict[str, float]:
        found = parse_perf_bench(stdout)
        if "usec_per_op" not in found:
            raise ValueError("no usecs/op line")
        return {"usec_per_op": found["usec_per_op"],
                "time": found["usec_per_op"] * params["repeat"] / 1e6}


@register
class SchedPipe(_Benchmark):
    name = "sched-pipe"
    description = "perf bench sched pipe: pipe ping-pong round trip between two tasks"
    parameters = (
        Parameter("loops", "round trips (-l)", 100000, kind=int, minimum=1),
        Parameter("mode", "two processes, or two threads of one process (-T)", "process",
                  choices=("process", "thread")),
    )

    @property
    def metrics(self) -> list[MetricInfo]:
        return [
            MetricInfo("usec_per_op", "us", Direction.LOWER,
                       description="per round trip (two wake-ups; two context switches on "
                                   "one CPU); includes the start of the second task"),
            MetricInfo("ops_per_s", "ops/s", Direction.HIGHER, description="round trips per second"),
        ]

    def command(self, params: dict[str, Any]) -> list[str]:
        return ["perf", "bench", "sched", "pipe", "-l", str(params["loops"]),
                *(["-T"] if params["mode"] == "thread" else [])]

    def values(self, stdout: str, params: dict[str, Any]) -> dict[str, float]:
        found = parse_perf_bench(stdout)
        if "usec_per_op" not in found:
            raise ValueError("no usecs/op line")
        return {name: found[name] for name in ("usec_per_op", "ops_per_s") if name in found}


@register
class Hackbench(_Benchmark):
    name = "hackbench"
    report_title = "hackbench-{mode}-{ipc}s"
    report_row = "groups"
    description = ("hackbench: groups of 20 senders x 20 receivers exchanging 100-byte "
                   "messages; perf bench sched messaging or rt-tests")
    programs = ("perf", "hackbench")
    parameters = (
        Parameter("groups", "groups of 40 tasks (-g)", 10, kind=int, minimum=1, maximum=tasks_max() // 40),
        Parameter("loops", "messages each sender sends to each receiver (-l)", 100, kind=int,
                  minimum=1),
        Parameter("mode", "tasks are processes or threads", "process",
                  choices=("process", "thread")),
        Parameter("ipc", "pipes or socketpairs", "pipe", choices=("pipe", "socket")),
        Parameter("impl", "perf: perf bench sched messaging; rt-tests: hackbench", "perf",
                  choices=("perf", "rt-tests")),
    )

    @property
    def metrics(self) -> list[MetricInfo]:
        return [MetricInfo("time", "s", Direction.LOWER,
                           description="time to pass all messages (printed to the millisecond)")]

    def unavailable(self) -> str | None:
        if shutil.which("perf") or shutil.which("hackbench"):
            return None
        return f"{PERF_MISSING}; {HACKBENCH_MISSING}"

    def validate(self, sweep: dict[str, list[Any]]) -> None:
        super().validate(sweep)
        for impl in sweep.get("impl", [self.complete({})["impl"]]):
            program = "perf" if impl == "perf" else "hackbench"
            if shutil.which(program) is None:
                raise EnvironmentProblem(f"hackbench impl={impl}: "
                                         + (PERF_MISSING if impl == "perf" else HACKBENCH_MISSING))

    def command(self, params: dict[str, Any]) -> list[str]:
        sizes = ["-g", str(params["groups"]), "-l", str(params["loops"])]
        pipe, thread = params["ipc"] == "pipe", params["mode"] == "thread"
        if params["impl"] == "perf":
            return ["perf", "bench", "sched", "messaging", *(["-p"] if pipe else []),
                    *(["-t"] if thread else []), *sizes]
        # rt-tests: -p is --pipe and -P is --process (fork), -T is --threads
        return ["hackbench", *(["-p"] if pipe else []), "-T" if thread else "-P", *sizes]

    def values(self, stdout: str, params: dict[str, Any]) -> dict[str, float]:
        if params["impl"] == "perf":
            found = parse_perf_bench(stdout)
            if "time" not in found:
                raise ValueError("no 'Total time' line")
            return {"time": found["time"]}
        return {"time": parse_rt_hackbench(stdout)}
