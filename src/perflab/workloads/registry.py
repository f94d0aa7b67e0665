"""Every workload perflab knows, by name (built-in benchmarks join in a later issue)."""

from __future__ import annotations

from typing import Any

from perflab.model.errors import UsageError
from perflab.workloads.base import Workload
from perflab.workloads.command import CommandWorkload

_FROM_SPEC = {CommandWorkload.name: CommandWorkload.from_spec}


def from_spec(spec: dict[str, Any]) -> Workload:
    """Rebuild a stored workload (for --resume)."""
    builder = _FROM_SPEC.get(spec.get("workload", ""))
    if builder is None:
        raise UsageError(f"this perflab cannot rebuild workload {spec.get('workload')!r}")
    return builder(spec)
