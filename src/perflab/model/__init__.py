"""Plain dataclasses shared by every layer (no I/O here)."""

from perflab.model.errors import EnvironmentProblem, PerflabError, UsageError
from perflab.model.records import (
    Direction,
    MeanKind,
    Measurement,
    MetricInfo,
    Point,
    ProcessResult,
    RunInfo,
    RunStatus,
    SampleStatus,
)

__all__ = [
    "Direction", "EnvironmentProblem", "MeanKind", "Measurement", "MetricInfo",
    "PerflabError", "Point", "ProcessResult", "RunInfo", "RunStatus", "SampleStatus", "UsageError",
]
