"""Every workload perflab knows, by name.

Built-in workloads register themselves with ``@register`` in the modules listed in
``_MODULES``; they are imported on first use so `perflab --version` stays fast.
"""

from __future__ import annotations

import importlib
from typing import Any

from perflab.model.errors import UsageError
from perflab.workloads.base import Workload
from perflab.workloads.command import CommandWorkload

_MODULES: tuple[str, ...] = (
    "perflab.workloads.wis",
    "perflab.workloads.cgroup_switch",
    "perflab.workloads.perf_bench",
    "perflab.workloads.tbench",
    "perflab.workloads.netstream",
)
_BUILTIN: dict[str, type[Workload]] = {}
_loaded = False


def register(cls: type[Workload]) -> type[Workload]:
    """Class decorator: make a built-in workload known by its ``name``."""
    if cls.name in _BUILTIN or cls.name == CommandWorkload.name:
        raise ValueError(f"workload {cls.name!r} registered twice")
    _BUILTIN[cls.name] = cls
    return cls


def _load() -> None:
    global _loaded
    if not _loaded:
        for module in _MODULES:
            importlib.import_module(module)
        _loaded = True


def names() -> list[str]:
    _load()
    return sorted(_BUILTIN)


def is_builtin(name: str) -> bool:
    _load()
    return name in _BUILTIN


def builtin(name: str) -> Workload:
    """A new instance of the built-in workload ``name``."""
    _load()
    if name not in _BUILTIN:
        raise UsageError(f"unknown workload {name!r}",
                         hint="'perflab workloads' lists them; a command goes after --")
    return _BUILTIN[name]()


def all_builtin() -> list[Workload]:
    return [builtin(name) for name in names()]


def from_spec(spec: dict[str, Any]) -> Workload:
    """Rebuild a stored workload (for --resume)."""
    name = spec.get("workload", "")
    if name == CommandWorkload.name:
        return CommandWorkload.from_spec(spec)
    if is_builtin(name):
        return builtin(name)
    raise UsageError(f"this perflab cannot rebuild workload {name!r}")
