"""Where the database lives: ``--db PATH|URL``, else ``PERFLAB_DB``, else the XDG data dir."""

from __future__ import annotations

import os
from pathlib import Path


def default_path() -> Path:
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "perflab" / "perflab.db"


def resolve(target: str | None) -> str:
    """The database named by the user, the environment, or the default, as text."""
    return target or os.environ.get("PERFLAB_DB") or str(default_path())


def is_url(target: str) -> bool:
    return "://" in target


def sqlalchemy_url(target: str) -> str:
    """A SQLAlchemy URL; plain PostgreSQL URLs use the psycopg (v3) driver we ship."""
    if not is_url(target):
        return f"sqlite:///{Path(target).expanduser()}"
    for prefix in ("postgresql://", "postgres://"):
        if target.startswith(prefix):
            return "postgresql+psycopg://" + target[len(prefix):]
    return target
