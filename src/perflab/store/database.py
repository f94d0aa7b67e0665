"""Opening a perflab database: create it, or check that it is ours and not from the future."""

from __future__ import annotations

import contextlib
import errno
import os
import random
import sqlite3
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from perflab.model.errors import EnvironmentProblem, PerflabError, UsageError
from perflab.model.limits import shorten
from perflab.store import location
from perflab.store.failures import damaged, disk_full, first_line, is_damaged, is_disk_full
from perflab.store.migrations import migrate
from perflab.store.schema import APPLICATION, SCHEMA_VERSION, meta, metadata

BUSY_WAIT_S = 120.0        # how long a writer keeps retrying a locked database before giving up
_PG_SCHEMA_LOCK = 0x7065726C   # "perl": the advisory lock that serialises schema work
_T = TypeVar("_T")

def open_engine(target: str | None, *, create: bool, engine: Engine | None = None) -> Engine:
    """An engine on a checked perflab database (``engine``, one kept from an earlier open of
    the same PostgreSQL URL, checked again: its pool's connections are reused).

    ``create`` is for commands that write (run, import): they may create the file.
    Readers get a clear error instead of an empty new database. Any number of perflabs
    may do this at once on a new database: one creates the schema, the others wait for
    it and find it (see ``_check_or_create``).
    """
    target = location.resolve(target)
    if location.is_url(target):
        return _checked(engine or _url_engine(target), target, create=create)
    existed = os.path.lexists(os.path.expanduser(target))
    try:
        engine = _sqlite_engine(Path(target).expanduser(), create=create)
    except OSError as error:   # a path no file system holds (a 10,000-character name), a looping link
        problem = UsageError if error.errno in (errno.ENAMETOOLONG, errno.ELOOP) else EnvironmentProblem
        raise problem(f"cannot use the database {shorten(target)}: {error.strerror}") from None
    try:
        return _checked(engine, target, create=create)
    except EnvironmentProblem:
        if create and not existed:
            _remove_if_empty(Path(target).expanduser())
        # a reader where SQLite cannot write beside the file (a full disk: no room for its -shm)
        # reads it read-only, or immutable; else the first failure is the one said
        if create or is_read_only(engine):
            raise
        try:
            return _checked(read_only_engine(target), target, create=False)
        except PerflabError:
            pass
        raise


def _remove_if_empty(path: Path) -> None:
    """A database this perflab began and could not write (a full disk) is not left as a
    0-byte file that the next perflab would take for a new one, nor are its empty journals."""
    for name in (path, *(path.with_name(path.name + end) for end in ("-journal", "-wal", "-shm"))):
        with contextlib.suppress(OSError):
            if name.stat().st_size == 0:
                name.unlink()


def _checked(engine: Engine, target: str, *, create: bool) -> Engine:
    """``engine`` once its database is checked (created or upgraded when ``create``), or the
    failure as one PerflabError line; the engine is disposed of then."""
    try:
        _check_or_create(engine, target, create=create)
        if engine.dialect.name == "sqlite" and create:
            retry_busy(lambda: _set_wal(engine))
    except sa.exc.OperationalError as error:
        engine.dispose()
        raise (damaged(target, error) if is_damaged(error) else _operational_problem(target, error)) from None
    except UnicodeDecodeError as error:   # text SQLite hands back from overwritten pages
        engine.dispose()
        raise damaged(target, error) from None
    except UnicodeError as error:   # a host name the resolver cannot encode (a label over 63 characters)
        engine.dispose()
        raise UsageError(f"bad database URL {shorten(target)!r}: its host name: {error}") from None
    except BaseException:
        engine.dispose()
        raise
    return engine


def _set_wal(engine: Engine) -> None:
    with engine.connect() as conn:  # persistent in the file; not inside a transaction
        conn.exec_driver_sql("PRAGMA journal_mode=WAL")


def retry_busy(action: Callable[[], _T], wait_s: float = BUSY_WAIT_S) -> _T:
    """``action()``, again after a short random pause while the database is locked or busy.

    SQLite's busy timeout covers most waits; what it cannot cover (a lock needed to
    change the journal mode, a stale snapshot) is retried here, for a bounded time.
    """
    deadline = time.monotonic() + wait_s
    pause = 0.005
    while True:
        try:
            return action()
        except sa.exc.OperationalError as error:
            if not is_busy(error) or time.monotonic() > deadline:
                raise
        time.sleep(pause * (0.5 + random.random()))
        pause = min(pause * 2, 0.25)


def is_busy(error: sa.exc.OperationalError) -> bool:
    text = first_line(error).lower()
    return "database is locked" in text or "database is busy" in text or "database table is locked" in text


