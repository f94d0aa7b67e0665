"""Monitors that read kernel counters from /proc before and after a sample, and rusage.

Each stores the deltas of counters over the sample. Gauges are left out (vmstat's
``nr_*`` fields, /proc/stat's ``procs_running``): a gauge's value at one instant says
little about the sample. To keep reports readable a field is stored from the first
sample in which it moved, and from then on in every later sample of the same benchmark
in this run (zeros included), so its series has no holes after it first appears.
"""

from __future__ import annotations

import os
from pathlib import Path

from perflab.execute.monitors.base import Monitor, MonitorFailed, MonitorOutput, SampleInfo, register
from perflab.model.records import Direction, Measurement, MetricInfo, ProcessResult
from perflab.model.run_request import MonitorOptions

NOISE_FLOOR = 0.05   # lkp-tests: 5% for statistics that are not the performance metric
USER_HZ = os.sysconf("SC_CLK_TCK")


def _info(name: str, unit: str, description: str) -> MetricInfo:
    return MetricInfo(name, unit, Direction.LOWER, NOISE_FLOOR, description)


class DeltaMonitor(Monitor):
    """Reads a file of counters at start and stop; stores the deltas that moved."""

    path: str
    unit = "count"

    def __init__(self, config: MonitorOptions):
        super().__init__(config)
        self._before: dict[str, float] = {}
        self._moved: dict[str, set[str]] = {}   # benchmark -> fields that moved so far

    def prepare(self) -> tuple[str | None, list[str]]:
        try:
            self.read()
        except OSError as error:
            return f"cannot read {self.path}: {error.strerror}{self.missing_hint}", []
        return None, []

    missing_hint = ""

    def read(self) -> dict[str, float]:
        return self.parse(Path(self.path).read_text())

    @staticmethod
    def parse(text: str) -> dict[str, float]:
        raise NotImplementedError

    def begin(self, sample: SampleInfo) -> None:
        self._before = self._read_or_fail()

    def end(self, sample: SampleInfo) -> None:
        self._after = self._read_or_fail()

    def stop(self, sample: SampleInfo, result: ProcessResult) -> MonitorOutput:
        after = self._after
        moved = self._moved.setdefault(sample.benchmark, set())
        deltas = {}
        for key, value in after.items():
            delta = round(value - self._before.get(key, value), 9)   # no float dust from tick sums
            if delta or key in moved:
                moved.add(key)
                deltas[key] = delta
        return MonitorOutput([Measurement(f"{self.name}.{key}", value, self.unit_of(key))
                              for key, value in sorted(deltas.items())])

    def _read_or_fail(self) -> dict[str, float]:
        try:
            return self.read()
        except OSError as error:
            raise MonitorFailed(f"cannot read {self.path}: {error.strerror}") from None

    def unit_of(self, key: str) -> str:
        return self.unit

    def metric_info(self, metric: str) -> MetricInfo:
        key = metric.removeprefix(f"{self.name}.")
        return _info(metric, self.unit_of(key), f"{self.description}: {key}, change over the sample")


@register
class VmstatMonitor(DeltaMonitor):
    name = "vmstat"
    description = "/proc/vmstat event counters"
    path = "/proc/vmstat"

    @staticmethod
    def parse(text: str) -> dict[str, float]:
        out = {}
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key and not key.startswith("nr_"):   # nr_* are gauges (pages now), not events
                out[key] = float(value)
        return out


@register
class ProcStatMonitor(DeltaMonitor):
    name = "proc-stat"
    description = "/proc/stat"
    path = "/proc/stat"
    CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
                  "guest", "guest_nice")
    SOFTIRQS = ("hi", "timer", "net_tx", "net_rx", "block", "irq_poll", "tasklet", "sched",
                "hrtimer", "rcu")

    @classmethod
    def parse(cls, text: str) -> dict[str, float]:
        """All-CPU times (s), context switches, forks, interrupts and softirqs by kind."""
        out: dict[str, float] = {}
        for line in text.splitlines():
            words = line.split()
            if not words:
                continue
            head, values = words[0], words[1:]
            if head == "cpu":
                for name, ticks in zip(cls.CPU_FIELDS, values):
                    out[f"cpu.{name}"] = int(ticks) / USER_HZ
            elif head in ("ctxt", "processes"):
                out[head] = float(values[0])
            elif head == "intr":
                out["intr"] = float(values[0])
            elif head == "softirq":
                out["softirq"] = float(values[0])
                for name, count in zip(cls.SOFTIRQS, values[1:]):
                    out[f"softirq.{name}"] = float(count)
        return out

    def unit_of(self, key: str) -> str:
        return "s" if key.startswith("cpu.") else "count"


@register
class SchedstatMonitor(DeltaMonitor):
    name = "schedstat"
    description = "/proc/schedstat, summed over CPUs"
    path = "/proc/schedstat"
    missing_hint = " (the kernel lacks CONFIG_SCHEDSTATS)"
    # per-CPU fields of schedstat version 15 and later, after the two legacy ones
    FIELDS = ("sched_count", "sched_goidle", "ttwu_count", "ttwu_local", "run_time",
              "run_delay", "timeslices")

    @classmethod
    def parse(cls, text: str) -> dict[str, float]:
        out = dict.fromkeys(cls.FIELDS, 0.0)
        for line in text.splitlines():
            words = line.split()
            if words and words[0] == "version" and int(words[1]) < 15:
                raise OSError(0, f"schedstat version {words[1]} is not supported (15+ is)")
            if words and words[0].startswith("cpu") and len(words) >= 10:
                for name, value in zip(cls.FIELDS, words[3:10]):
                    out[name] += int(value)
        out["run_time"] /= 1e9    # ns -> s
        out["run_delay"] /= 1e9
        return out

    def unit_of(self, key: str) -> str:
        return "s" if key in ("run_time", "run_delay") else "count"


@register
class InterruptsMonitor(DeltaMonitor):
    name = "interrupts"
    description = "/proc/interrupts, summed over CPUs"
    path = "/proc/interrupts"

    @staticmethod
    def parse(text: str) -> dict[str, float]:
        """``LOC``, ``RES``... by name; numbered IRQs as ``<n>:<device>``."""
        lines = text.splitlines()
        if not lines:
            return {}
        ncpus = len(lines[0].split())
        out = {}
        for line in lines[1:]:
            irq, _, rest = line.partition(":")
            words = rest.split()
            counts = []
            for word in words[:ncpus]:
                if not word.isdigit():
                    break
                counts.append(int(word))
            irq = irq.strip()
            if not counts:
                continue
            device = words[len(counts):]
            key = f"{irq}:{device[-1]}" if irq.isdigit() and device else irq
            out[key] = float(sum(counts))
        return out


@register
class RusageMonitor(Monitor):
    name = "rusage"
    description = "the benchmark's rusage (wait4)"
    FIELDS = {"minflt": "page faults served without I/O",
              "majflt": "page faults that needed I/O",
              "nvcsw": "voluntary context switches",
              "nivcsw": "involuntary context switches",
              "inblock": "block input operations",
              "oublock": "block output operations"}

    def stop(self, sample: SampleInfo, result: ProcessResult) -> MonitorOutput:
        return MonitorOutput([Measurement(f"rusage.{name}", float(getattr(result, name)), "count")
                              for name in self.FIELDS])

    def metric_info(self, metric: str) -> MetricInfo:
        key = metric.removeprefix("rusage.")
        return _info(metric, "count", f"{self.FIELDS.get(key, key)} of the benchmark (rusage)")
