"""Every workload perflab knows, by name.

``_HOMES`` names each built-in workload and the module that defines it; the module
registers its class with ``@register`` when imported, which happens on first use of that
workload only, so `perflab --version` stays fast and a report that merely asks whether a
benchmark is built in (`is_builtin`) imports none of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from perflab.model.errors import UsageError

if TYPE_CHECKING:
    from perflab.workloads.base import Workload

#: each built-in workload's name -> the module that registers it
_HOMES: dict[str, str] = {
    "wis": "perflab.workloads.wis",
    "cgroup-switch": "perflab.workloads.cgroup_switch",
    "breakpoint-thread": "perflab.workloads.perf_bench",
    "breakpoint-enable": "perflab.workloads.perf_bench",
    "sched-pipe": "perflab.workloads.perf_bench",
    "hackbench": "perflab.workloads.perf_bench",
    "tbench": "perflab.workloads.tbench",
    "netstream": "perflab.workloads.netstream",
}
_BUILTIN: dict[str, type[Workload]] = {}


def register(cls: type[Workload]) -> type[Workload]:
    """Class decorator: make a built-in workload known by its ``name`` (listed in ``_HOMES``)."""
    if cls.name in _BUILTIN or cls.name not in _HOMES:
        raise ValueError(f"workload {cls.name!r} registered twice or missing from the registry's _HOMES")
    _BUILTIN[cls.name] = cls
    return cls


def names() -> list[str]:
    return sorted(_HOMES)


def is_builtin(name: str) -> bool:
    return name in _HOMES


def builtin(name: str) -> Workload:
    """A new instance of the built-in workload ``name``."""
    if name not in _HOMES:
        raise UsageError(f"unknown workload {name!r}",
                         hint="'perflab workloads' lists them; a command goes after --")
    if name not in _BUILTIN:
        importlib.import_module(_HOMES[name])
    return _BUILTIN[name]()


def all_builtin() -> list[Workload]:
    return [builtin(name) for name in names()]


def from_spec(spec: dict[str, Any]) -> Workload:
    """Rebuild a stored workload (for --resume)."""
    from perflab.workloads.command import CommandWorkload
    name = spec.get("workload", "")
    if name == CommandWorkload.name:
        return CommandWorkload.from_spec(spec)
    if is_builtin(name):
        return builtin(name)
    raise UsageError(f"this perflab cannot rebuild workload {name!r}")