def insert_or_ignore(dialect: str, table: sa.Table, keys: list[str]) -> Any:
    """An INSERT that skips rows whose ``keys`` exist (SQLite INSERT OR IGNORE semantics,
    PostgreSQL ON CONFLICT DO NOTHING), or None for another dialect."""
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    elif dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert  # type: ignore[assignment]
    else:
        return None
    return insert(table).on_conflict_do_nothing(index_elements=keys)


def upsert(dialect: str, table: sa.Table, keys: list[str], columns: list[str]) -> Any:
    """An INSERT that updates ``columns`` of a row whose ``keys`` exist, or None."""
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    elif dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert  # type: ignore[assignment]
    else:
        return None
    statement = insert(table)
    return statement.on_conflict_do_update(
        index_elements=keys, set_={name: statement.excluded[name] for name in columns})


def _sqlite_engine(path: Path, *, create: bool) -> Engine:
    if path.exists():
        if path.is_dir():
            raise UsageError(f"database {path} is a directory, not a perflab database")
        if _not_sqlite(path):
            raise UsageError(f"{path} is not a perflab database (not an SQLite file)",
                             hint="pass another file with --db or PERFLAB_DB")
        if create and not os.access(path, os.W_OK):
            raise EnvironmentProblem(f"cannot write the database {path}: permission denied")
    elif not create:
        raise UsageError(f"no perflab database at {path}",
                         hint="record something with 'perflab run' first, or pass --db")
    else:
        parent = _existing_ancestor(path.parent)
        if not os.access(parent, os.W_OK | os.X_OK):
            raise EnvironmentProblem(f"cannot create the database {path}: {parent} is not writable",
                                     hint="pass a writable --db PATH")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise EnvironmentProblem(f"cannot create the database {path}: {error.strerror}") from None
    if not create and not writable(path):
        return read_only_engine(str(path))
    engine = sa.create_engine(f"sqlite:///{path}", connect_args={"timeout": 30})

    @sa.event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection, _record):  # pragma: no cover - trivial
        cursor = dbapi_connection.cursor()
        # With WAL (set once the file is known to be ours), NORMAL keeps a committed
        # sample through a crash of perflab at the cost of one write, no fsync per sample.
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    return engine


def _not_sqlite(path: Path) -> bool:
    """Whether SQLite reads ``path`` as something other than a database. Asked of SQLite, not
    read with a file object of our own: closing any descriptor of the file drops every POSIX
    lock this process holds on it, the locks of its open SQLite connections too (a dashboard's
    long-lived reader then stopped seeing other processes' commits)."""
    try:
        probe = sqlite3.connect(f"{_file_uri(str(path))}?mode=ro", uri=True)
    except sqlite3.Error:
        return False   # cannot be opened at all: the opening proper says why
    try:
        probe.execute("PRAGMA schema_version").fetchall()
    except sqlite3.DatabaseError as error:
        return "not a database" in str(error)
    finally:
        probe.close()
    return False


def writable(path: Path) -> bool:
    """Whether this user may write the SQLite file ``path`` and its journal beside it."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)


def opens_read_only(target: str, *, create: bool) -> bool:
    """Whether a reader (``create`` False) opens ``target`` read-only: an SQLite file this
    user cannot write (a root-owned 0644 store). A writable store is opened read-write,
    so that a reader still finishes what a killed perflab left (store.pending.recover)."""
    return not create and not location.is_url(target) and not writable(Path(target).expanduser())


def is_read_only(engine: Engine) -> bool:
    """Whether ``engine`` is one of ``read_only_engine``'s (its file is opened by a creator)."""
    return engine.dialect.name == "sqlite" and not engine.url.database


def read_only_engine(target: str) -> Engine:
    """An engine that never writes ``path``: SQLite's mode=ro, or immutable=1 where even
    that cannot open (a WAL store whose -shm this user may not create: the directory is
    not writable). immutable reads the main file only, without locks: a writer's commits
    that are still in its -wal are not seen, and a concurrent writer is not waited for."""
    uri = _file_uri(target)

    def mode_ro() -> sqlite3.Connection:
        return sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=30, check_same_thread=False)

    def immutable() -> sqlite3.Connection:
        return sqlite3.connect(f"{uri}?immutable=1", uri=True, check_same_thread=False)

    try:
        probe = mode_ro()
        try:
            probe.execute("SELECT count(*) FROM sqlite_master").fetchall()
        finally:
            probe.close()
        creator = mode_ro
    except (sqlite3.DatabaseError, UnicodeDecodeError):   # cannot open read-only (no -shm), or damaged: found on use
        creator = immutable
    return sa.create_engine("sqlite://", creator=creator)


