"""Persistence: SQLite by default, PostgreSQL by URL; one schema.

One style: a ``Store`` holds the connection and reaches one repository object per kind of
record (``store.runs.resolve(...)``, ``store.jobs.add(...)``), so a caller needs no import
but the Store and a repository's collaborators are wired once, in store.py.
"""

from perflab.store.runs import this_host
from perflab.store.samples import SampleRows
from perflab.store.series import ValueGroup
from perflab.store.store import Store

__all__ = ["SampleRows", "Store", "ValueGroup", "this_host"]
