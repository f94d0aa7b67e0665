"""Monitors: what else happened on the machine while one sample ran.

Around each measured sample the runner calls every monitor's ``start`` (slow set-up),
then every ``begin`` (switch counting on), spawns and reaps the process, then every
``end`` (switch counting off) and every ``stop`` (collect, post-process). So nothing a
monitor does lands inside the sample's clock, and no monitor counts another's set-up. It returns metrics named
``<monitor>.<name>`` (model.records.MONITOR_METRIC_PREFIXES), and may return profile
rows and files to keep (perf.data).

The runner asks each monitor once per run whether it can work here; one that cannot (no
perf, no permission, an event perf rejects) is reported once with the reason and left
out, and the benchmark runs as usual. A monitor that fails in the middle of a run raises
:class:`MonitorFailed`: it is reported once and switched off for the rest of the run.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from perflab.model.errors import UsageError
from perflab.model.records import Measurement, MetricInfo, ProcessResult

PROFILE_FREQ_HZ = 800        # lkp-tests' perf-profile default: comparable with robot reports, cheap
CALL_GRAPHS = ("fp", "dwarf")
PROFILE_SCOPES = ("system", "process")


class MonitorFailed(Exception):
    """A monitor cannot go on; the message says why (shown once, as a warning)."""


@dataclass(frozen=True)
class MonitorConfig:
    """The user's monitor choices (also what perflab stores in the run spec)."""

    names: tuple[str, ...] = ()
    events: tuple[str, ...] | None = None     # perf-stat --events; None: the default choice
    profile_freq: int = PROFILE_FREQ_HZ
    call_graph: str = "fp"
    profile_scope: str = "system"
    cpus: tuple[int, ...] | None = None       # --cpu: system-wide perf looks only there


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

    def __init__(self, config: MonitorConfig):
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
    """Class decorator: make a monitor known by its ``name``."""
    if cls.name in _REGISTRY:
        raise ValueError(f"monitor {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def known() -> dict[str, type[Monitor]]:
    _load()
    return dict(_REGISTRY)


def names() -> list[str]:
    return list(known())


def descriptions() -> dict[str, str]:
    """Each monitor's one-line description, for help texts and listings."""
    return {name: cls.description for name, cls in known().items()}


def option_help() -> str:
    """The ``--monitor`` option's help: the registered names."""
    return f"Watch each sample: {','.join(names())}."


def parse_names(text: str) -> tuple[str, ...]:
    """``perf-stat,vmstat`` -> the names, checked; a UsageError lists the known ones."""
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise UsageError("--monitor needs at least one name", hint=f"choose from {_known_list()}")
    check_names(names)
    return names


def check_names(names: tuple[str, ...] | list[str]) -> None:
    registry = known()
    for name in names:
        if name not in registry:
            raise UsageError(f"unknown monitor {name!r}", hint=f"choose from {_known_list()}")


def check_config(config: MonitorConfig) -> None:
    """Every mistake a user can make in the monitor options, before anything runs."""
    check_names(config.names)
    if config.events is not None:
        if "perf-stat" not in config.names:
            raise UsageError("--events applies to the perf-stat monitor",
                             hint="add --monitor perf-stat")
        if not config.events:
            raise UsageError("--events needs at least one event")
    if config.profile_freq < 1:
        raise UsageError(f"--profile-freq must be at least 1 Hz, got {config.profile_freq}")
    if config.call_graph not in CALL_GRAPHS:
        raise UsageError(f"--call-graph {config.call_graph!r}: choose fp or dwarf")
    if config.profile_scope not in PROFILE_SCOPES:
        raise UsageError(f"--profile-scope {config.profile_scope!r}: choose system or process")


def build(config: MonitorConfig) -> list[Monitor]:
    """The monitors of ``config``, perf ones first: they start first and stop last, so the
    /proc readers' deltas cover as little of perf's own start-up and wind-down as possible."""
    registry = known()
    order = {name: i for i, name in enumerate(registry)}
    return [registry[name](config) for name in sorted(config.names, key=order.__getitem__)]


def expected_duration(params: dict[str, Any]) -> float | None:
    """A built-in workload's own idea of a sample's length (duration + warm-up), if it has one."""
    duration = params.get("duration")
    if not isinstance(duration, (int, float)) or isinstance(duration, bool):
        return None
    warmup = params.get("warmup", 0)
    return float(duration) + (float(warmup) if isinstance(warmup, (int, float)) else 0.0)


def _known_list() -> str:
    return ", ".join(known())


def _load() -> None:
    if not _REGISTRY:
        from perflab.execute.monitors import perf, procfs  # noqa: F401  (they register)