def _file_uri(path: str) -> str:
    """SQLite's ``file:`` URI of ``path`` (its query, mode=ro or immutable=1, added by the caller)."""
    return "file:" + urllib.parse.quote(str(Path(path).expanduser().resolve()))


def _existing_ancestor(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _url_engine(target: str) -> Engine:
    url = location.sqlalchemy_url(target)
    try:
        return sa.create_engine(url, pool_pre_ping=True)
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError) as error:
        raise UsageError(f"bad database URL {shorten(target)!r}: {error}") from None
    except ValueError:   # urllib's and SQLAlchemy's parse: a port that is not a number, an open '['
        raise UsageError(f"bad database URL {shorten(target)!r}: cannot read its host and port",
                         hint="postgresql://USER@HOST[:PORT]/DB") from None


def _check_or_create(engine: Engine, target: str, *, create: bool) -> None:
    """Check the database, creating or upgrading its schema in ONE locked transaction.

    SQLite: ``BEGIN IMMEDIATE`` takes the write lock before the tables are looked at,
    so of several perflabs starting on a new file one creates and the rest find.
    PostgreSQL: a transaction-scoped advisory lock does the same.
    """
    try:
        retry_busy(lambda: _check_or_create_locked(engine, target, create=create))
    except sa.exc.OperationalError as error:
        raise (damaged(target, error) if is_damaged(error) else _operational_problem(target, error)) from None
    except sa.exc.DatabaseError as error:
        if is_damaged(error):
            raise damaged(target, error) from None
        raise UsageError(f"{target} is not a perflab database ({first_line(error)})") from None


def _check_or_create_locked(engine: Engine, target: str, *, create: bool) -> None:
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite" and create:
            conn = conn.execution_options(isolation_level="AUTOCOMMIT")  # we say BEGIN ourselves
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            try:
                _check_or_create_in(conn, target, create=create)
            except BaseException:
                with contextlib.suppress(sa.exc.OperationalError):  # SQLite may have rolled back
                    conn.exec_driver_sql("ROLLBACK")
                raise
            conn.exec_driver_sql("COMMIT")
            return
        with conn.begin():
            if engine.dialect.name == "postgresql":
                conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_PG_SCHEMA_LOCK)))
            _check_or_create_in(conn, target, create=create)


def _check_or_create_in(conn: sa.Connection, target: str, *, create: bool) -> None:
    inspector = sa.inspect(conn)
    tables = set(inspector.get_table_names())
    if meta.name not in tables:
        if tables:
            raise UsageError(f"{target} is not a perflab database (it has other tables)",
                             hint="pass another file with --db or PERFLAB_DB")
        if not create:
            raise UsageError(f"{target} holds no perflab data yet",
                             hint="record something with 'perflab run' first")
        metadata.create_all(conn)
        rows = [{"key": "application", "value": APPLICATION},
                {"key": "schema_version", "value": str(SCHEMA_VERSION)}]
        statement = insert_or_ignore(conn.dialect.name, meta, ["key"])
        conn.execute(meta.insert() if statement is None else statement, rows)
        return
    values = dict(conn.execute(sa.select(meta.c.key, meta.c.value)).all())
    if values.get("application") != APPLICATION:
        raise UsageError(f"{target} is not a perflab database")
    version = _schema_version(values.get("schema_version"), target)
    if version > SCHEMA_VERSION:
        raise EnvironmentProblem(
            f"{target} was written by a newer perflab (schema {version}; "
            f"this perflab reads up to {SCHEMA_VERSION})", hint="upgrade perflab")
    if version < SCHEMA_VERSION:
        migrate(conn, version)


def _schema_version(value: object, target: str) -> int:
    """perflab_meta's schema_version as perflab writes it (1, 2, ...); anything else (edited,
    emptied, deleted) is a damaged store, refused before a migration could write to it."""
    text = "" if value is None else str(value)
    if text.isascii() and text.isdigit() and len(text) < 10 and int(text) >= 1:
        return int(text)
    raise EnvironmentProblem(f"the database {target} is damaged: its perflab_meta.schema_version is "
                             f"{'missing' if value is None else repr(text[:20])}, not a version perflab writes; "
                             "perflab reads and writes nothing in it")


def _operational_problem(target: str, error: sa.exc.OperationalError) -> Exception:
    if is_disk_full(error, target):
        return disk_full(target)
    text = first_line(error)
    if "readonly" in text or "read-only" in text or "unable to open" in text:
        return EnvironmentProblem(f"cannot write the database {target}: {text}")
    if "file is not a database" in text:
        return UsageError(f"{target} is not a perflab database (not an SQLite file)")
    return EnvironmentProblem(f"cannot use the database {target}: {text}")
