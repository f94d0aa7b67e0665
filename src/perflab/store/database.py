"""Opening a perflab database: create it, or check that it is ours and not from the future."""

from __future__ import annotations

import os
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from perflab.model.errors import EnvironmentProblem, UsageError
from perflab.store import location
from perflab.store.schema import (
    APPLICATION, SCHEMA_VERSION, meta, metadata, profile_symbols, profile_traces,
)

SQLITE_MAGIC = b"SQLite format 3\x00"



def _add_profile_tables(conn: sa.Connection) -> None:
    """Schema 2: the profile tables (a schema-1 database has none)."""
    profile_symbols.create(conn, checkfirst=True)
    profile_traces.create(conn, checkfirst=True)


# version -> function(connection) upgrading from version-1
MIGRATIONS: dict[int, object] = {2: _add_profile_tables}


def open_engine(target: str | None, *, create: bool) -> Engine:
    """An engine on a checked perflab database.

    ``create`` is for commands that write (run, import): they may create the file.
    Readers get a clear error instead of an empty new database.
    """
    target = location.resolve(target)
    if location.is_url(target):
        engine = _url_engine(target)
    else:
        engine = _sqlite_engine(Path(target).expanduser(), create=create)
    try:
        _check_or_create(engine, target, create=create)
        if engine.dialect.name == "sqlite" and create:
            with engine.connect() as conn:  # persistent in the file; not inside a transaction
                conn.exec_driver_sql("PRAGMA journal_mode=WAL")
    except BaseException:
        engine.dispose()
        raise
    return engine


def _sqlite_engine(path: Path, *, create: bool) -> Engine:
    if path.exists():
        if path.is_dir():
            raise UsageError(f"database {path} is a directory, not a perflab database")
        with path.open("rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
        if head and head != SQLITE_MAGIC:
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


def _existing_ancestor(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _url_engine(target: str) -> Engine:
    url = location.sqlalchemy_url(target)
    try:
        return sa.create_engine(url, pool_pre_ping=True)
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError) as error:
        raise UsageError(f"bad database URL {target!r}: {error}") from None


def _check_or_create(engine: Engine, target: str, *, create: bool) -> None:
    try:
        with engine.begin() as conn:
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
                conn.execute(meta.insert(), [
                    {"key": "application", "value": APPLICATION},
                    {"key": "schema_version", "value": str(SCHEMA_VERSION)},
                ])
                return
            values = dict(conn.execute(sa.select(meta.c.key, meta.c.value)).all())
            if values.get("application") != APPLICATION:
                raise UsageError(f"{target} is not a perflab database")
            version = int(values.get("schema_version", "0"))
            if version > SCHEMA_VERSION:
                raise EnvironmentProblem(
                    f"{target} was written by a newer perflab (schema {version}; "
                    f"this perflab reads up to {SCHEMA_VERSION})", hint="upgrade perflab")
            if version < SCHEMA_VERSION:
                _migrate(conn, version)
    except sa.exc.OperationalError as error:
        raise _operational_problem(target, error) from None
    except sa.exc.DatabaseError as error:
        raise UsageError(f"{target} is not a perflab database ({_first_line(error)})") from None


def _migrate(conn: sa.Connection, version: int) -> None:
    for step in range(version + 1, SCHEMA_VERSION + 1):
        MIGRATIONS[step](conn)  # type: ignore[operator]
    conn.execute(meta.update().where(meta.c.key == "schema_version")
                 .values(value=str(SCHEMA_VERSION)))


def _operational_problem(target: str, error: sa.exc.OperationalError) -> Exception:
    text = _first_line(error)
    if "readonly" in text or "read-only" in text or "unable to open" in text:
        return EnvironmentProblem(f"cannot write the database {target}: {text}")
    if "file is not a database" in text:
        return UsageError(f"{target} is not a perflab database (not an SQLite file)")
    return EnvironmentProblem(f"cannot use the database {target}: {text}")


def _first_line(error: Exception) -> str:
    original = getattr(error, "orig", None) or error
    return str(original).strip().splitlines()[0] if str(original).strip() else type(original).__name__
