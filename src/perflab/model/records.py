"""The data model (docs/design.md): runs, points, samples in long format, metric metadata."""

from __future__ import annotations

import enum
import json
import signal
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from perflab.model.json_types import JsonObject
from perflab.model.params import Params
from perflab.model.run_request import RunRequest

# kernel.randomize_va_space values
ASLR_MODES = {0: "off", 1: "partial", 2: "full"}


class Direction(str, enum.Enum):
    LOWER = "lower"    # lower is better (times, latencies)
    HIGHER = "higher"  # higher is better (rates, throughput)


class MeanKind(str, enum.Enum):
    ARITHMETIC = "amean"  # fits times (mmtests Amean)
    HARMONIC = "hmean"    # fits rates (mmtests Hmean)
    GEOMETRIC = "gmean"   # fits ratios


class SampleStatus(str, enum.Enum):
    OK = "ok"
    FAILED = "failed"    # non-zero exit or killed by a signal
    TIMEOUT = "timeout"  # killed by perflab at --timeout
    INVALID = "invalid"  # ran, but a validity check rejected the value


class RunStatus(str, enum.Enum):
    RUNNING = "running"
    COMPLETE = "complete"
    INTERRUPTED = "interrupted"  # Ctrl-C / SIGTERM, or found dead (SIGKILL)
    FAILED = "failed"            # every sample failed


@dataclass(frozen=True)
class MetricInfo:
    """What a metric means: its unit, which way is better, and the mean that fits it."""

    name: str
    unit: str
    direction: Direction = Direction.LOWER
    noise_floor: float = 0.01  # relative change (1%) below which no change is claimed
    description: str = ""

    @property
    def mean(self) -> MeanKind:
        # mmtests: arithmetic mean for lower-is-better, harmonic for rates.
        return MeanKind.ARITHMETIC if self.direction is Direction.LOWER else MeanKind.HARMONIC


# What timing a command from outside measures: perflab's `command` workload and the
# hyperfine importer record the same metrics, so their runs compare.
COMMAND_METRICS = (
    MetricInfo("time", "s", Direction.LOWER, description="wall-clock time"),
    MetricInfo("user", "s", Direction.LOWER, description="user CPU time of the command and its children"),
    MetricInfo("system", "s", Direction.LOWER, description="system CPU time of the command and its children"),
    MetricInfo("max_rss", "B", Direction.LOWER,
               description="peak RSS of the largest process; only recorded when above perflab's own"),
)


#: Every monitor by name -> the module of perflab.execute.monitors that registers it, in the
#: order they start (perf ones first). A new monitor is its module and one line here.
MONITOR_HOMES: dict[str, str] = {
    "perf-stat": "perf",
    "perf-profile": "perf",
    "vmstat": "procfs",
    "proc-stat": "procfs",
    "schedstat": "procfs",
    "interrupts": "procfs",
    "rusage": "procfs",
}
# Metrics that monitors record beside a benchmark's own are named "<monitor>.<name>",
# e.g. "perf-stat.task-clock" or "vmstat.pgfault": the store and reports keep them apart
# by these prefixes, without importing execute (perf-profile stores rows, not metrics).
MONITOR_METRIC_PREFIXES = tuple(f"{name}." for name in MONITOR_HOMES if name != "perf-profile")
PRESSURE_METRIC_PREFIX = "psi."   # the runner's watch in runs recorded before outside.* (PSI)
#: The host of a run whose machine is not known (an import whose file does not say, and no
#: --host): never a replicate of anything, and no host model. "imported" is what imports
#: were given before, kept as unknown.
UNKNOWN_HOST = "unknown"
UNKNOWN_HOSTS = frozenset({UNKNOWN_HOST, "imported"})
PRESSURE_WINDOW_METRIC = "psi.window_us"   # the µs a sample's psi stalls were counted over
OUTSIDE_METRIC_PREFIX = "outside."   # the load outside perflab's cgroups (execute/outside.py)
OUTSIDE_WINDOW_METRIC = "outside.window_us"   # the µs a sample's outside.* figures cover


def is_pressure_metric(name: str) -> bool:
    """The runner's watch of the machine around every sample (outside.*; psi.* in runs
    recorded before it): it judges the run (analysis/contention.py), not the benchmark,
    so reports and histories leave it out unless asked for by name."""
    return name.startswith((OUTSIDE_METRIC_PREFIX, PRESSURE_METRIC_PREFIX))


def is_monitor_metric(name: str) -> bool:
    return name.startswith((*MONITOR_METRIC_PREFIXES, PRESSURE_METRIC_PREFIX, OUTSIDE_METRIC_PREFIX))


@dataclass(frozen=True)
class Point:
    """One benchmark at one parameter point; ``key`` is its normalised JSON."""

    benchmark: str
    params: Params = field(default_factory=dict)

    @property
    def key(self) -> str:
        return normalise_params(self.params)

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in sorted(self.params.items())) or "-"


def normalise_params(params: Params) -> str:
    """The canonical text of a parameter point: sorted keys, compact JSON."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Measurement:
    """One value of one metric from one repetition (a row of the samples table)."""

    metric: str
    value: float | None
    unit: str
    status: SampleStatus = SampleStatus.OK
    note: str = ""


class NotLoaded(JsonObject):
    """A run's spec or environment that was not read (``store.runs.all(details=False)``:
    a history of 5,000 runs needs neither). Any use raises instead of passing for an empty
    record; ``store.runs.with_details`` reads the real ones of the few runs that need them."""

    def __init__(self, name: str):
        super().__init__({"": None})  # not empty: C code that skips an empty dict (json) asks items()
        self._what = f"a run's {name}"

    def _missing(self, *_: object, **__: object) -> Any:
        raise LookupError(f"{self._what} was not loaded (store.runs.all(details=False)): "
                          "read it with store.runs.with_details")

    __getitem__ = __iter__ = __len__ = __contains__ = __eq__ = __ne__ = _missing
    get = keys = items = values = copy = _missing
    __hash__ = None

    def __repr__(self) -> str:
        return f"<{self._what}: not loaded>"


SPEC_NOT_LOADED, ENVIRONMENT_NOT_LOADED = NotLoaded("spec"), NotLoaded("environment")


@dataclass
class RunInfo:
    id: int
    label: str
    commit: str | None
    commit_describe: str | None
    host: str
    started_at: float
    finished_at: float | None
    status: RunStatus
    spec: JsonObject
    environment: JsonObject
    pid: int | None = None
    benchmarks: int = 0
    samples: int = 0
    repo: str | None = None  # absolute path of the git repository the commit came from

    @cached_property
    def request(self) -> RunRequest:
        """The stored spec as its type (the only way to read it; see model/run_request.py)."""
        return RunRequest.from_json(self.spec)


@dataclass(frozen=True)
class ProcessResult:
    """How one measured process ended."""

    wall_s: float
    user_s: float
    system_s: float
    max_rss_bytes: int | None  # None when it cannot be told apart from perflab's own peak
    exit_code: int | None     # None when killed by a signal
    signal: int | None
    timed_out: bool
    # the rest of the child's rusage (wait4), for the rusage monitor, and its pid
    minflt: int = 0
    majflt: int = 0
    nvcsw: int = 0
    nivcsw: int = 0
    inblock: int = 0
    oublock: int = 0
    pid: int | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def describe_failure(self) -> str:
        if self.timed_out:
            return f"timed out after {self.wall_s:.3g} s"
        if self.signal is not None:
            return f"killed by {signal.Signals(self.signal).name}"
        return f"exit status {self.exit_code}"
