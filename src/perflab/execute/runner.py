"""The scheduler of a run: rounds, their order and the stop rule, over the sample executor.

Everything a user can get wrong is checked while planning (execute/run_plan.py) before the
database is touched. ``Runner`` then has each sample taken (execute/sample.py), writes it
to the run's pending file the moment it is measured (one write; see store/pending.py)
and moves them into the database once a second, so a SIGKILL loses at most the sample in
flight and ``--resume`` can finish the rest.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Protocol

from perflab.execute import environment, plan, settle
from perflab.execute import monitors as monitoring
from perflab.execute.process import CapturedOutput, Streams, open_devnull_streams
from perflab.execute.run_plan import RunPlan, interleaved, measure_shell_overhead
from perflab.execute.sample import SampleExecutor, Taken
from perflab.model.errors import EnvironmentProblem, RunInterrupted, UsageError
from perflab.model.params import point_text
from perflab.model.records import MetricInfo, Point, RunInfo, RunStatus, SampleStatus
from perflab.model.report.live import LiveRow, LiveView
from perflab.model.run_request import RunRequest, Stopped
from perflab.stats.intervals import median_ci
from perflab.store import Store, this_host
from perflab.store.failures import is_disk_full
from perflab.store.pending import count as pending_count
from perflab.workloads.command import CommandWorkload

CLEANUP_TIMEOUT_S = 60.0
FLUSH_INTERVAL_S = 1.0  # pending samples reach the database at least this often


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
    metric: str | None = None   # the metric the rule sees (None: each benchmark's primary one)


@dataclass
class _Block:
    """Plans that run together: their (plan, point) units alternate round by round."""

    plans: list[RunPlan]
    units: list[tuple[int, int]]            # unit index -> (plan index, point index)
    tasks: plan.Schedule                    # task.point is a unit index

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


class Progress(Protocol):
    def start(self, total: int, title: str) -> None: ...
    def advance(self, description: str) -> None: ...
    def stop(self) -> None: ...


LIVE_INTERVAL_S = 0.1   # the live view's numbers are recomputed at most this often


class Runner:
    """Runs plans (one per benchmark; a suite has several) into one run of the store."""

    def __init__(self, store: Store, plans: list[RunPlan], progress: Progress,
                 warn: Callable[[str], None], stop: StopLimits | None = None):
        self.store = store
        self.plans = plans
        self.stop = stop or StopLimits()
        self.samples: Samples = {}
        self.stopped: Stopped | None = None   # why and when the run ended early
        self.progress = progress
        self.warn = warn
        self.failures = 0
        self.measured = 0
        self._warned: set[str] = set()
        self.executor = SampleExecutor(warn, self._warn_once, self._describe)

    def start(self, request: RunRequest) -> int:
        """Record a new run of ``request`` (its identity resolved: execute.record does it)."""
        snapshot = environment.capture()
        with _streams(self._show_output) as streams:
            overheads: dict[str, tuple[float, float, float]] = {}
            for run_plan in self.plans:
                shell = run_plan.workload.shell if isinstance(run_plan.workload, CommandWorkload) else None
                if shell:
                    if shell not in overheads:
                        overheads[shell] = measure_shell_overhead(streams, shell)
                    run_plan.shell_overhead = overheads[shell]
            me = request.identity
            stored = replace(request, plans=tuple(p.record() for p in self.plans),
                             interleaved=interleaved(self.plans))
            run_id = self.store.runs.create(
                label=me.label or "", host=this_host(), request=stored, environment=snapshot,
                commit=me.commit, commit_describe=me.describe, repo=me.repo, job_id=me.job_id)
            for run_plan in self.plans:
                self.store.metrics.save(run_plan.workload.benchmark, run_plan.workload.metrics)
            self._execute(run_id, self._work(set()), streams, snapshot)
        return run_id

    def resume(self, run: RunInfo) -> int:
        if run.status is RunStatus.COMPLETE:
            raise UsageError(f"run {run.id} is already complete")
        if run.status is RunStatus.RUNNING:
            raise UsageError(f"run {run.id} is still running (perflab pid {run.pid})")
        work = self._work(self.store.samples.done_repetitions(run.id))
        self._load_samples(run.id)
        self.store.runs.set_status(run.id, RunStatus.RUNNING, finished=False)
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
            unit_of = {block.key(unit): unit for unit in range(len(units))}
            done = {(unit_of[(b, p)], rep) for b, p, rep in recorded if (b, p) in unit_of}
            block.tasks = plan.remaining(block.tasks, done)
            blocks.append(block)
        return blocks

    def _load_samples(self, run_id: int) -> None:
        """The primary values a resumed run already has, for its stop rule."""
        primary = {p.workload.benchmark: self.stop.metric or p.workload.metrics[0].name for p in self.plans}
        rows = self.store.samples.rows(run_id)
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
        self._pending = self.store.pending.open(run_id)
        self._flushed_at = time.monotonic()
        self.executor.open()
        settled = 0.0
        full = False
        try:
            with _terminate_as_interrupt():
                settled = settle.settle(self.plans[0].options.settle)
                for block in work:
                    if block.tasks and not self._execute_block(run_id, block, streams, capture):
                        break
                status = RunStatus.COMPLETE
        except KeyboardInterrupt as stop:
            status = RunStatus.INTERRUPTED
            raise RunInterrupted(run_id, self.measured,
                                 terminated=isinstance(stop, _Terminated)) from None
        except Exception as error:
            if not is_disk_full(error, self.store.target):
                raise
            full = True   # said in the finally, once the samples' processes are gone
        finally:
            capture.close()
            self.executor.close()
            self.progress.stop()
            settle.run_ended()
            if not full:
                snapshot = dict(snapshot, loadavg_end=environment.read_loadavg(), settle_s=round(settled, 3))
                full = self._finish(run_id, status, snapshot)
            if full:
                raise self._kept_for_resume(run_id) from None

    def _finish(self, run_id: int, status: RunStatus, snapshot: dict[str, Any]) -> bool:
        """The last samples in, the run's end written; False when the disk filled first."""
        try:
            # a PostgreSQL store that went away: wait for it (bounded) rather than lose the end
            self.store.when_reachable(lambda: self.store.pending.flush(run_id, self._pending),
                                      on_wait=self._warn_unreachable)
            if self.stopped is not None:
                stopped = self.stopped
                self.store.when_reachable(
                    lambda: self.store.runs.update_request(run_id, lambda r: replace(r, stopped=stopped)))
            if status is RunStatus.COMPLETE and self.measured and self.failures == self.measured:
                status = RunStatus.FAILED
            final = status
            self.store.when_reachable(lambda: self.store.runs.set_status(run_id, final, environment=snapshot))
            self.store.when_reachable(lambda: self.store.series.seal(run_id))
        except Exception as error:
            if not is_disk_full(error, self.store.target):
                self._pending.close()
                raise
            return True
        self._pending.close()
        self._pending.path.unlink(missing_ok=True)
        return False

    def _kept_for_resume(self, run_id: int) -> EnvironmentProblem:
        """The disk filled: the pending file keeps every sample the database has not (its
        transaction rolled back), for `run --resume` once there is space."""
        self._pending.close()
        self.store.reconnect()   # the failed transaction's connection: rolled back, dropped
        path = self._pending.path
        kept = pending_count(path)
        where = f"{kept} samples kept in {path}" if kept else "every sample is in the database"
        return EnvironmentProblem(f"disk full: {where}; free space and `perflab run --resume {run_id}`")

    def _flush(self, run_id: int) -> None:
        """Move the pending samples in; while a PostgreSQL store is away they stay in the
        pending file (written already) and move in at a later flush."""
        if not self.store.pending.flush_if_reachable(run_id, self._pending):
            self._warn_unreachable()

    def _warn_unreachable(self) -> None:
        self._warn_once("the database does not answer: samples wait in the run's pending file "
                        "and move in when it is back")

    def _execute_block(self, run_id: int, block: _Block, streams: Streams,
                       capture: CapturedOutput) -> bool:
        """Run one block's tasks; False when the stop limits ended the run."""
        active = block.tasks.busy()
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
                        sessions.enter_context(self.executor.session(run_plan.workload))
                        if run_plan.options.setup:
                            for point in active_points[i]:
                                self.executor.hook("setup", run_plan.options.setup, run_plan.points[point],
                                                   streams)
                for task, following in plan.with_next(block.tasks):
                    i, point = block.units[task.point]
                    self._sample(run_id, states[i], plan.Task(point, task.repetition, task.warmup),
                                 streams, capture)
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
            rows.append(LiveRow(name=f"{key[0]} {point_text(block.plans[i].points[point])}".removesuffix(" -"),
                                unit=block.plans[i].workload.metrics[0].unit, n=len(values),
                                median=statistics.median(values) if values else math.nan,
                                ci_low=interval.low if interval else math.nan,
                                ci_high=interval.high if interval else math.nan))
        describe = self.stop.describe
        show(LiveView(rows=tuple(rows), decision=describe() if describe is not None else None))

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
        self.stopped = Stopped(reason=reason, rounds=rounds, elapsed_s=round(elapsed, 3), at=time.time())
        return True

    def _plan_state(self, run_plan: RunPlan) -> _PlanState:
        workload = run_plan.workload
        if isinstance(workload, CommandWorkload) and run_plan.shell_overhead:
            workload.shell_overhead = run_plan.shell_overhead
        points = [Point(workload.benchmark, params) for params in run_plan.points]
        return _PlanState(run_plan, [self.store.samples.point_id(point) for point in points],
                          [(point.benchmark, point.key) for point in points],
                          [point.describe() for point in points],
                          self.executor.monitors.usable(run_plan.options))

    def _rule_value(self, taken: Taken) -> float:
        """What the stop rule sees of a sample: its primary value, or its ``stop.metric``'s."""
        if self.stop.metric is None:
            return float(taken.value)
        return next((float(m.value) for m in taken.measurements if m.metric == self.stop.metric
                     and m.status is SampleStatus.OK and m.value is not None), math.nan)

    def _sample(self, run_id: int, state: _PlanState, task: plan.Task, streams: Streams,
                capture: CapturedOutput) -> None:
        """One sample taken by the executor, kept in the pending file and the stop rule's values."""
        label = state.labels[task.point]
        taken = self.executor.take(state.run_plan, task.point, task.repetition, warmup=task.warmup, label=label,
                                   watched=state.monitors, streams=streams, capture=capture)
        if taken is None:
            self.progress.advance(f"{label} warm-up {task.repetition + 1}")
            return
        self.samples.setdefault(state.keys[task.point], []).append(self._rule_value(taken))
        point_id = state.point_ids[task.point]
        self._pending.append(point_id, task.repetition, time.time(), taken.measurements)
        self._store_monitor_files(run_id, point_id, task.repetition, taken)
        if time.monotonic() - self._flushed_at >= FLUSH_INTERVAL_S:
            self._flush(run_id)
            self._flushed_at = time.monotonic()
        self.measured += 1
        bad = taken.failure()
        if bad is not None:
            self.failures += 1
            if self.failures == 1:
                self.warn(f"sample failed at {state.run_plan.workload.benchmark} {label}: {bad.note} "
                          f"(recorded as {bad.status.value}, not as a value)")
        self.progress.advance(f"{label} #{task.repetition + 1}")

    def _describe(self, benchmark: str, infos: Sequence[MetricInfo]) -> None:
        """Metric metadata of a monitor's or PSI's metrics, the first time a benchmark has them."""
        self.store.when_reachable(lambda: self.store.metrics.save(benchmark, infos),
                                  on_wait=self._warn_unreachable)

    def _store_monitor_files(self, run_id: int, point_id: int, repetition: int, taken: Taken) -> None:
        for monitor, output in taken.outputs:
            for rows in output.profiles:
                self.store.profiles.add(run_id, point_id, repetition, rows.event, rows.symbols,
                                        rows.traces)
            if monitor.name == "perf-profile" and not output.profiles:
                self._warn_once("perf-profile: a sample had no profile samples (too short for "
                                "--profile-freq?); its perf.data is kept")
            for kind, path in output.artifacts:
                self.store.artifacts.add(run_id, point_id, repetition, kind, path)

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
                self.executor.hook("cleanup", cleanup, run_plan.points[i], streams, timeout=CLEANUP_TIMEOUT_S)
            except UsageError as error:
                self.warn(str(error))


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
