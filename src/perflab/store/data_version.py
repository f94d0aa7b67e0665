"""A store's data version: a text that changes whenever a writer commits, read cheaply by
a long-lived reader (the dashboard's page cache), so that two equal versions mean equal data.

SQLite: ``PRAGMA data_version`` of one connection held open for the reader's life, which
moves whenever any other connection commits (this one never writes), with the identity,
size and time of change of the file and its -wal (a file put in its place; a reader that
opens the store immutable, where data_version never moves). PostgreSQL: the current snapshot (xmin:xmax:running
xids), which moves when a transaction that writes starts or ends, and never for reads. Both
add the runs recorded running whose perflab lives: a run whose perflab died reads as
interrupted (store/runs.py) with no write to say so.
"""

from __future__ import annotations

import contextlib
import os
import threading

import sqlalchemy as sa

from perflab.model.records import RunStatus
from perflab.store.connection import StoreConnection
from perflab.store.runs import owner_alive
from perflab.store.schema import runs


class DataVersion:
    """The data version of the store ``target``, from a connection of its own."""

    def __init__(self, target: str | None):
        self.db = StoreConnection(target)
        self._lock = threading.Lock()   # a dashboard's pages are made on several threads

    def now(self) -> str | None:
        """The version now; None when it cannot be read (a server away): cache nothing."""
        with self._lock:
            try:
                return self._read()
            except sa.exc.SQLAlchemyError:
                self.db.reconnect()
                return None

    def _read(self) -> str:
        conn = self.db.conn
        try:
            if self.db.is_server:
                version = str(conn.exec_driver_sql("SELECT pg_current_snapshot()::text").scalar())
            else:
                files = [row[2] for row in conn.exec_driver_sql("PRAGMA database_list").fetchall() if row[1] == "main"]
                version = ":".join([*(_identity(files[0]) if files and files[0] else []),
                                    str(conn.exec_driver_sql("PRAGMA data_version").scalar())])
            running = conn.execute(sa.select(runs.c.id, runs.c.pid, runs.c.host)
                                   .where(runs.c.status == RunStatus.RUNNING.value).order_by(runs.c.id))
            alive = [str(run_id) for run_id, pid, host in running if owner_alive(pid, host)]
        finally:
            conn.rollback()   # no read transaction held open: the next read sees what was committed since
        return f"{version}|{','.join(alive)}"

    def close(self) -> None:
        with self._lock, contextlib.suppress(sa.exc.SQLAlchemyError):
            self.db.close()


def _identity(path: str) -> list[str]:
    """The SQLite file's and its -wal's identity, size and time of change: a file put in its
    place, and a reader that opens the store immutable (a directory it may not write, where
    PRAGMA data_version never moves), still see a write."""
    out = []
    for name in (path, path + "-wal"):
        try:
            found = os.stat(name)
        except OSError:
            out.append("-")
            continue
        out.append(f"{found.st_dev}.{found.st_ino}.{found.st_size}.{found.st_mtime_ns}")
    return out
