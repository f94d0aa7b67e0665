"""The sample executor: one sample of one point, spawned and timed in the sample's own
cgroup, with the run's monitors around it and the load outside perflab's cgroups it met.

It knows nothing of rounds, order or stop rules (execute/runner.py schedules); it returns
a sample's measurements and leaves storing them to the scheduler. Hooks (--setup,
--prepare, --conclude, --cleanup) and a workload's session run outside the samples' cgroup.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from perflab.execute import monitors as monitoring
from perflab.execute import outside
from perflab.execute.cgroups import RunCgroups, remove_tree
from perflab.execute.hooks import run_hook
from perflab.execute.monitor_set import MonitorSet, Outputs
from perflab.execute.process import CapturedOutput, GroupJanitor, Streams, spawn_and_wait
from perflab.execute.run_plan import RunPlan
from perflab.model.errors import PerflabError
from perflab.model.records import Measurement, MetricInfo, SampleStatus
from perflab.workloads.base import SampleContext, Workload

Describe = Callable[[str, Sequence[MetricInfo]], None]   # new metrics of a benchmark, for the store


@dataclass(frozen=True)
class Taken:
    """A measured sample: its rows, its primary value (NaN when it failed) and the monitors'
    outputs (profiles, files) for the store."""

    measurements: list[Measurement]
    value: float
    outputs: Outputs

    def failure(self) -> Measurement | None:
        return next((m for m in self.measurements if m.status is not SampleStatus.OK), None)


class SampleExecutor:
    """Spawn, cgroup, clock, outside load and monitors of every sample of one run."""

    def __init__(self, warn: Callable[[str], None], warn_once: Callable[[str], None], describe: Describe):
        self.warn, self._warn_once, self._describe = warn, warn_once, describe
        self.monitors = MonitorSet(warn_once)
        self._outside = outside.Reader(None)   # the load outside perflab's cgroups, once they exist
        self._cgroups: RunCgroups | None = None
        self._guards = contextlib.ExitStack()
        self._described: set[tuple[str, str]] = set()        # (benchmark, metric) described so far
        self._last_wall: dict[tuple[str, int], float] = {}   # (benchmark, point) -> last wall time
        self._point_warned: set[tuple[str, int]] = set()     # a workload's warning, once per point
        self._read_token: int | None = None   # cgroups' stay_token at the last outside reading

    def open(self) -> None:
        """The run's cgroups (a warning when there are none)."""
        self._cgroups, reason = RunCgroups.create()
        self.monitors.use_cgroups(self._cgroups)
        self._outside.close()
        self._outside = outside.Reader(self._cgroups.base if self._cgroups is not None else None)
        if reason:
            self._warn_once(f"samples run without a cgroup of their own ({reason}): a sample's "
                            "process dies with perflab and its process group is killed, but a "
                            "process that leaves the group (setsid, a daemon) or runs a set-user-ID "
                            "program can outlive a timeout or a kill of perflab")
            self._guards.enter_context(GroupJanitor.running(self._deathsig_shim()))

    def _deathsig_shim(self) -> str | None:
        """The shim that makes a sample die with perflab (no cgroups), built on first use."""
        from perflab.workloads import native
        try:
            return native.binary("deathsig")
        except PerflabError as error:
            self._warn_once(f"a sample's process may outlive perflab's death: cannot build its guard ({error})")
            return None

    def close(self) -> None:
        self._outside.close()
        self.monitors.close()
        if self._cgroups is not None:
            self._cgroups.close()
        self._guards.close()   # the group janitor, without cgroups

    def hook(self, kind: str, line: str, params: dict[str, Any], streams: Streams,
             timeout: float | None = None) -> None:
        """A --setup/--prepare/--conclude/--cleanup line, run where perflab started, not in the
        samples' cgroup: what it leaves running (a server a --setup starts) must outlive
        the samples, whose leftovers are killed."""
        if self._cgroups is not None:
            self._cgroups.leave()
        run_hook(kind, line, params, streams, timeout=timeout)

    @contextmanager
    def session(self, workload: Workload) -> Iterator[None]:
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

    def take(self, run_plan: RunPlan, point: int, repetition: int, *, warmup: bool, label: str,
             watched: list[monitoring.Monitor], streams: Streams, capture: CapturedOutput) -> Taken | None:
        """Run one sample (its --prepare before, --conclude after); None for a warm-up (nothing is kept)."""
        workload, options = run_plan.workload, run_plan.options
        params = run_plan.points[point]
        if options.prepare:
            self.hook("prepare", options.prepare, params, streams)
        invocation = workload.invocation(params)
        timeouts = [t for t in (options.timeout, invocation.timeout) if t is not None]
        sample = monitoring.SampleInfo(
            workload.benchmark, repetition,
            self._last_wall.get((workload.benchmark, point)) or monitoring.expected_duration(params))
        started = self.monitors.start([] if warmup else watched, sample)
        token = self._cgroups.stay_token() if self._cgroups is not None else None
        counters = self._outside.begin(chained=token is not None and token == self._read_token)
        try:
            result = spawn_and_wait(invocation.executable, invocation.argv,
                                    streams=capture.streams() if invocation.capture else streams,
                                    env=invocation.env, cpus=set(options.cpus) if options.cpus else None,
                                    timeout=min(timeouts) if timeouts else None, cgroups=self._cgroups)
        except BaseException:
            self.monitors.abort(started)
            raise
        stalls = self._outside.since(counters)
        self._read_token = self._cgroups.stay_token() if self._cgroups is not None else None
        if options.conclude:
            self.hook("conclude", options.conclude, params, streams)
        self._last_wall[(workload.benchmark, point)] = result.wall_s
        if warmup:
            return None
        outputs = self.monitors.stop(started, sample, result)
        stdout, stderr = capture.read() if invocation.capture else ("", "")
        measurements = workload.measure(result, SampleContext(params, repetition, stdout, stderr))
        if options.metrics:
            # keep what the suite asked for; a failure row always stays, it says why
            measurements = [m for m in measurements
                            if m.metric in options.metrics or m.status is not SampleStatus.OK]
        self._warn_of_point(workload, point, label, params, measurements)
        primary = workload.metrics[0].name
        value = next((m.value for m in measurements if m.metric == primary
                      and m.status is SampleStatus.OK and m.value is not None), math.nan)
        measurements += self._monitor_measurements(workload.benchmark, outputs)
        if math.isfinite(value):   # a failed sample says why it failed, nothing more
            measurements += [m for m in self._pressure_measurements(workload.benchmark, stalls)
                             if not options.metrics or m.metric in options.metrics]
        return Taken(measurements, value, outputs)

    def _warn_of_point(self, workload: Workload, point: int, label: str, params: dict[str, Any],
                       measurements: list[Measurement]) -> None:
        if (workload.benchmark, point) not in self._point_warned:
            for text in workload.warnings(params, measurements):
                self._point_warned.add((workload.benchmark, point))
                self.warn(f"{workload.benchmark} {label}: {text}")

    def _monitor_measurements(self, benchmark: str, outputs: Outputs) -> list[Measurement]:
        measurements, new_infos = [], []
        for monitor, output in outputs:
            for m in output.measurements:
                measurements.append(m)
                if (benchmark, m.metric) not in self._described:
                    self._described.add((benchmark, m.metric))
                    new_infos.append(monitor.metric_info(m.metric))
        if new_infos:
            self._describe(benchmark, new_infos)
        return measurements

    def _pressure_measurements(self, benchmark: str, stalls: dict[str, float] | None) -> list[Measurement]:
        """The CPU µs used and the memory/I/O stall µs outside perflab's cgroups while the
        sample ran (execute/outside.py), and the window they cover (contention.py's
        denominator, the spawn included)."""
        if stalls is None:
            self._warn_once(f"the load outside the samples' cgroups is not measured ({self._outside.missing}): "
                            "samples are not checked for competing load")
            return []
        if (benchmark, outside.METRICS[0].name) not in self._described:
            self._described.update((benchmark, info.name) for info in outside.METRICS)
            self._describe(benchmark, outside.METRICS)
        return [Measurement(name, value, "us") for name, value in stalls.items()]
