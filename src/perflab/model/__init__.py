"""Plain dataclasses shared by every layer (no I/O here).

The names below are imported from their modules on first use (PEP 562), so importing one
small module of the package (`perflab.model.errors`, which `perflab --version` needs) does
not load the records and the RunRequest dataclasses with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOMES = {
    "EnvironmentProblem": "errors", "PerflabError": "errors", "UsageError": "errors",
    "Direction": "records", "MeanKind": "records", "Measurement": "records", "MetricInfo": "records",
    "Point": "records", "ProcessResult": "records", "RunInfo": "records", "RunStatus": "records",
    "SampleStatus": "records",
}

__all__ = [
    "Direction", "EnvironmentProblem", "MeanKind", "Measurement", "MetricInfo",
    "PerflabError", "Point", "ProcessResult", "RunInfo", "RunStatus", "SampleStatus", "UsageError",
]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(f"perflab.model.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'perflab.model' has no attribute {name!r}")
