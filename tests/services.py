"""Servers shared by a whole test session, whichever xdist worker runs the tests using them.

The session (pytest alone, or the xdist controller) owns a directory and a reaper process,
``python tests/services.py DIR``, which holds the read end of a pipe whose write end only
pytest holds. The first test that needs a server starts it under an flock of DIR, records
its URL and how to stop it there; later tests, in any worker, wait on the lock and read the
URL. When pytest ends, however it ends (even by SIGKILL), the pipe closes and the reaper runs
every stop recorded in DIR, then removes DIR. Only the standard library: the reaper runs it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from proc import wait_for

REAPER_STOP_S = 60
directory: Path | None = None     # the session's, set by conftest.py in pytest_configure


class Session:
    """The directory of one test session's shared servers and the reaper that stops them."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="perflab-tests-", dir="/tmp"))
        read, self._write = os.pipe()          # both ends close-on-exec: no child inherits the write end
        self.reaper = subprocess.Popen([sys.executable, __file__, str(self.directory)], stdin=read,
                                       stdout=subprocess.PIPE, start_new_session=True)   # Ctrl-C is not for it
        os.close(read)

    def close(self) -> None:
        """Stop every server of the session and wait until they are stopped (the reaper's line);
        the reaper goes on removing their files (a PostgreSQL of many databases takes a while)."""
        if self._write >= 0:
            os.close(self._write)
            self._write = -1
            assert self.reaper.stdout is not None
            self.reaper.stdout.readline()      # "stopped", or EOF should the reaper die


def register(name: str, stop: dict) -> None:
    """Record how to stop ``name`` (see ``shared``): the reaper does it when the session ends."""
    if directory is None:
        raise RuntimeError("no test session: tests/conftest.py sets services.directory")
    partial = directory / f"{name}.stop.partial"
    partial.write_text(json.dumps(stop))
    partial.rename(directory / f"{name}.stop.json")


def shared(name: str, start: Callable[[Callable[[dict], None]], str]) -> str:
    """The URL of the session's server ``name``, started once by ``start(register)``: it calls
    ``register(stop)`` before it starts anything, with what stops and removes it (``stop``: a dict
    of ``run``: argvs, ``kill_groups``: process groups, ``remove``: paths)."""
    if directory is None:
        raise RuntimeError("no test session: tests/conftest.py sets services.directory")
    with open(directory / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)       # a worker starting it holds this: the others wait here
        url_file = directory / f"{name}.url"
        if url_file.exists():
            return url_file.read_text()
        url = start(lambda stop: register(name, stop))
        url_file.write_text(url)
        return url


_held: IO[str] | None = None       # this process's hold of machine.lock while a test runs
COLLECTED_WAIT_S = 120.0   # a worker not collected by then has failed its start: go on without it


def collected() -> None:
    """This worker has collected its tests: its start-up burst (interpreter, imports, collection)
    is over."""
    if directory is not None:
        (directory / f"collected-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}").touch()


def _await_every_worker() -> None:
    """Until every worker of the session has collected (bounded): a worker's start-up runs
    outside the machine's lock, and an exclusive test must not measure beside it."""
    assert directory is not None
    session = directory
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    wait_for(lambda: len(list(session.glob("collected-*"))) >= workers, COLLECTED_WAIT_S)


@contextmanager
def machine(exclusive: bool) -> Iterator[None]:
    """Hold the session's machine while a test runs: shared by every test, alone for a test that
    measures the whole machine (``exclusive``). A gate taken by the exclusive test first keeps new
    tests from starting while it waits for the running ones to end (no starving it)."""
    global _held
    if directory is None:
        yield
        return
    with open(directory / "machine.gate", "a") as gate, open(directory / "machine.lock", "a") as lock:
        fcntl.flock(gate, fcntl.LOCK_EX)
        if exclusive:
            _await_every_worker()
            fcntl.flock(lock, fcntl.LOCK_EX)     # every running test has ended; none starts: gate held
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
                fcntl.flock(gate, fcntl.LOCK_UN)
        else:
            fcntl.flock(lock, fcntl.LOCK_SH)
            fcntl.flock(gate, fcntl.LOCK_UN)
            _held = lock
            try:
                yield
            finally:
                _held = None
                fcntl.flock(lock, fcntl.LOCK_UN)


@contextmanager
def alone() -> Iterator[None]:
    """Inside a test that holds the machine shared: the machine alone for a block (what a fixture
    records and a test then judges), shared again after it. It lets go of its share before it
    queues at the gate, so two workers asking at once take turns (no deadlock). As an exclusive
    test, it waits for every worker's start-up to end."""
    lock = _held
    if directory is None or lock is None:
        yield                                # pytest without the session's lock, or already alone
        return
    fcntl.flock(lock, fcntl.LOCK_UN)
    with open(directory / "machine.gate", "a") as gate:
        fcntl.flock(gate, fcntl.LOCK_EX)
        _await_every_worker()
        fcntl.flock(lock, fcntl.LOCK_EX)         # every other running test has ended; none starts
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_SH)     # gate still held: no exclusive waiter to race
            fcntl.flock(gate, fcntl.LOCK_UN)


def reap(where: Path) -> None:
    """Run every stop recorded in ``where``, say "stopped" on stdout, then remove their files."""
    stops = [json.loads(record.read_text()) for record in sorted(where.glob("*.stop.json"))]
    for stop in stops:
        for argv in stop.get("run", []):
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                subprocess.run(argv, capture_output=True, timeout=REAPER_STOP_S)
        for group in stop.get("kill_groups", []):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
    with contextlib.suppress(OSError):
        print("stopped", flush=True)
        sys.stdout.close()
    for stop in stops:
        for path in stop.get("remove", []):
            shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.stdin.buffer.read()                    # EOF: pytest has ended, one way or another
    reap(Path(sys.argv[1]))
