"""Persistence: SQLite by default, PostgreSQL by URL; one schema."""

from perflab.store.repository import SampleRows, Store

__all__ = ["SampleRows", "Store"]
