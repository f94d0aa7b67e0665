"""Samples measured but not yet in the database: one line each in a file beside it.

Committing to the database after every sample puts its work between two measured
processes, where it slows the next one (about 10% on a 0.6 ms command here). Appending
one line with one write() is all a sample costs instead: the kernel holds the line even
if perflab is then killed with SIGKILL, and the lines reach the database in one
transaction a second, at the end of the run, or when a later perflab finds the file of a
run whose perflab died. That later perflab first claims the file by renaming it to a
name that carries its own pid (a rename is atomic: of several perflabs recovering at
once, one wins and the rest find nothing to do); a claimed file whose claimer died too
is claimed again.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from perflab.model.records import Measurement
from perflab.store import location

_NAME = re.compile(r"\.pending-run-(\d+)(?:\.claimed-(\d+))?$")


def directory_and_prefix(target: str) -> tuple[Path, str]:
    """Where a database's pending files live: beside an SQLite file, else in the data dir."""
    if location.is_url(target):
        digest = hashlib.sha256(target.encode()).hexdigest()[:16]
        return location.default_path().parent / "pending", digest
    path = Path(target).expanduser().resolve()
    return path.parent, path.name


def path_for(target: str, run_id: int) -> Path:
    folder, prefix = directory_and_prefix(target)
    return folder / f"{prefix}.pending-run-{run_id}"


def existing(target: str) -> Iterator[tuple[int, Path, int | None]]:
    """(run id, file, pid of the perflab that claimed it or None) of every pending file."""
    folder, prefix = directory_and_prefix(target)
    if not folder.is_dir():
        return
    for path in folder.glob(f"{prefix}.pending-run-*"):
        match = _NAME.search(path.name)
        if match:
            yield int(match[1]), path, int(match[2]) if match[2] else None


def claim(path: Path) -> Path | None:
    """Take a pending file for recovery: renamed to carry our pid; None if another took it."""
    base = _NAME.sub(lambda m: f".pending-run-{m[1]}", path.name)
    claimed = path.with_name(f"{base}.claimed-{os.getpid()}")
    try:
        os.rename(path, claimed)
    except FileNotFoundError:
        return None
    return claimed


def unclaim(claimed: Path) -> None:
    """Give a claimed file back its own name (its run turned out to be alive)."""
    with contextlib.suppress(FileNotFoundError):
        os.rename(claimed, claimed.with_name(_NAME.sub(lambda m: f".pending-run-{m[1]}",
                                                       claimed.name)))


def process_alive(pid: int) -> bool:
    """Whether a process of this machine lives (a pending file's claimer)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class PendingFile:
    """The append-only file of one running run."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)

    def append(self, point_id: int, repetition: int, measured_at: float,
               measurements: Sequence[Measurement]) -> None:
        line = json.dumps([point_id, repetition, measured_at,
                           [[m.metric, m.value, m.unit, m.status.value, m.note] for m in measurements]])
        data = line.encode() + b"\n"
        if os.write(self.fd, data) != len(data):  # one write: whole or absent (a torn end is skipped)
            raise OSError(errno.ENOSPC, "a sample's line was cut short", str(self.path))

    def truncate(self) -> None:
        os.ftruncate(self.fd, 0)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def count(path: Path) -> int:
    """The samples a pending file holds (its whole lines), 0 if it is gone."""
    try:
        return sum(1 for line in path.read_bytes().split(b"\n") if line.strip().endswith(b"]"))
    except FileNotFoundError:
        return 0


def read_rows(path: Path, run_id: int) -> list[dict[str, Any]]:
    """The sample rows in a pending file; a torn last line (power loss) is ignored."""
    rows: list[dict[str, Any]] = []
    for line in path.read_bytes().split(b"\n"):
        try:
            point_id, repetition, measured_at, values = json.loads(line)
        except ValueError:
            continue
        rows.extend({"run_id": run_id, "point_id": point_id, "repetition": repetition,
                     "metric": metric, "value": value, "unit": unit, "status": status,
                     "note": note, "measured_at": measured_at}
                    for metric, value, unit, status, note in values)
    return rows
