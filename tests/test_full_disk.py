"""A full disk (issue 42, case 9), on a real small tmpfs mounted for the test (root only):
the run stops with one line naming the samples it kept and how to finish, nothing written
is lost, readers read while the disk is still full, `run --resume` completes once there is
space, and a new database that could not be begun leaves no 0-byte file."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import run_cli

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mount"),
                                reason="mounting a tmpfs needs root and mount(8)")


@pytest.fixture
def small_disk(tmp_path) -> Iterator[Path]:
    """A 1 MiB tmpfs; `remount(size)` gives it room later."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _remount(mount: Path, size: str) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(mount)], check=True)


def _fill(mount: Path) -> None:
    """Take whatever room the stopped run's exit gave back (SQLite checkpoints and removes its
    -wal as it closes): the disk is full again, as the readers below must find it."""
    fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)


def _time_samples(db: Path) -> int:
    """The samples of time the file holds, read as perflab's readers read it: read-only, or
    immutable where a full disk leaves no room for the -shm a read-only WAL reader makes."""
    query = "SELECT count(*) FROM samples WHERE metric = 'time'"
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return conn.execute(query).fetchone()[0]
    except sqlite3.OperationalError:
        with sqlite3.connect(f"file:{db}?immutable=1", uri=True) as conn:
            return conn.execute(query).fetchone()[0]


def test_a_full_disk_stops_the_run_in_one_line_keeps_every_sample_and_resume_finishes(small_disk):
    db = small_disk / "perflab.db"
    stopped = run_cli("run", "-q", "-n", "4000", "--", "true", db=str(db), timeout=600)
    assert stopped.returncode == 3, stopped.stderr
    [line] = stopped.stderr.strip().splitlines()
    said = re.fullmatch(r"perflab: error: disk full: (\d+) samples kept in (\S+); free space and "
                        r"`perflab run --resume (\d+)`", line)
    assert said, line
    kept, pending, run_id = int(said[1]), Path(said[2]), said[3]
    assert pending.exists() and kept > 0
    _fill(small_disk)
    # readers read while the disk is still full: what the database holds, nothing written
    listing = run_cli("runs", db=str(db))
    assert listing.returncode == 0 and f" {run_id} " in listing.stdout, listing.stderr
    assert run_cli("show", run_id, db=str(db)).returncode == 0
    in_database = _time_samples(db)   # what the flushes before the disk filled committed (maybe none)
    exported = run_cli("export", run_id, "--format", "csv", db=str(db))
    assert exported.returncode == 0 and exported.stdout.count(",time,") == in_database, exported.stderr
    assert pending.exists()   # still waiting for space, under the name the line gave
    assert run_cli("alerts", db=str(db)).returncode == 0
    # a writer on the full disk says so in one line, and leaves the pending file as it was
    hyperfine = small_disk.parent / "h.json"
    hyperfine.write_text('{"results": [{"command": "x", "times": [0.1, 0.2, 0.3]}]}')
    for argv in (["run", "-q", "-n", "3", "--", "true"], ["run", "--resume", run_id, "-q"],
                 ["import", "hyperfine", str(hyperfine), "--label", "h"]):
        again = run_cli(*argv, db=str(db))
        assert again.returncode == 3 and len(again.stderr.strip().splitlines()) == 1, (argv, again.stderr)
        assert "disk full" in again.stderr
        assert pending.exists()
    _remount(small_disk, "256m")
    resumed = run_cli("run", "--resume", run_id, "-q", db=str(db), timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert _time_samples(db) == 4000 >= in_database + kept   # what was kept came in; the rest was run
    assert not pending.exists()
    status = run_cli("runs", db=str(db)).stdout
    assert re.search(rf"^ *{run_id} .* complete ", status, re.M), status


def test_a_new_database_on_a_full_disk_leaves_no_file(small_disk):
    filler = small_disk / "filler"
    with open(filler, "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
        except OSError:
            pass
    db = small_disk / "new.db"
    outcome = run_cli("run", "-q", "-n", "3", "--", "true", db=str(db))
    assert outcome.returncode == 3 and len(outcome.stderr.strip().splitlines()) == 1, outcome.stderr
    assert "disk is full" in outcome.stderr or "disk full" in outcome.stderr
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]
