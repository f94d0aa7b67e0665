"""Persistence: SQLite by default, PostgreSQL by URL; one schema.

One style: a ``Store`` holds the connection and reaches one repository object per kind of
record (``store.runs.resolve(...)``, ``store.jobs.add(...)``), so a caller needs no import
but the Store and a repository's collaborators are wired once, in store.py. The names below
are imported on first use: a light module of the package (``location``: is --db a path or a
URL) costs no SQLAlchemy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perflab.store.runs import this_host
    from perflab.store.samples import SampleRows
    from perflab.store.series import ValueGroup
    from perflab.store.store import Store

__all__ = ["SampleRows", "Store", "ValueGroup", "this_host"]

_HOMES = {"SampleRows": "perflab.store.samples", "Store": "perflab.store.store",
          "ValueGroup": "perflab.store.series", "this_host": "perflab.store.runs"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'perflab.store' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
