"""Killing perflab mid-run loses at most the sample in flight; --resume finishes the run."""

import json
import os
import signal
import sqlite3
import subprocess
import time

import pytest

from conftest import PERFLAB, run_cli
from proc import running, wait_for


def _start(db, *args):
    env = dict(os.environ)
    env.pop("PERFLAB_DB", None)
    return subprocess.Popen([*PERFLAB, "--db", db, "run", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL)


def _wait_for_samples(db, at_least, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(db) as conn:
                count = conn.execute("SELECT COUNT(DISTINCT repetition || '/' || point_id) "
                                     "FROM samples").fetchone()[0]
            if count >= at_least:
                return count
        except sqlite3.OperationalError:
            pass
        time.sleep(0.05)
    raise AssertionError("perflab recorded no samples in time")


def _time_samples(db, run="1"):
    data = json.loads(run_cli("export", run, db=db, check=True).stdout)
    return data["run"], [s for s in data["samples"] if s["metric"] == "time"]


def test_sigkill_keeps_finished_samples_and_resume_completes(sqlite_db):
    proc = _start(sqlite_db, "-n", "40", "-p", "d=1,2", "--label", "k", "--", "sleep", "0.0{d}")
    _wait_for_samples(sqlite_db, 5)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    run, kept = _time_samples(sqlite_db)
    assert 5 <= len(kept) < 80
    assert all(s["status"] == "ok" for s in kept)
    listing = run_cli("runs", db=sqlite_db, check=True).stdout
    assert "interrupted" in listing  # its perflab is gone, so it is not "running"

    resumed = run_cli("run", "--resume", "k", db=sqlite_db, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    run, samples = _time_samples(sqlite_db)
    assert run["status"] == "complete"
    pairs = sorted((json.dumps(s["params"]), s["repetition"]) for s in samples)
    assert len(pairs) == 80 and len(set(pairs)) == 80  # each (point, repetition) exactly once
    again = run_cli("run", "--resume", "k", db=sqlite_db)
    assert again.returncode == 2 and "already complete" in again.stderr


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_marks_the_run_and_keeps_samples(sqlite_db, signum, tmp_path):
    marker = tmp_path / "child"
    # write, then rename: a signal between the shell's truncation and its write must not
    # leave an empty marker (the last CI run saw exactly that)
    proc = _start(sqlite_db, "-n", "1000", "--shell", "--",
                  f"echo $$ > {marker}.new && mv {marker}.new {marker}; sleep 0.02")
    _wait_for_samples(sqlite_db, 3)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 128 + signum   # 130 for SIGINT, 143 for SIGTERM
    assert "interrupted: run 1 keeps its" in stderr and "perflab run --resume 1" in stderr
    run, kept = _time_samples(sqlite_db)
    assert run["status"] == "interrupted" and run["finished_at"]
    assert len(kept) >= 3
    child = int(marker.read_text())
    assert wait_for(lambda: not running(child), 10)   # killed with the run: gone once reaped
