"""Where the database lives: ``--db PATH|URL``, else ``PERFLAB_DB``, else the XDG data dir."""

from __future__ import annotations

import os
from pathlib import Path

from perflab.model.errors import UsageError

# the URL schemes perflab stores in; any other is refused before SQLAlchemy imports a driver
POSTGRESQL_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")
SQLITE_SCHEME = "sqlite"


def default_path() -> Path:
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "perflab" / "perflab.db"


def resolve(target: str | None) -> str:
    """The database named by the user, the environment, or the default, as text: a file
    path (``sqlite:///PATH`` becomes PATH) or a checked PostgreSQL URL."""
    text = target or os.environ.get("PERFLAB_DB") or str(default_path())
    if is_url(text):
        check_url(text)
        return sqlite_path(text) or text
    return text


def check_given(text: str, option: str = "--db") -> None:
    """Refuse a database named by ``option`` that is neither a path nor a URL: empty (it
    would mean the default store, silently), or a scheme without ``//`` (``sqlite:``,
    ``::::``), which would otherwise become a file of that name."""
    if not text.strip():
        raise UsageError(f"{option} needs a database file or URL; leave it out for the default "
                         f"({default_path()}, or $PERFLAB_DB)")
    if not is_url(text) and ":" in text.split("/", 1)[0]:
        raise UsageError(f"bad {option} {text[:60]!r}: neither a file path nor a URL (sqlite:///PATH, "
                         "postgresql://USER@HOST/DB)", hint=f"a file whose name has a colon: ./{text[:60]}")


def is_url(target: str) -> bool:
    return "://" in target


def sqlite_path(target: str) -> str | None:
    """The file of an ``sqlite:///PATH`` URL (opened as a plain path is), else None."""
    scheme, _, rest = target.partition("://")
    if scheme.lower() != SQLITE_SCHEME:
        return None
    if not rest.startswith("/") or rest in ("/", "/:memory:"):
        raise UsageError(f"bad database URL {target!r}: an SQLite store is a file, sqlite:///PATH")
    return rest[1:]


def check_url(target: str) -> None:
    """Refuse a URL of a database perflab does not store in, naming those it does."""
    scheme = target.partition("://")[0].lower()
    if scheme not in (*POSTGRESQL_SCHEMES, SQLITE_SCHEME):
        raise UsageError(f"unsupported database URL scheme {scheme[:40]!r}: perflab stores in SQLite "
                         "(a file path, or sqlite:///PATH) or PostgreSQL (postgresql://USER@HOST/DB, "
                         "driver psycopg)")


def sqlalchemy_url(target: str) -> str:
    """A SQLAlchemy URL; plain PostgreSQL URLs use the psycopg (v3) driver we ship."""
    if not is_url(target):
        return f"sqlite:///{Path(target).expanduser()}"
    for prefix in ("postgresql://", "postgres://"):
        if target.startswith(prefix):
            return "postgresql+psycopg://" + target[len(prefix):]
    return target
