"""Shared fixtures: a real SQLite file, a real PostgreSQL server, and the perflab CLI."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
PERFLAB = [sys.executable, "-m", "perflab.cli.main"]


def _pg_bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    """A throwaway PostgreSQL server on 127.0.0.1; ``stop()`` and ``start()`` keep its data
    and port (an outage), ``close()`` removes it."""

    def __init__(self):
        initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
        if not (initdb and pg_ctl):
            raise RuntimeError("PostgreSQL server binaries not installed (install.sh --test installs them)")
        self.directory = Path(tempfile.mkdtemp(prefix="perflab-pg-", dir="/tmp"))
        self.as_user: list[str] = []
        if os.geteuid() == 0:  # postgres refuses to run as root
            shutil.chown(self.directory, "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.pg_ctl, self.data, self.port = pg_ctl, self.directory / "data", _free_port()
        subprocess.run([*self.as_user, initdb, "-D", str(self.data), "-A", "trust", "-U", "postgres"],
                       check=True, capture_output=True)
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}"
        self.start()

    def start(self) -> None:
        subprocess.run([*self.as_user, self.pg_ctl, "-D", str(self.data), "-w", "-t", "60",
                        "-l", str(self.directory / "log"),
                        "-o", f"-h 127.0.0.1 -p {self.port} -k {self.directory} -F", "start"],
                       check=True, capture_output=True)

    def stop(self) -> None:
        subprocess.run([*self.as_user, self.pg_ctl, "-D", str(self.data), "-m", "immediate", "stop"],
                       capture_output=True)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


def require_postgres() -> None:
    """Skip a test where PostgreSQL is not installed; in CI, fail it (install.sh --test installs it)."""
    if not (_pg_bin("initdb") and _pg_bin("pg_ctl")):
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not installed; install.sh --test installs it")
        pytest.skip("PostgreSQL server binaries not installed")


@contextmanager
def pg_server() -> Iterator[str]:
    """A throwaway PostgreSQL server for a with-block (bench/ scripts): its URL; stopped and
    removed however the block ends."""
    server = PostgresServer()
    try:
        yield server.url
    finally:
        server.close()


@pytest.fixture(scope="session")
def postgres_server():
    """A throwaway PostgreSQL server on 127.0.0.1, stopped and removed at the end."""
    require_postgres()
    server = PostgresServer()
    try:
        yield server.url
    finally:
        server.close()


def _new_pg_database(server: str) -> str:
    import sqlalchemy as sa
    name = "t_" + uuid.uuid4().hex[:12]
    engine = sa.create_engine(server.replace("postgresql://", "postgresql+psycopg://") + "/postgres",
                              isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return f"{server}/{name}"


@pytest.fixture(params=["sqlite", "postgresql"])
def db_target(request, tmp_path) -> str:
    """A fresh database of each kind: a file path, or a PostgreSQL URL."""
    if request.param == "sqlite":
        return str(tmp_path / "perflab.db")
    return _new_pg_database(request.getfixturevalue("postgres_server"))


@pytest.fixture
def sqlite_db(tmp_path) -> str:
    return str(tmp_path / "perflab.db")


@contextmanager
def serving(db: str, *extra: str, env: dict | None = None) -> Iterator[tuple[str, int, str]]:
    """A real `perflab serve` on a free port of 127.0.0.1 over ``db``: (url, port, db) once it
    answers; stopped (SIGINT, then killed) however the block ends."""
    import time
    import urllib.error
    import urllib.request
    port = _free_port()
    environment = dict(os.environ, **(env or {}))
    environment.pop("PERFLAB_DB", None)
    process = subprocess.Popen([*PERFLAB, "--db", db, "serve", "--port", str(port), *extra], env=environment,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/", timeout=5).read()
                break
            except (urllib.error.URLError, ConnectionError):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"perflab serve did not start: {process.stderr.read().decode()}") from None
                time.sleep(0.2)
        yield url, port, db
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run_cli(*args: str, db: str | None = None, env: dict | None = None, timeout: float = 120,
            check: bool = False) -> subprocess.CompletedProcess:
    """Run the real perflab CLI in a child process, as a user would."""
    environment = dict(os.environ, **(env or {}))
    environment.pop("PERFLAB_DB", None)
    command = [*PERFLAB, *(["--db", db] if db else []), *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                            env=environment, stdin=subprocess.DEVNULL)
    if check and result.returncode != 0:
        raise AssertionError(f"perflab {' '.join(args)} exited {result.returncode}:\n{result.stderr}")
    return result


# -- Redis (the fleet's broker) -------------------------------------------------------------
def _die_with_parent() -> None:
    """In a child before exec: the kernel kills it when pytest dies, even by SIGKILL."""
    import ctypes
    import signal
    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)   # PR_SET_PDEATHSIG


class RedisServer:
    """A real redis-server on 127.0.0.1; ``restart()`` keeps its port (and, with
    ``persistent``, its data: append-only file in a temporary directory)."""

    def __init__(self, persistent: bool = False):
        binary = shutil.which("redis-server")
        if not binary:
            if os.environ.get("CI"):
                pytest.fail("redis-server is not installed; install.sh --test installs it")
            pytest.skip("redis-server not installed")
        self.binary = binary
        self.port = _free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="perflab-redis-", dir="/tmp"))
        self.persistent = persistent
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        persistence = (["--appendonly", "yes", "--appendfsync", "always"] if self.persistent
                       else ["--appendonly", "no"])
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port),
             "--bind", "127.0.0.1", "--save", "", *persistence, "--dir", str(self.directory),
             "--daemonize", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        import time
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()   # abrupt on purpose: what a crash of the broker does
            self.process.wait(timeout=10)
            self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture
def redis_server():
    """A throwaway Redis server on a free 127.0.0.1 port, killed at the end of the test."""
    server = RedisServer()
    try:
        yield server
    finally:
        server.close()
