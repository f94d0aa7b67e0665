"""What a workload is: how to start one sample at a parameter point, and what it measured.

The executor (a layer above) spawns and times the process; a workload only turns a
parameter point into an invocation and a finished process into measurements.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any

from perflab.model.records import Measurement, MetricInfo, ProcessResult


@dataclass(frozen=True)
class Invocation:
    executable: str                 # resolved path, so PATH lookup stays outside the clock
    argv: list[str]
    env: dict[str, str] | None = None
    description: str = ""           # how the user would type it, for messages


@dataclass(frozen=True)
class SampleContext:
    """What the executor knows about the sample beyond the process itself."""

    params: dict[str, Any]
    repetition: int
    extra: dict[str, Any] = field(default_factory=dict)


class Workload(abc.ABC):
    """A benchmark perflab can run at parameter points."""

    name: str
    description: str

    @property
    @abc.abstractmethod
    def benchmark(self) -> str:
        """The name samples are stored under (what compare matches across runs)."""

    @property
    @abc.abstractmethod
    def metrics(self) -> list[MetricInfo]:
        """Every metric a sample yields; the first is the primary one."""

    @abc.abstractmethod
    def validate(self, sweep: dict[str, list[Any]]) -> None:
        """Reject an unusable sweep before anything runs (raise UsageError)."""

    @abc.abstractmethod
    def invocation(self, params: dict[str, Any]) -> Invocation:
        """The process that measures one sample at ``params``."""

    @abc.abstractmethod
    def measure(self, result: ProcessResult, context: SampleContext) -> list[Measurement]:
        """The values of one finished sample, or failed rows saying why."""

    @abc.abstractmethod
    def spec(self) -> dict[str, Any]:
        """A JSON description from which ``from_spec`` rebuilds this workload (for --resume)."""
