"""Carrying out a run: plan, environment, samples into the store one by one.

Everything a user can get wrong is checked in ``plan_run`` before the database is
touched. ``Runner`` then writes each sample to the run's pending file the moment it is
measured (one write; see store/pending.py) and moves them into the database once a
second, so a SIGKILL loses at most the sample in flight and ``--resume`` can finish the
rest.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import signal
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from perflab.execute import environment, outside, plan
from perflab.execute import monitors as monitoring
from perflab.execute.cgroups import RunCgroups, remove_tree
from perflab.execute.hooks import run_hook
from perflab.execute.process import CapturedOutput, Streams, open_devnull_streams, spawn_and_wait
from perflab.model.errors import EnvironmentProblem, RunInterrupted, UsageError
from perflab.model.params import cartesian, check_size, placeholders, point_text
from perflab.model.records import Measurement, Point, RunInfo, RunStatus, SampleStatus
from perflab.model.report.live import LiveRow, LiveView
from perflab.stats.intervals import median_ci
from perflab.store import Store, this_host
from perflab.workloads.base import SampleContext, Workload
from perflab.workloads.command import SHELL, CommandWorkload
from perflab.workloads.registry import from_spec

SHELL_CALIBRATION_RUNS = 50
CLEANUP_TIMEOUT_S = 60.0
FLUSH_INTERVAL_S = 1.0  # pending samples reach the database at least this often


@dataclass
class RunOptions:
    repetitions: int = 10
    warmup: int = 0
    shuffle: bool = False
    seed: int | None = None
    cpus: list[int] | None = None
    timeout: float | None = None
    prepare: str | None = None
    setup: str | None = None
    cleanup: str | None = None
    show_output: bool = False
    metrics: list[str] | None = None   # keep only these (a suite's choice); None keeps all
    monitors: list[str] | None = None  # watch each measured sample (execute/monitors)
    events: list[str] | None = None    # perf-stat's events; None: its default choice
    profile_freq: int = monitoring.PROFILE_FREQ_HZ
    call_graph: str = "fp"
    profile_scope: str = "system"
    force: bool = False                # run a sweep above params.MAX_POINTS

    def monitor_config(self) -> monitoring.MonitorConfig:
        return monitoring.MonitorConfig(
            names=tuple(self.monitors or ()), events=tuple(self.events) if self.events is not None else None,
            profile_freq=self.profile_freq, call_graph=self.call_graph,
            profile_scope=self.profile_scope, cpus=tuple(self.cpus) if self.cpus else None)


@dataclass
class RunPlan:
    workload: Workload
    sweep: dict[str, list[Any]]
    options: RunOptions
    points: list[dict[str, Any]] = field(default_factory=list)
    shell_overhead: tuple[float, float, float] | None = None

    def spec(self) -> dict[str, Any]:
        spec = {"workload": self.workload.spec(), "sweep": self.sweep,
                "options": asdict(self.options),
                "shell_overhead": list(self.shell_overhead) if self.shell_overhead else None}
        # how compare lays out this workload's rows (a suite may name its own); from_spec ignores it
        spec["layout"] = {"benchmark": self.workload.benchmark, "title": self.workload.report_title,
                          "row": self.workload.report_row}
        overheads = monitor_overheads(self.options)
        if overheads:
            spec["monitor_overhead"] = overheads   # for `perflab show`; from_spec ignores it
        return spec

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> RunPlan:
        run_plan = plan_run(from_spec(spec["workload"]), spec["sweep"], RunOptions(**spec["options"]))
        if spec.get("shell_overhead"):
            run_plan.shell_overhead = tuple(spec["shell_overhead"])
        return run_plan


Samples = dict[tuple[str, str], list[float]]   # (benchmark, point key) -> primary values by round
StopRule = Callable[[Samples], "str | None"]   # None: keep sampling; else why to stop


@dataclass
class StopLimits:
    """When a run may end before its repetitions are done (checked after every round).

    ``rule`` sees, per benchmark and point, the primary metric of every round so far
    (NaN for a failed sample); ``max_time_s`` ends the run at the first round end after
    that much time; neither stops before ``min_rounds`` rounds."""

    rule: StopRule | None = None
    max_time_s: float | None = None
    min_rounds: int = 1
    describe: Callable[[], str | None] | None = None   # the rule's current decision, for the live view


def interleaved(plans: list[RunPlan]) -> bool:
    """Several commands share one schedule, alternating inside every round. A built-in
    workload (it may start a server for its session) or plans of different sizes run
    one after another instead."""
    return (all(isinstance(p.workload, CommandWorkload) for p in plans)
            and len({(p.options.repetitions, p.options.warmup, p.options.seed) for p in plans}) == 1)


@dataclass
class _Block:
    """Plans that run together: their (plan, point) units alternate round by round."""

    plans: list[RunPlan]
    units: list[tuple[int, int]]            # unit index -> (plan index, point index)
    tasks: list[plan.Task]                  # task.point is a unit index

    def key(self, unit: int) -> tuple[str, str]:
        i, point = self.units[unit]
        workload = self.plans[i].workload
        return workload.benchmark, Point(workload.benchmark, self.plans[i].points[point]).key


@dataclass
class _PlanState:
    """What the loop needs of one plan while it runs."""

    run_plan: RunPlan
    point_ids: list[int]
    keys: list[tuple[str, str]]   # (benchmark, point key) of each point: where its samples go
    labels: list[str]
    monitors: list[monitoring.Monitor]
    cpus: set[int] | None


class Progress(Protocol):
    def start(self, total: int, title: str) -> None: ...
    def advance(self, description: str) -> None: ...
    def stop(self) -> None: ...


LIVE_INTERVAL_S = 0.1   # the live view's numbers are recomputed at most this often


def plan_run(workload: Workload, sweep: dict[str, list[Any]], options: RunOptions) -> RunPlan:
    """Check everything the user gave, without touching the database."""
    if options.repetitions < 1:
        raise UsageError(f"-n must be at least 1, got {options.repetitions}")
    if options.warmup < 0:
        raise UsageError(f"--warmup cannot be negative, got {options.warmup}")
    if options.timeout is not None and not (0 < options.timeout < math.inf):  # NaN fails too
        raise UsageError(f"--timeout must be positive and finite, got {options.timeout}")
    if options.cpus:
        allowed = os.sched_getaffinity(0)
        outside = sorted(set(options.cpus) - allowed)
        if outside:
            raise UsageError(f"--cpu {outside[0]} is not an online CPU available to perflab "
                             f"(available: {_cpu_list(allowed)})")
    monitoring.check_config(options.monitor_config())
    reason = workload.unavailable()
    if reason:
        raise EnvironmentProblem(f"unsupported on this machine: {workload.name}: {reason}")
    check_size(sweep, options.force)
    workload.validate(sweep)
    for kind in ("prepare", "setup", "cleanup"):
        line = getattr(options, kind)
        unknown = placeholders(line or "") - set(sweep)
        if unknown:
            raise UsageError(f"unknown placeholder {{{sorted(unknown)[0]}}} in --{kind}",
                             hint="define it with -p")
    if options.shuffle and options.seed is None:
        options.seed = random.SystemRandom().randrange(2**31)
    points = [workload.complete(p) for p in cartesian(sweep)]
    return RunPlan(workload, sweep, options, points=points)


def measure_shell_overhead(streams: Streams, shell: str = SHELL) -> tuple[float, float, float]:
    """The median wall, user and system time of an empty shell line (hyperfine's correction)."""
    results = [spawn_and_wait(shell, [shell, "-c", ""], streams=streams)
               for _ in range(SHELL_CALIBRATION_RUNS + 3)][3:]
    return (statistics.median(r.wall_s for r in results),
            statistics.median(r.user_s for r in results),
            statistics.median(r.system_s for r in results))


class Runner:
    """Runs plans (one per benchmark; a suite has several) into one run of the store."""

    def __init__(self, store: Store, plans: list[RunPlan], progress: Progress,
                 warn: Callable[[str], None], stop: StopLimits | None = None):
        self.store = store
        self.plans = plans
        self.stop = stop or StopLimits()
        self.samples: Samples = {}
        self.stopped: dict[str, Any] | None = None   # why and when the run ended early
        self._outside = outside.Reader(None)   # the load outside perflab's cgroups, once they exist
        self.progress = progress
        self.warn = warn
        self.failures = 0
        self.measured = 0
        self._monitor_sets: dict[monitoring.MonitorConfig, list[monitoring.Monitor]] = {}
        self._built_monitors: list[monitoring.Monitor] = []   # closed at the end, even if switched off
        self._warned: set[str] = set()
        self._metric_infos: set[tuple[str, str]] = set()   # monitor metrics described so far
        self._last_wall: dict[tuple[str, int], float] = {}  # (benchmark, point) -> last wall time
        self._cgroups: RunCgroups | None = None
        self._monitor_cgroup: Path | None = None   # where monitors start perf (see cgroups.py)
        self._point_warned: set[tuple[str, int]] = set()   # a workload's warning, once per point

    def start(self, *, label: str, commit: str | None = None, describe: str | None = None,
              repo: str | None = None, command_line: list[str] | None = None,
              extra_spec: dict[str, Any] | None = None, job_id: int | None = None) -> int:
        snapshot = environment.capture()
        with _streams(self._show_output) as streams:
            overheads: dict[str, tuple[float, float, float]] = {}
            for run_plan in self.plans:
                shell = run_plan.workload.shell if isinstance(run_plan.workload, CommandWorkload) else None
                if shell:
                    if shell not in overheads:
                        overheads[shell] = measure_shell_overhead(streams, shell)
                    run_plan.shell_overhead = overheads[shell]
            run_id = self.store.create_run(
                label=label, host=this_host(),
                spec=runs_spec(self.plans, command_line) | (extra_spec or {}),
                environment=snapshot, commit=commit, commit_describe=describe, repo=repo, job_id=job_id)
            for run_plan in self.plans:
                self.store.save_metric_info(run_plan.workload.benchmark, run_plan.workload.metrics)
            self._execute(run_id, self._work(set()), streams, snapshot)
        return run_id

    def resume(self, run: RunInfo) -> int:
        if run.status is RunStatus.COMPLETE:
            raise UsageError(f"run {run.id} is already complete")
        if run.status is RunStatus.RUNNING:
            raise UsageError(f"run {run.id} is still running (perflab pid {run.pid})")
        work = self._work(self.store.done_repetitions(run.id))
        self._load_samples(run.id)
        self.store.set_run_status(run.id, RunStatus.RUNNING, finished=False)
        with _streams(self._show_output) as streams:
            self._execute(run.id, work, streams, run.environment)
        return run.id

    def _work(self, recorded: set[tuple[str, str, int]]) -> list[_Block]:
        """The blocks to run, without the repetitions already ``recorded`` (--resume)."""
        groups = [self.plans] if interleaved(self.plans) else [[p] for p in self.plans]
        blocks = []
        for group in groups:
            units = [(i, point) for i, p in enumerate(group) for point in range(len(p.points))]
            options = group[0].options
            block = _Block(group, units, plan.schedule(len(units), options.repetitions, options.warmup,
                                                       options.seed))
            keys = [block.key(unit) for unit in range(len(units))]
            done = {(unit, rep) for unit, key in enumerate(keys) for rep in range(options.repetitions)
                    if (*key, rep) in recorded}
            block.tasks = plan.remaining(block.tasks, done)
            blocks.append(block)
        return blocks

    def _load_samples(self, run_id: int) -> None:
        """The primary values a resumed run already has, for its stop rule."""
        primary = {p.workload.benchmark: p.workload.metrics[0].name for p in self.plans}
        rows = self.store.sample_rows(run_id)
        found: dict[tuple[str, str], dict[int, float]] = {}
        for benchmark, params, rep, metric, value in zip(rows.benchmark, rows.points, rows.repetition,
                                                         rows.metric, rows.value):
            if primary.get(benchmark) == metric:
                found.setdefault((benchmark, params), {})[int(rep)] = float(value)
        self.samples = {key: [values[r] for r in sorted(values)] for key, values in found.items()}

    @property
    def _show_output(self) -> bool:
        return any(p.options.show_output for p in self.plans)

    # -- the loop ----------------------------------------------------------------
    def _execute(self, run_id: int, work: list[_Block], streams: Streams,
                 snapshot: dict[str, Any]) -> None:
        status = RunStatus.FAILED
        names = ", ".join(p.workload.benchmark for block in work for p in block.plans)
        self.progress.start(sum(len(block.tasks) for block in work), f"run {run_id}: {names}")
        self._started = time.monotonic()
        self._live_at = 0.0
        capture = CapturedOutput(streams.stdin)
        self._pending = self.store.open_pending(run_id)
        self._flushed_at = time.monotonic()
        self._cgroups, reason = RunCgroups.create()
        self._monitor_cgroup = None
        self._outside.close()
        self._outside = outside.Reader(self._cgroups.base if self._cgroups is not None else None)
        if reason:
            self._warn_once(f"samples run without a cgroup of their own ({reason}): a process "
                            "a sample moves out of its process group (setsid, a daemon) can "
                            "outlive a timeout or a kill of perflab")
        try:
            with _terminate_as_interrupt():
                for block in work:
                    if block.tasks and not self._execute_block(run_id, block, streams, capture):
                        break
                status = RunStatus.COMPLETE
        except KeyboardInterrupt as stop:
            status = RunStatus.INTERRUPTED
            raise RunInterrupted(run_id, self.measured,
                                 terminated=isinstance(stop, _Terminated)) from None
        finally:
            capture.close()
            self._close_monitors()
            if self._cgroups is not None:
                self._cgroups.close()
            self.progress.stop()
            # a PostgreSQL store that went away: wait for it (bounded) rather than lose the end
            self.store.when_reachable(lambda: self.store.flush_pending(run_id, self._pending),
                                      on_wait=self._warn_unreachable)
            self._pending.close()
            self._pending.path.unlink(missing_ok=True)
            snapshot = dict(snapshot, loadavg_end=environment.read_loadavg())
            if self.stopped is not None:
                stopped = self.stopped
                self.store.when_reachable(lambda: self.store.update_spec(run_id, {"stopped": stopped}))
            if status is RunStatus.COMPLETE and self.measured and self.failures == self.measured:
                status = RunStatus.FAILED
            final = status
            self.store.when_reachable(lambda: self.store.set_run_status(run_id, final, environment=snapshot))
            self.store.when_reachable(lambda: self.store.seal(run_id))

    def _flush(self, run_id: int) -> None:
        """Move the pending samples in; while a PostgreSQL store is away they stay in the
        pending file (written already) and move in at a later flush."""
        if not self.store.flush_pending_if_reachable(run_id, self._pending):
            self._warn_unreachable()

    def _warn_unreachable(self) -> None:
        self._warn_once("the database does not answer: samples wait in the run's pending file "
                        "and move in when it is back")

    def _execute_block(self, run_id: int, block: _Block, streams: Streams,
                       capture: CapturedOutput) -> bool:
        """Run one block's tasks; False when the stop limits ended the run."""
        active = {t.point for t in block.tasks}
        active_points: dict[int, list[int]] = {i: [] for i in range(len(block.plans))}
        for unit in sorted(active):
            i, point = block.units[unit]
            active_points[i].append(point)
        states = [self._plan_state(run_plan) for run_plan in block.plans]
        keys = [block.key(unit) for unit in range(len(block.units))]
        try:
            with contextlib.ExitStack() as sessions:
                for i, run_plan in enumerate(block.plans):
                    if active_points[i]:
                        sessions.enter_context(self._session(run_plan.workload))
                        if run_plan.options.setup:
                            for point in active_points[i]:
                                self._hook("setup", run_plan.options.setup, run_plan.points[point], streams)
                for k, task in enumerate(block.tasks):
                    i, point = block.units[task.point]
                    self._sample(run_id, states[i], plan.Task(point, task.repetition, task.warmup),
                                 streams, capture)
                    following = block.tasks[k + 1] if k + 1 < len(block.tasks) else None
                    round_end = not task.warmup and (following is None or following.repetition != task.repetition)
                    if round_end and following is not None:
                        # the view shows the decision of the round it shows the samples of
                        stopping = self._should_stop(keys)
                        self._show_live(block, keys, final=stopping)
                        if stopping:
                            return False
                if self.stopped is None and (self.stop.rule is not None or self.stop.max_time_s):
                    self._should_stop(keys)   # the last round's decision, for the record
                self._show_live(block, keys, final=True)
        finally:
            for i, run_plan in enumerate(block.plans):
                self._cleanup(run_plan, active_points[i], streams)
        return True

    def _show_live(self, block: _Block, keys: list[tuple[str, str]], *, final: bool = False) -> None:
        """Each benchmark's running median and its interval, for a progress that shows them;
        the ``final`` view (the block's last round, or the one it stopped at) always."""
        show = getattr(self.progress, "show", None)
        now = time.monotonic()
        if show is None or (now - self._live_at < LIVE_INTERVAL_S and not final):
            return
        self._live_at = now
        rows = []
        for unit, key in enumerate(keys):
            i, point = block.units[unit]
            values = [v for v in self.samples.get(key, []) if math.isfinite(v)]
            interval = median_ci(values) if len(values) >= 2 else None
            rows.append(LiveRow(f"{key[0]} {point_text(block.plans[i].points[point])}".removesuffix(" -"),
                                block.plans[i].workload.metrics[0].unit, len(values),
                                statistics.median(values) if values else math.nan,
                                interval.low if interval else math.nan, interval.high if interval else math.nan))
        describe = self.stop.describe
        show(LiveView(tuple(rows), describe() if describe is not None else None))

    def _should_stop(self, keys: list[tuple[str, str]]) -> bool:
        """After a complete round: does the stop rule or --max-time end the run?"""
        samples = {key: self.samples.get(key, []) for key in keys}
        rounds = min((len(v) for v in samples.values()), default=0)
        if rounds < self.stop.min_rounds:
            return False
        elapsed = time.monotonic() - self._started
        reason = self.stop.rule(samples) if self.stop.rule is not None else None
        if reason is None and self.stop.max_time_s is not None and elapsed >= self.stop.max_time_s:
            reason = f"--max-time {self.stop.max_time_s:g} s reached"
        if reason is None:
            return False
        self.stopped = {"reason": reason, "rounds": rounds, "elapsed_s": round(elapsed, 3), "at": time.time()}
        return True

    def _plan_state(self, run_plan: RunPlan) -> _PlanState:
        workload, options = run_plan.workload, run_plan.options
        if isinstance(workload, CommandWorkload) and run_plan.shell_overhead:
            workload.shell_overhead = run_plan.shell_overhead
        points = [Point(workload.benchmark, params) for params in run_plan.points]
        return _PlanState(run_plan, [self.store.point_id(point) for point in points],
                          [(point.benchmark, point.key) for point in points],
                          [point.describe() for point in points],
                          self._monitors_for(options.monitor_config()),
                          set(options.cpus) if options.cpus else None)

    def _hook(self, kind: str, line: str, params: dict[str, Any], streams: Streams,
              timeout: float | None = None) -> None:
        """A --setup/--prepare/--cleanup line, run where perflab started, not in the
        samples' cgroup: what it leaves running (a server a --setup starts) must outlive
        the samples, whose leftovers are killed."""
        if self._cgroups is not None:
            self._cgroups.leave()
        run_hook(kind, line, params, streams, timeout=timeout)

    @contextmanager
    def _session(self, workload: Workload) -> Iterator[None]:
        """The workload's session; what it starts (a server) in a cgroup of its own."""
        if self._cgroups is None:
            with workload.session():
                yield
            return
        group = self._cgroups.new("session")
        try:
            with contextlib.ExitStack() as stack:
                with self._cgroups.inside(group):
                    stack.enter_context(workload.session())
                yield
        finally:
            remove_tree(group)

    def _sample(self, run_id: int, state: _PlanState, task: plan.Task, streams: Streams,
                capture: CapturedOutput) -> None:
        run_plan, cpus = state.run_plan, state.cpus
        workload, options = run_plan.workload, run_plan.options
        params = run_plan.points[task.point]
        label = state.labels[task.point]
        if options.prepare:
            self._hook("prepare", options.prepare, params, streams)
        invocation = workload.invocation(params)
        timeouts = [t for t in (options.timeout, invocation.timeout) if t is not None]
        watched = [] if task.warmup else state.monitors
        sample = monitoring.SampleInfo(
            workload.benchmark, task.repetition,
            self._last_wall.get((workload.benchmark, task.point)) or monitoring.expected_duration(params))
        started = self._start_monitors(watched, sample)
        counters = self._outside.read()
        try:
            result = spawn_and_wait(invocation.executable, invocation.argv,
                                    streams=capture.streams() if invocation.capture else streams,
                                    env=invocation.env, cpus=cpus,
                                    timeout=min(timeouts) if timeouts else None,
                                    cgroups=self._cgroups)
        except BaseException:
            for monitor in started:
                monitor.abort()
            raise
        stalls = self._outside.since(counters)
        self._last_wall[(workload.benchmark, task.point)] = result.wall_s
        if task.warmup:
            self.progress.advance(f"{label} warm-up {task.repetition + 1}")
            return
        outputs = self._stop_monitors(started, sample, result)
        stdout, stderr = capture.read() if invocation.capture else ("", "")
        measurements = workload.measure(result, SampleContext(params, task.repetition, stdout, stderr))
        if options.metrics:
            # keep what the suite asked for; a failure row always stays, it says why
            measurements = [m for m in measurements
                            if m.metric in options.metrics or m.status is not SampleStatus.OK]
        if (workload.benchmark, task.point) not in self._point_warned:
            for text in workload.warnings(params, measurements):
                self._point_warned.add((workload.benchmark, task.point))
                self.warn(f"{workload.benchmark} {label}: {text}")
        primary = workload.metrics[0].name
        value = next((m.value for m in measurements if m.metric == primary
                      and m.status is SampleStatus.OK and m.value is not None), math.nan)
        self.samples.setdefault(state.keys[task.point], []).append(value)
        measurements += self._monitor_measurements(workload.benchmark, outputs)
        if math.isfinite(value):   # a failed sample says why it failed, nothing more
            measurements += [m for m in self._pressure_measurements(workload.benchmark, stalls)
                             if not options.metrics or m.metric in options.metrics]
        point_id = state.point_ids[task.point]
        self._pending.append(point_id, task.repetition, time.time(), measurements)
        self._store_monitor_files(run_id, point_id, task.repetition, outputs)
        if time.monotonic() - self._flushed_at >= FLUSH_INTERVAL_S:
            self._flush(run_id)
            self._flushed_at = time.monotonic()
        self.measured += 1
        bad = next((m for m in measurements if m.status is not SampleStatus.OK), None)
        if bad is not None:
            self.failures += 1
            if self.failures == 1:
                self.warn(f"sample failed at {workload.benchmark} {label}: {bad.note} "
                          f"(recorded as {bad.status.value}, not as a value)")
        self.progress.advance(f"{label} #{task.repetition + 1}")

    # -- monitors --------------------------------------------------------------------
    def _monitors_for(self, config: monitoring.MonitorConfig) -> list[monitoring.Monitor]:
        """The monitors that can work here, asked once per run (a suite's plans share them)."""
        if config not in self._monitor_sets:
            usable = []
            for monitor in monitoring.build(config):
                self._built_monitors.append(monitor)
                reason, notes = monitor.prepare()
                for note in notes:
                    self._warn_once(note)
                if reason:
                    self._warn_once(f"monitor {monitor.name} is off: {reason}; "
                                    "the benchmark runs without it")
                else:
                    usable.append(monitor)
            self._monitor_sets[config] = usable
        return self._monitor_sets[config]

    def _start_monitors(self, watched: list[monitoring.Monitor],
                        sample: monitoring.SampleInfo) -> list[monitoring.Monitor]:
        """Every start (slow), then every begin (quick), the last one right before the spawn."""
        started: list[monitoring.Monitor] = []
        try:
            for step in ("start", "begin"):
                ready, started = started if step == "begin" else watched, []
                for monitor in ready:
                    try:
                        if step == "start":
                            with self._in_monitor_cgroup():   # perf dies with perflab too
                                monitor.start(sample)
                        else:
                            monitor.begin(sample)
                    except monitoring.MonitorFailed as error:
                        self._switch_off(monitor, error)
                    else:
                        started.append(monitor)
        except BaseException:
            for monitor in watched:
                monitor.abort()
            raise
        return started

    @contextmanager
    def _in_monitor_cgroup(self) -> Iterator[None]:
        if self._cgroups is None:
            yield
            return
        if self._monitor_cgroup is None:
            self._monitor_cgroup = self._cgroups.new("monitors")
        with self._cgroups.inside(self._monitor_cgroup):
            yield

    def _stop_monitors(self, started: list[monitoring.Monitor], sample: monitoring.SampleInfo,
                       result) -> list[tuple[monitoring.Monitor, monitoring.MonitorOutput]]:
        """Every end (quick, in reverse), then every stop (collect and post-process)."""
        outputs = []
        try:
            ended = []
            for monitor in reversed(started):
                try:
                    monitor.end(sample)
                except monitoring.MonitorFailed as error:
                    self._switch_off(monitor, error)
                else:
                    ended.append(monitor)
            for monitor in ended:
                try:
                    outputs.append((monitor, monitor.stop(sample, result)))
                except monitoring.MonitorFailed as error:
                    self._switch_off(monitor, error)
        except BaseException:
            for monitor in started:
                monitor.abort()
            raise
        return outputs

    def _switch_off(self, monitor: monitoring.Monitor, error: monitoring.MonitorFailed) -> None:
        monitor.abort()
        for active in self._monitor_sets.values():
            if monitor in active:
                active.remove(monitor)
        self._warn_once(f"monitor {monitor.name} is off for the rest of the run: {error}; "
                        "the benchmark runs without it")

    def _monitor_measurements(self, benchmark: str, outputs) -> list[Measurement]:
        measurements, new_infos = [], []
        for monitor, output in outputs:
            for m in output.measurements:
                measurements.append(m)
                if (benchmark, m.metric) not in self._metric_infos:
                    self._metric_infos.add((benchmark, m.metric))
                    new_infos.append(monitor.metric_info(m.metric))
        if new_infos:
            self.store.when_reachable(lambda: self.store.save_metric_info(benchmark, new_infos),
                                      on_wait=self._warn_unreachable)
        return measurements

    def _pressure_measurements(self, benchmark: str, stalls: dict[str, float] | None) -> list[Measurement]:
        """The CPU µs used and the memory/I/O stall µs outside perflab's cgroups while the
        sample ran (execute/outside.py), and the window they cover (contention.py's
        denominator, the spawn included)."""
        if stalls is None:
            self._warn_once(f"the load outside the samples' cgroups is not measured ({self._outside.missing}): "
                            "samples are not checked for competing load")
            return []
        if (benchmark, outside.METRICS[0].name) not in self._metric_infos:
            self._metric_infos.update((benchmark, info.name) for info in outside.METRICS)
            self.store.when_reachable(lambda: self.store.save_metric_info(benchmark, outside.METRICS),
                                      on_wait=self._warn_unreachable)
        return [Measurement(name, value, "us") for name, value in stalls.items()]

    def _store_monitor_files(self, run_id: int, point_id: int, repetition: int, outputs) -> None:
        for monitor, output in outputs:
            for rows in output.profiles:
                self.store.add_profile(run_id, point_id, repetition, rows.event, rows.symbols,
                                       rows.traces)
            if monitor.name == "perf-profile" and not output.profiles:
                self._warn_once("perf-profile: a sample had no profile samples (too short for "
                                "--profile-freq?); its perf.data is kept")
            for kind, path in output.artifacts:
                self.store.add_artifact(run_id, point_id, repetition, kind, path)

    def _close_monitors(self) -> None:
        self._outside.close()
        for monitor in self._built_monitors:
            monitor.close()

    def _warn_once(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            self.warn(message)

    def _cleanup(self, run_plan: RunPlan, points: list[int], streams: Streams) -> None:
        cleanup = run_plan.options.cleanup
        if not cleanup:
            return
        for i in points:
            try:
                self._hook("cleanup", cleanup, run_plan.points[i], streams, timeout=CLEANUP_TIMEOUT_S)
            except UsageError as error:
                self.warn(str(error))


def monitor_overheads(options: RunOptions) -> dict[str, str]:
    """What each chosen monitor costs the measured numbers, in words (see Monitor.overhead)."""
    known = monitoring.known()
    return {name: known[name].overhead.format(profile_freq=options.profile_freq)
            for name in options.monitors or () if name in known and known[name].overhead}


def runs_spec(plans: list[RunPlan], command_line: list[str] | None = None) -> dict[str, Any]:
    """What a run stores of its plans: enough to rebuild them for --resume, and the
    perflab command line that asked for it (for reports: "to reproduce")."""
    spec: dict[str, Any] = {"plans": [p.spec() for p in plans], "interleaved": interleaved(plans)}
    if command_line:
        spec["command_line"] = command_line
    return spec


def plans_from_spec(spec: dict[str, Any]) -> list[RunPlan]:
    if "plans" not in spec:
        source = f" from {spec['file']}" if spec.get("file") else ""
        raise UsageError(f"this run was imported{source}: there is nothing to resume")
    return [RunPlan.from_spec(p) for p in spec["plans"]]


@contextmanager
def _streams(show_output: bool) -> Iterator[Streams]:
    """The benchmark's stdio: /dev/null (as hyperfine), or ours with --show-output."""
    if show_output:
        yield Streams(stdin=0, stdout=1, stderr=2)
        return
    streams = open_devnull_streams()
    try:
        yield streams
    finally:
        for fd in {streams.stdin, streams.stdout, streams.stderr}:
            os.close(fd)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, told apart from Ctrl-C only for the exit code (143, not 130)."""


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM stops a run as Ctrl-C does: children killed, samples kept, run marked."""
    def handler(signum: int, frame: object) -> None:
        raise _Terminated

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _cpu_list(cpus: set[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))
