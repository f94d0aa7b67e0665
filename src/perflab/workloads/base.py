"""What a workload is: how to start one sample at a parameter point, and what it measured.

The executor (a layer above) spawns and times the process; a workload only turns a
parameter point into an invocation and a finished process into measurements. A built-in
workload declares its parameters (with defaults), the programs it needs, and may hold a
session open around the whole run (a server it starts and always stops).
"""

from __future__ import annotations

import abc
import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from perflab.model.errors import UsageError
from perflab.model.records import Measurement, MetricInfo, ProcessResult


@dataclass(frozen=True)
class Invocation:
    executable: str                 # resolved path, so PATH lookup stays outside the clock
    argv: list[str]
    env: dict[str, str] | None = None
    description: str = ""           # how the user would type it, for messages
    capture: bool = False           # hand stdout/stderr to measure() (for parsers)
    timeout: float | None = None    # the workload's own bound; --timeout wins if smaller


@dataclass(frozen=True)
class SampleContext:
    """What the executor knows about the sample beyond the process itself."""

    params: dict[str, Any]
    repetition: int
    stdout: str = ""                # captured when the invocation asked for it
    stderr: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


_LARGEST = 2**63 - 1   # what the programs behind the workloads can take (int64)


@dataclass(frozen=True)
class Parameter:
    """One knob of a built-in workload."""

    name: str
    description: str
    default: Any
    choices: tuple[Any, ...] | None = None
    kind: type = str                # int, float or str: values are checked against it
    minimum: float | None = None
    maximum: float | None = None

    def check(self, value: Any) -> Any:
        """The value, checked and converted; a UsageError names what is wrong."""
        if self.kind in (int, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise UsageError(f"parameter {self.name}={value!r}: expected {self.kind.__name__}")
            if isinstance(value, float) and not math.isfinite(value):
                raise UsageError(f"parameter {self.name}={value}: must be a finite number")
            if abs(value) > _LARGEST:   # 1e23 as much as 10**23: int() of it is no count a program takes
                size = f"a {value.bit_length()}-bit number" if isinstance(value, int) else f"{value:g}"
                raise UsageError(f"parameter {self.name}: {size} is too large (the largest is 2**63-1)")
            if self.kind is int and not float(value).is_integer():
                raise UsageError(f"parameter {self.name}={value!r}: expected {self.kind.__name__}")
            value = self.kind(value)
            if self.minimum is not None and value < self.minimum:
                raise UsageError(f"parameter {self.name}={value}: must be at least {self.minimum:g}")
            if self.maximum is not None and value > self.maximum:
                raise UsageError(f"parameter {self.name}={value}: must be at most {self.maximum:g}")
        else:
            value = str(value)
        if self.choices is not None and value not in self.choices:
            raise UsageError(f"parameter {self.name}={value!r}: choose from "
                             + ", ".join(map(str, self.choices)))
        return value


def tasks_max() -> int:
    """The most processes and threads the kernel holds at once (pid_max): a workload asked
    for more fails in fork, after its start-up, so its parameters are checked against it."""
    try:
        with open("/proc/sys/kernel/pid_max") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return 4_194_304   # the kernel's PID_MAX_LIMIT on 64-bit


class Workload(abc.ABC):
    """A benchmark perflab can run at parameter points."""

    name: str
    description: str
    parameters: tuple[Parameter, ...] = ()
    programs: tuple[str, ...] = ()   # executables it needs, for availability and doctor
    # how compare lays out its rows: a block title over the parameters held constant
    # (mmtests' names), and the parameter that labels the rows; None: chosen from the data
    report_title: str | None = None
    report_row: str | None = None

    @property
    def benchmark(self) -> str:
        """The name samples are stored under (what compare matches across runs)."""
        return self.name

    @property
    @abc.abstractmethod
    def metrics(self) -> list[MetricInfo]:
        """Every metric a sample yields; the first is the primary one."""

    def unavailable(self) -> str | None:
        """Why this workload cannot run here (with the fix), or None if it can."""
        return None

    def validate(self, sweep: dict[str, list[Any]]) -> None:
        """Reject an unusable sweep before anything runs (raise UsageError)."""
        known = {p.name: p for p in self.parameters}
        for name, values in sweep.items():
            if name not in known:
                raise UsageError(f"{self.name} has no parameter {name!r} "
                                 f"(it has: {', '.join(known) or 'none'})")
            for value in values:
                known[name].check(value)

    def complete(self, params: dict[str, Any]) -> dict[str, Any]:
        """A point with every parameter: defaults filled in, values checked."""
        return {p.name: p.check(params[p.name]) if p.name in params else p.default
                for p in self.parameters}

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """Held open around the whole run (start a server here; stop it in finally)."""
        yield

    @abc.abstractmethod
    def invocation(self, params: dict[str, Any]) -> Invocation:
        """The process that measures one sample at ``params``."""

    @abc.abstractmethod
    def measure(self, result: ProcessResult, context: SampleContext) -> list[Measurement]:
        """The values of one finished sample, or failed/invalid rows saying why."""

    def warnings(self, params: dict[str, Any], measurements: list[Measurement]) -> list[str]:
        """What makes a sample's valid values doubtful (said once per point), if anything."""
        return []

    def spec(self) -> dict[str, Any]:
        """A JSON description from which the registry rebuilds this workload (for --resume)."""
        return {"workload": self.name}
