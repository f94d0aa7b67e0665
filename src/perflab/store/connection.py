"""The connection every repository of the store shares: one engine, one lazily opened
connection, and waiting out a PostgreSQL server that went away."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from perflab.store import location
from perflab.store.database import is_read_only, open_engine, opens_read_only, read_only_engine

UNREACHABLE_WAIT_S = 600.0   # how long a writer waits for a PostgreSQL server to come back
RECONNECT_PAUSE_S = 1.0
_T = TypeVar("_T")


class StoreConnection:
    """A perflab database, opened and checked; ``conn`` opens on first use. With ``engine``
    (a PostgreSQL store's, kept by a long-lived reader: the dashboard), its pool is used and
    left open at close: the next open takes a connection whose server process has read the
    catalog and statements SQLAlchemy has compiled."""

    def __init__(self, target: str | None = None, *, create: bool = False, engine: Engine | None = None):
        self.target = location.resolve(target)
        self.engine: Engine = open_engine(self.target, create=create, engine=engine)
        self._own_engine = engine is None
        self.read_only = opens_read_only(self.target, create=create) or is_read_only(self.engine)
        self._conn: sa.Connection | None = None

    @property
    def conn(self) -> sa.Connection:
        if self._conn is None:
            self._conn = self.engine.connect()
        return self._conn

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def is_server(self) -> bool:
        return self.dialect == "postgresql"

    def when_reachable(self, action: Callable[[], _T], wait_s: float = UNREACHABLE_WAIT_S,
                       on_wait: Callable[[], None] | None = None) -> _T:
        """``action()``, again while a PostgreSQL server does not answer (a restart, a network
        cut), for at most ``wait_s``; an SQLite error is raised at once (a local file that
        fails will not heal by waiting)."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                return action()
            except (sa.exc.OperationalError, sa.exc.InterfaceError, sa.exc.PendingRollbackError):
                if not self.is_server or time.monotonic() > deadline:
                    raise
                if on_wait is not None:
                    on_wait()
                self.reconnect()
                time.sleep(RECONNECT_PAUSE_S)

    def reopen_read_only(self) -> None:
        """Read on without ever writing (an SQLite file on a full disk: finishing a dead
        perflab's run cannot be written now, and waits for the next perflab with space)."""
        self.reconnect()
        self.engine.dispose()
        self.engine = read_only_engine(self.target)
        self.read_only = True

    def reconnect(self) -> None:
        """Drop the connection (after the server went away): the next use opens a new one."""
        if self._conn is not None:
            with contextlib.suppress(sa.exc.SQLAlchemyError):  # already broken: the pool discards it
                self._conn.close()
            self._conn = None

    def commit_reads(self) -> None:
        """End a pending read transaction before a write of several statements begins."""
        if self.conn.in_transaction():  # only reads can be pending: every writer commits
            self.conn.commit()

    def keep_engine(self) -> Engine:
        """This store's engine, left open at close from now on, for the caller to open the
        next store on (``engine=``)."""
        self._own_engine = False
        return self.engine

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._own_engine:
            self.engine.dispose()


def inserted_id(result: sa.CursorResult[Any]) -> int:
    """The key of the row an insert made (every table here has an integer key)."""
    key = result.inserted_primary_key
    if key is None:
        raise RuntimeError("the database returned no key for the row it inserted")
    return int(key[0])


# a query names up to this many runs (an IN list); more, and it reads every run's rows and
# keeps the wanted ones (no huge IN list)
RUNS_BY_ID = 500


def among_ids(column: Any, ids: Sequence[Any], dialect: str, element: Any = sa.Integer) -> Iterator[Any]:
    """Conditions that together select the rows whose ``column`` is one of ``ids`` (of SQL
    type ``element``: run ids, or another key), a query each: on PostgreSQL one, the ids one
    array parameter (``= ANY``: an IN list of 500 is rendered and bound as 500 parameters, a
    quarter of a report's reading time); elsewhere IN lists of RUNS_BY_ID."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import ARRAY
        if ids:
            yield column == sa.any_(sa.bindparam(None, list(ids), type_=ARRAY(element)))
        return
    for start in range(0, len(ids), RUNS_BY_ID):
        yield column.in_(ids[start:start + RUNS_BY_ID])
