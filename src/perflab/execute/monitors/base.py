"""What a monitor is: the Monitor interface, its configuration and output, and the registry
that ``@register`` fills (perf.py and procfs.py register theirs; execute/monitors/__init__.py
reads it)."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from perflab.model.records import MONITOR_HOMES, Measurement, MetricInfo, ProcessResult
from perflab.model.run_request import MonitorOptions


class MonitorFailed(Exception):
    """A monitor cannot go on; the message says why (shown once, as a warning)."""


@dataclass(frozen=True)
class SampleInfo:
    """What a monitor knows of the sample it watches."""

    benchmark: str
    repetition: int
    expected_s: float | None   # how long the sample should take, when known (for windows)


@dataclass
class ProfileRows:
    """One sample's profile of one event, as store.profiles.add takes it."""

    event: str
    symbols: list[tuple[str, float, float]]
    traces: list[tuple[str, str, float]]


@dataclass
class MonitorOutput:
    measurements: list[Measurement] = field(default_factory=list)
    profiles: list[ProfileRows] = field(default_factory=list)
    artifacts: list[tuple[str, Path]] = field(default_factory=list)   # (kind, file to keep)


class Monitor(abc.ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    # What watching costs the measured numbers, as `perflab show` states it ("" = nothing
    # measurable); may name {profile_freq}.
    overhead: ClassVar[str] = ""

    def __init__(self, config: MonitorOptions):
        self.config = config

    def prepare(self) -> tuple[str | None, list[str]]:
        """Once per run: (why this monitor cannot work here or None, notes to show once)."""
        return None, []

    def start(self, sample: SampleInfo) -> None:
        """Before the sample: the slow part of setting up (start perf), nothing counted yet."""

    def begin(self, sample: SampleInfo) -> None:
        """Right before the spawn: start counting. Must be quick (every monitor's begin runs
        after every monitor's start, so none counts another one's start-up)."""

    def end(self, sample: SampleInfo) -> None:
        """Right after the reap: stop counting. Quick, as begin."""

    @abc.abstractmethod
    def stop(self, sample: SampleInfo, result: ProcessResult) -> MonitorOutput:
        """After every monitor's end: collect and post-process (also after a failed sample)."""

    def abort(self) -> None:
        """Stop anything still running (after an error or Ctrl-C between start and stop)."""

    def close(self) -> None:
        """End of the run: remove temporary files."""

    @abc.abstractmethod
    def metric_info(self, metric: str) -> MetricInfo:
        """What one of this monitor's metrics means (unit, direction, noise floor)."""


# -- the registry: every monitor by name, in the order they start (perf ones first) ----------
_REGISTRY: dict[str, type[Monitor]] = {}


def register(cls: type[Monitor]) -> type[Monitor]:
    """Class decorator: make a monitor known by its ``name`` (listed in model.records.MONITOR_HOMES)."""
    if cls.name in _REGISTRY or cls.name not in MONITOR_HOMES:
        raise ValueError(f"monitor {cls.name!r} registered twice or missing from model.records.MONITOR_HOMES")
    _REGISTRY[cls.name] = cls
    return cls
