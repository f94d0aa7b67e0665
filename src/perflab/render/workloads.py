"""`perflab workloads`: what each built-in measures, its knobs, and whether it runs here.

Takes workloads duck-typed (name, description, parameters, metrics) with the reason each
is unavailable, since render sits below the workloads layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perflab.model.params import format_value


def _parameter(p: Any) -> str:
    choices = "|".join(map(format_value, p.choices)) if p.choices else None
    return f"{p.name}={format_value(p.default)}" + (f" ({choices})" if choices else "")


def render_workloads(entries: Sequence[tuple[Any, str | None]]) -> str:
    blocks = []
    for workload, reason in entries:
        status = "available" if reason is None else f"unavailable: {reason}"
        lines = [f"{workload.name}  [{status}]", f"  {workload.description}"]
        if workload.parameters:
            lines.append("  parameters: " + ", ".join(_parameter(p) for p in workload.parameters))
        lines.append("  metrics:    " + ", ".join(
            f"{m.name} ({m.unit}, {m.direction.value} is better)" for m in workload.metrics))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
