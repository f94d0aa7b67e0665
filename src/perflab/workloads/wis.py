"""``wis``: will-it-scale style testcases (seed 003), perflab's own C program csrc/wis.c.

Each task runs a tight loop of one operation, pinned one per CPU; the program samples
the per-task counters every ``interval``, discards ``warmup`` seconds and reports the
average over ``duration``. In thread mode the tasks share one file table, so every fd
lookup takes a reference: that is where the fget regression of seed 003 showed.

Metrics follow the kernel test robot's names: ``ops_per_s`` is the total over all
tasks; ``per_thread_ops`` (thread mode) or ``per_process_ops`` (process mode) is that
total divided by the tasks, also per second. will-it-scale's ``scalability`` (total /
(1-task result x tasks)) needs a second point, so it is left to the analysis of a
sweep over ``tasks``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from perflab.model.records import Direction, Measurement, MetricInfo, ProcessResult, SampleStatus
from perflab.workloads import native
from perflab.workloads.base import Invocation, Parameter, SampleContext, Workload
from perflab.workloads.registry import register

TESTCASES = ("getppid1", "poll1", "poll2", "read1", "pread1", "write1", "lseek1", "eventfd1",
             "pipe1", "dup1", "open1", "page_fault1", "mmap1", "context_switch1")
ALL_CPUS = "100%"
UNIT = "ops/s"
PER_TASK_METRIC = {"thread": "per_thread_ops", "process": "per_process_ops"}

_TASKS = Parameter("tasks", f'threads or processes, one per CPU round-robin; "{ALL_CPUS}" '
                   "= every CPU perflab may use", 1, kind=int, minimum=1)


@dataclass(frozen=True)
class WisResult:
    total_ops_per_s: float
    per_task_ops_per_s: float
    measured_s: float


def parse_output(text: str) -> WisResult:
    """The ``result`` line of wis (its per-interval lines are for people reading the log);
    ValueError if it is missing or incomplete."""
    for line in text.splitlines():
        words = line.split()
        if words and words[0] == "result":
            fields = dict(word.split("=", 1) for word in words[1:] if "=" in word)
            try:
                return WisResult(float(fields["total_ops_per_s"]),
                                 float(fields["per_task_ops_per_s"]), float(fields["measured_s"]))
            except KeyError as missing:
                raise ValueError(f"result line lacks {missing}") from None
    raise ValueError("no result line")


@register
class WisWorkload(Workload):
    name = "wis"
    report_title = "will-it-scale-{test}-{mode}"
    report_row = "tasks"
    description = "will-it-scale style scalability testcases (ops/s per task), threads or processes"
    parameters = (
        Parameter("test", "testcase (getppid1 is the syscall baseline)", "getppid1",
                  choices=TESTCASES),
        Parameter("mode", "thread: shared file table (the fget path); process: fork",
                  "thread", choices=("thread", "process")),
        _TASKS,
        Parameter("duration", "measured seconds", 5.0, kind=float, minimum=0.01),
        Parameter("warmup", "seconds run and discarded before measuring", 1.0, kind=float,
                  minimum=0.0),
        Parameter("interval", "seconds between counter samples", 1.0, kind=float, minimum=0.01),
    )

    @property
    def metrics(self) -> list[MetricInfo]:
        return [
            MetricInfo("ops_per_s", UNIT, Direction.HIGHER,
                       description="operations per second, all tasks together"),
            MetricInfo("per_thread_ops", UNIT, Direction.HIGHER,
                       description="operations per second per thread (mode=thread)"),
            MetricInfo("per_process_ops", UNIT, Direction.HIGHER,
                       description="operations per second per process (mode=process)"),
        ]

    def unavailable(self) -> str | None:
        return native.compiler_missing()

    def validate(self, sweep: dict[str, list[Any]]) -> None:
        super().validate({name: [_resolve_tasks(v) for v in values] if name == "tasks" else values
                          for name, values in sweep.items()})
        native.binary(self.name)   # a compile error is reported before the run starts

    def complete(self, params: dict[str, Any]) -> dict[str, Any]:
        if "tasks" in params:
            params = dict(params, tasks=_resolve_tasks(params["tasks"]))
        return super().complete(params)

    def invocation(self, params: dict[str, Any]) -> Invocation:
        argv = [native.binary(self.name), "-t", params["test"], "-m", params["mode"],
                "-n", str(params["tasks"]), "-d", f"{params['duration']:g}",
                "-w", f"{params['warmup']:g}", "-i", f"{params['interval']:g}"]
        return Invocation(argv[0], argv, description=" ".join(["wis", *argv[1:]]), capture=True,
                          timeout=params["warmup"] + params["duration"] + 60.0)

    def measure(self, result: ProcessResult, context: SampleContext) -> list[Measurement]:
        if result.timed_out:
            return [Measurement("ops_per_s", None, UNIT, SampleStatus.TIMEOUT,
                                result.describe_failure())]
        if not result.ok:
            return [Measurement("ops_per_s", None, UNIT, SampleStatus.FAILED,
                                native.failure_reason(self.name, context.stderr, result))]
        try:
            parsed = parse_output(context.stdout)
        except ValueError as error:
            return [Measurement("ops_per_s", None, UNIT, SampleStatus.FAILED,
                                f"unreadable wis output: {error}")]
        if parsed.total_ops_per_s <= 0:
            return [Measurement("ops_per_s", None, UNIT, SampleStatus.FAILED,
                                f"{context.params['test']} completed no operations")]
        return [Measurement("ops_per_s", parsed.total_ops_per_s, UNIT),
                Measurement(PER_TASK_METRIC[context.params["mode"]], parsed.per_task_ops_per_s, UNIT)]



def _resolve_tasks(value: Any) -> int:
    """``"100%"`` is every CPU perflab may run on; anything else must be a count >= 1."""
    if value == ALL_CPUS:
        return len(os.sched_getaffinity(0))
    return _TASKS.check(value)
