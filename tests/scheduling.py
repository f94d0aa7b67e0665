"""The order in which xdist hands out the session's work units (tests/conftest.py applies it on
each worker; pyproject's ``--no-loadscope-reorder`` makes the controller keep it).

A work unit is an xdist group (``...@name``) or a single test. Units go out in three ranks:

1. units that hold the machine alone at some point: a test marked ``exclusive`` (moved to the
   front of its unit) or ``alone`` (a fixture of it records under ``services.alone``). Run
   first, they wait only for the other workers' first short tests, never for a long one;
2. units with a test marked ``long`` (minutes): started before the short ones, so that no
   long test is the last one running while the other workers have nothing left;
3. the rest, largest unit first (xdist's own order); short single tests fill the end.

Within a rank, larger units first; within a unit, the collection's order (but exclusive tests first).
"""

from __future__ import annotations

from collections import defaultdict

import pytest


def unit_of(nodeid: str) -> str:
    """The work unit of a node id, as pytest-xdist's LoadGroupScheduling splits it."""
    return nodeid.split("@")[-1] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid


def _rank(items: list[pytest.Item]) -> int:
    if any(item.get_closest_marker("exclusive") or item.get_closest_marker("alone") for item in items):
        return 0
    if any(item.get_closest_marker("long") for item in items):
        return 1
    return 2


def order(items: list[pytest.Item]) -> None:
    """Reorder ``items`` in place: by rank of their unit, then larger units first, then the
    collection's order (exclusive tests ahead of the rest of their unit)."""
    units: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        units[unit_of(item.nodeid)].append(item)
    first = {name: index for index, name in enumerate(units)}
    ranked = sorted(units, key=lambda name: (_rank(units[name]), -len(units[name]), first[name]))
    items[:] = [item for name in ranked
                for item in sorted(units[name], key=lambda i: i.get_closest_marker("exclusive") is None)]
