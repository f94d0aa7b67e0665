"""A run's plans: one per benchmark (workload, sweep, options, points), checked before
anything is stored, and what the stored RunRequest keeps of each (PlanRecord)."""

from __future__ import annotations

import math
import os
import statistics
from dataclasses import dataclass, field
from typing import Any

from perflab.execute import monitors as monitoring
from perflab.execute.process import Streams, spawn_and_wait
from perflab.model.errors import EnvironmentProblem, UsageError
from perflab.model.params import cartesian, check_size, placeholders
from perflab.model.run_request import Layout, PlanRecord, RunOptions, RunRequest
from perflab.workloads.base import Workload
from perflab.workloads.command import SHELL, CommandWorkload
from perflab.workloads.registry import from_spec

SHELL_CALIBRATION_RUNS = 50


@dataclass
class RunPlan:
    workload: Workload
    sweep: dict[str, list[Any]]
    options: RunOptions
    points: list[dict[str, Any]] = field(default_factory=list)
    shell_overhead: tuple[float, float, float] | None = None

    def record(self) -> PlanRecord:
        """What the stored request keeps of this plan; the layout (how compare lays out its
        rows) and monitor overheads (for `perflab show`) are not read back by from_record."""
        return PlanRecord(workload=self.workload.spec(), sweep=self.sweep, options=self.options,
                          shell_overhead=self.shell_overhead,
                          layout=Layout(benchmark=self.workload.benchmark, title=self.workload.report_title,
                                        row=self.workload.report_row),
                          monitor_overhead=monitor_overheads(self.options))

    @classmethod
    def from_record(cls, record: PlanRecord) -> RunPlan:
        run_plan = plan_run(from_spec(record.workload), record.sweep, record.options)
        run_plan.shell_overhead = record.shell_overhead
        return run_plan


def interleaved(plans: list[RunPlan]) -> bool:
    """Several commands share one schedule, alternating inside every round. A built-in
    workload (it may start a server for its session) or plans of different sizes run
    one after another instead."""
    return (all(isinstance(p.workload, CommandWorkload) for p in plans)
            and len({(p.options.repetitions, p.options.warmup, p.options.seed) for p in plans}) == 1)


def plan_run(workload: Workload, sweep: dict[str, list[Any]], options: RunOptions) -> RunPlan:
    """Check everything the user gave, without touching the database."""
    if options.timeout is not None and not (0 < options.timeout < math.inf):  # NaN fails too
        raise UsageError(f"--timeout must be positive and finite, got {options.timeout}")
    if options.cpus:
        allowed = os.sched_getaffinity(0)
        outside = sorted(set(options.cpus) - allowed)
        if outside:
            raise UsageError(f"--cpu {outside[0]} is not an online CPU available to perflab "
                             f"(available: {_cpu_list(allowed)})")
    monitoring.check_config(options)
    reason = workload.unavailable()
    if reason:
        raise EnvironmentProblem(f"unsupported on this machine: {workload.name}: {reason}")
    check_size(sweep, options.force)
    workload.validate(sweep)
    for kind in ("prepare", "conclude", "setup", "cleanup"):
        line = getattr(options, kind)
        unknown = placeholders(line or "") - set(sweep)
        if unknown:
            raise UsageError(f"unknown placeholder {{{sorted(unknown)[0]}}} in --{kind}",
                             hint="define it with -p")
    points = [workload.complete(p) for p in cartesian(sweep)]
    return RunPlan(workload, sweep, options, points=points)


def measure_shell_overhead(streams: Streams, shell: str = SHELL) -> tuple[float, float, float]:
    """The median wall, user and system time of an empty shell line (hyperfine's correction)."""
    results = [spawn_and_wait(shell, [shell, "-c", ""], streams=streams)
               for _ in range(SHELL_CALIBRATION_RUNS + 3)][3:]
    return (statistics.median(r.wall_s for r in results),
            statistics.median(r.user_s for r in results),
            statistics.median(r.system_s for r in results))


def monitor_overheads(options: RunOptions) -> dict[str, str]:
    """What each chosen monitor costs the measured numbers, in words (see Monitor.overhead)."""
    known = monitoring.known()
    return {name: known[name].overhead.format(profile_freq=options.profile_freq)
            for name in options.monitors or () if name in known and known[name].overhead}


def plans_of(request: RunRequest) -> list[RunPlan]:
    """The plans a recorded request resolved to (for --resume)."""
    if not request.plans:
        imported = request.imported
        source = f" from {imported.file}" if imported and imported.file else ""
        raise UsageError(f"this run was imported{source}: there is nothing to resume")
    return [RunPlan.from_record(p) for p in request.plans]


def _cpu_list(cpus: set[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))
