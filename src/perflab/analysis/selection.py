"""Which metrics a comparison shows by default: each benchmark's primary one.

A workload records several metrics that mostly carry the same change (perf bench's
usec_per_op, usec_per_op_per_cpu and time), or say something else than its result
(UDP's lost_percent, tbench's max_latency, a command's user and system CPU). By default
a comparison shows the primary one: a built-in workload's first metric, ``time`` for a
command, else the first metric the benchmark has. ``--metric NAME`` names others,
``--all`` shows every one.
"""

from __future__ import annotations

from collections.abc import Iterable

PRIMARY_OF_COMMANDS = "time"


def primary_metric(benchmark: str, available: Iterable[str]) -> str | None:
    """The metric a comparison of ``benchmark`` shows by default, of those ``available``."""
    from perflab.workloads import registry
    names = list(available)
    if registry.is_builtin(benchmark):
        first = registry.builtin(benchmark).metrics[0].name
        if first in names:
            return first
    if PRIMARY_OF_COMMANDS in names:
        return PRIMARY_OF_COMMANDS
    return names[0] if names else None


def keep_primary(keys: Iterable[tuple[str, str, str]]) -> tuple[set[tuple[str, str]], list[str]]:
    """Of the (benchmark, point, metric) keys of a report: the (benchmark, metric) pairs
    to keep, and the names of the metrics left out (each once, in order)."""
    by_benchmark: dict[str, list[str]] = {}
    for benchmark, _, metric in keys:
        names = by_benchmark.setdefault(benchmark, [])
        if metric not in names:
            names.append(metric)
    kept: set[tuple[str, str]] = set()
    hidden: list[str] = []
    for benchmark, names in by_benchmark.items():
        primary = primary_metric(benchmark, names)
        kept.add((benchmark, primary or ""))
        hidden += [name for name in names if name != primary and name not in hidden]
    return kept, hidden


def hidden_note(hidden: list[str]) -> str:
    """One line naming what was left out and how to see it."""
    shown = ", ".join(hidden[:6]) + (f" and {len(hidden) - 6} more" if len(hidden) > 6 else "")
    return f"other metrics not shown: {shown} (--metric NAME shows one, --all every one)"
