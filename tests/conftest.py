"""Shared fixtures: a real SQLite file, a real PostgreSQL server, and the perflab CLI."""

from __future__ import annotations

import glob
import os
import shutil
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


@pytest.fixture(scope="session")
def postgres_server():
    """A throwaway PostgreSQL server on 127.0.0.1, stopped and removed at the end."""
    if not (_pg_bin("initdb") and _pg_bin("pg_ctl")):
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not installed; install.sh --test installs it")
        pytest.skip("PostgreSQL server binaries not installed")
    with pg_server() as url:
        yield url


@contextmanager
def pg_server() -> Iterator[str]:
    """A throwaway PostgreSQL server on 127.0.0.1 for a with-block (tests and bench/ scripts):
    its URL; stopped and removed however the block ends."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not (initdb and pg_ctl):
        raise RuntimeError("PostgreSQL server binaries not installed (install.sh --test installs them)")
    directory = Path(tempfile.mkdtemp(prefix="perflab-pg-", dir="/tmp"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # postgres refuses to run as root
        shutil.chown(directory, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = directory / "data", _free_port()
    subprocess.run([*as_user, initdb, "-D", str(data), "-A", "trust", "-U", "postgres"],
                   check=True, capture_output=True)
    subprocess.run([*as_user, pg_ctl, "-D", str(data), "-w", "-t", "60", "-l", str(directory / "log"),
                    "-o", f"-h 127.0.0.1 -p {port} -k {directory} -F", "start"],
                   check=True, capture_output=True)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(directory, ignore_errors=True)


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
