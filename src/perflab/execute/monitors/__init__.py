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

import importlib
from dataclasses import fields
from typing import Any

from perflab.execute.monitors.base import (
    _REGISTRY,
    Monitor,
    MonitorFailed,
    MonitorOutput,
    ProfileRows,
    SampleInfo,
    register,
)
from perflab.model.errors import UsageError
from perflab.model.records import MONITOR_HOMES
from perflab.model.run_request import MonitorOptions

__all__ = ["Monitor", "MonitorFailed", "MonitorOptions", "MonitorOutput", "ProfileRows", "SampleInfo", "alike",
           "build", "check_config", "check_names", "descriptions", "expected_duration", "known", "names",
           "option_help", "parse_names", "register"]

def known() -> dict[str, type[Monitor]]:
    """Every monitor by name, in MONITOR_HOMES' order: the order they start in."""
    _load()
    return {name: _REGISTRY[name] for name in MONITOR_HOMES}


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


def check_config(options: MonitorOptions) -> None:
    """The mistakes MonitorOptions cannot see alone (it checks its own ranges and choices):
    monitors not registered, --events without perf-stat. Before anything runs."""
    chosen = options.monitors or []
    check_names(chosen)
    if options.events is not None:
        if "perf-stat" not in chosen:
            raise UsageError("--events applies to the perf-stat monitor",
                             hint="add --monitor perf-stat")
        if not options.events:
            raise UsageError("--events needs at least one event")


def alike(one: MonitorOptions, other: MonitorOptions) -> bool:
    """Whether two plans' options give the same monitors (a suite's plans share them)."""
    return all(getattr(one, f.name) == getattr(other, f.name) for f in fields(MonitorOptions))


def build(options: MonitorOptions) -> list[Monitor]:
    """The monitors ``options`` name, perf ones first: they start first and stop last, so the
    /proc readers' deltas cover as little of perf's own start-up and wind-down as possible."""
    registry = known()
    order = {name: i for i, name in enumerate(registry)}
    return [registry[name](options) for name in sorted(options.monitors or (), key=order.__getitem__)]


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
    """Import every monitor's module (model.records.MONITOR_HOMES): they register."""
    if not _REGISTRY:
        for module in dict.fromkeys(MONITOR_HOMES.values()):
            importlib.import_module(f"perflab.execute.monitors.{module}")
