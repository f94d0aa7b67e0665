"""Persistence: SQLite by default, PostgreSQL by URL; one schema."""

from perflab.store.repository import SampleRows, Store, this_host

__all__ = ["SampleRows", "Store", "this_host"]
