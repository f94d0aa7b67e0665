"""The monitors of one run behind one start/stop interface (see execute/monitors).

``start`` runs every monitor's ``start`` (slow set-up, in the monitors' cgroup), then every
``begin`` (quick), the last right before the spawn; ``stop`` runs every ``end`` (in
reverse), then every ``stop`` (collect). A monitor that fails is switched off for the rest
of the run with one warning; on any other error every started monitor is aborted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from perflab.execute import monitors as monitoring
from perflab.execute.cgroups import RunCgroups
from perflab.model.records import ProcessResult

Outputs = list[tuple[monitoring.Monitor, monitoring.MonitorOutput]]


class MonitorSet:
    """Builds each configuration's monitors once per run and runs them around samples."""

    def __init__(self, warn_once: Callable[[str], None]):
        self._warn_once = warn_once
        # the monitors of each options (lists inside: compared with monitoring.alike, not hashed)
        self._sets: list[tuple[monitoring.MonitorOptions, list[monitoring.Monitor]]] = []
        self._built: list[monitoring.Monitor] = []   # closed at the end, even if switched off
        self._cgroups: RunCgroups | None = None
        self._cgroup: Path | None = None   # where monitors start perf (see cgroups.py)

    def use_cgroups(self, cgroups: RunCgroups | None) -> None:
        """The run's cgroups: perf started there dies with perflab too."""
        self._cgroups, self._cgroup = cgroups, None

    def usable(self, options: monitoring.MonitorOptions) -> list[monitoring.Monitor]:
        """The monitors that can work here, asked once per run (a suite's plans share them)."""
        for known, monitors in self._sets:
            if monitoring.alike(known, options):
                return monitors
        usable = []
        for monitor in monitoring.build(options):
            self._built.append(monitor)
            reason, notes = monitor.prepare()
            for note in notes:
                self._warn_once(note)
            if reason:
                self._warn_once(f"monitor {monitor.name} is off: {reason}; the benchmark runs without it")
            else:
                usable.append(monitor)
        self._sets.append((options, usable))
        return usable

    def start(self, watched: list[monitoring.Monitor], sample: monitoring.SampleInfo) -> list[monitoring.Monitor]:
        """Every start (slow), then every begin (quick): the monitors that are on."""
        started: list[monitoring.Monitor] = []
        try:
            for step in ("start", "begin"):
                ready, started = started if step == "begin" else watched, []
                for monitor in ready:
                    try:
                        if step == "start":
                            with self._in_cgroup():
                                monitor.start(sample)
                        else:
                            monitor.begin(sample)
                    except monitoring.MonitorFailed as error:
                        self._switch_off(monitor, error)
                    else:
                        started.append(monitor)
        except BaseException:
            self.abort(watched)
            raise
        return started

    def stop(self, started: list[monitoring.Monitor], sample: monitoring.SampleInfo,
             result: ProcessResult) -> Outputs:
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
            self.abort(started)
            raise
        return outputs

    @staticmethod
    def abort(monitors: list[monitoring.Monitor]) -> None:
        for monitor in monitors:
            monitor.abort()

    def close(self) -> None:
        for monitor in self._built:
            monitor.close()

    @contextmanager
    def _in_cgroup(self) -> Iterator[None]:
        if self._cgroups is None:
            yield
            return
        if self._cgroup is None:
            self._cgroup = self._cgroups.new("monitors")
        with self._cgroups.inside(self._cgroup):
            yield

    def _switch_off(self, monitor: monitoring.Monitor, error: monitoring.MonitorFailed) -> None:
        monitor.abort()
        for _, active in self._sets:
            if monitor in active:
                active.remove(monitor)
        self._warn_once(f"monitor {monitor.name} is off for the rest of the run: {error}; "
                        "the benchmark runs without it")
