"""Database failures a user can do something about, as one line each: a damaged SQLite
file (overwritten pages, text that is not UTF-8) and a full disk. Every command that opens
the store goes through ``Store``, which turns these into a PerflabError; anything else the
driver raises is a bug and keeps its traceback."""

from __future__ import annotations

import errno
import os

import sqlalchemy as sa

from perflab.model.errors import EnvironmentProblem, PerflabError
from perflab.store import location

_DAMAGED = ("malformed", "file is not a database", "could not decode")
_FULL = ("database or disk is full",)
#: less free room than this beside an SQLite file is a full disk: SQLite says "disk I/O error"
#: when it cannot make or grow its -shm (32 KiB) there
ROOM_BYTES = 64 * 1024


def first_line(error: BaseException) -> str:
    """The error's first line (the driver's own message under SQLAlchemy's), at most 200 characters."""
    original = getattr(error, "orig", None) or error
    text = str(original).strip()
    return text.splitlines()[0][:200] if text else type(original).__name__


def is_disk_full(error: BaseException, target: str | None = None) -> bool:
    """SQLite's 'database or disk is full', or an OSError of ENOSPC/EDQUOT, anywhere in the
    chain; with the SQLite file ``target``, also SQLite's 'disk I/O error' when the file
    system holding it has no room left (`no_room`)."""
    while error is not None:
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(error, sa.exc.SQLAlchemyError):
            line = first_line(error).lower()
            if any(s in line for s in _FULL) or ("disk i/o error" in line and target and no_room(target)):
                return True
        error = error.__cause__ or error.__context__   # type: ignore[assignment]
    return False


def no_room(target: str) -> bool:
    """Whether the file system of the SQLite file ``target`` (a path, not a URL) has under
    ROOM_BYTES free for this user."""
    if location.is_url(target):
        return False
    try:
        found = os.statvfs(os.path.dirname(os.path.abspath(os.path.expanduser(target))))
    except OSError:
        return False
    return found.f_bavail * found.f_frsize < ROOM_BYTES


def is_damaged(error: BaseException) -> bool:
    """An SQLite file whose pages or text cannot be read back."""
    if isinstance(error, UnicodeDecodeError):
        return True
    return isinstance(error, sa.exc.DatabaseError) and any(s in first_line(error).lower() for s in _DAMAGED)


def disk_full(target: str) -> EnvironmentProblem:
    return EnvironmentProblem(f"disk full: cannot write the database {target}",
                              hint="free space and run the command again")


def damaged(target: str, error: BaseException) -> EnvironmentProblem:
    return EnvironmentProblem(
        f"the database {target} is damaged ({first_line(error)}); perflab reads and writes nothing more "
        "in it", hint=f"'sqlite3 {target} .recover' may save its data into a new file")


def translated(target: str, error: BaseException) -> PerflabError | None:
    """The one line for ``error`` raised while using the store at ``target``, or None (a
    PerflabError already is one line: the runner's names the samples it kept)."""
    if isinstance(error, PerflabError):
        return None
    if is_disk_full(error, target):
        return disk_full(target)
    if is_damaged(error):
        return damaged(target, error)
    return None
