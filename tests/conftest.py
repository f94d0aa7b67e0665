"""Shared fixtures: a real SQLite file, a real PostgreSQL server, a real Redis server, and the
perflab CLI. The PostgreSQL and Redis servers are one each for the whole session, shared by
every xdist worker (tests/services.py); a test that stops or restarts a server starts its own."""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

import forkserver
import scheduling
import services

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
PERFLAB = [sys.executable, "-m", "perflab.cli.main"]


# -- the session's shared servers (tests/services.py) ----------------------------------------
SESSION = pytest.StashKey[services.Session]()


def pytest_configure(config) -> None:
    _deliverable_interrupts()
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:                 # pytest alone, or the xdist controller: it owns the servers
        config.stash[SESSION] = session = services.Session()
        services.directory = session.directory
        _compile_perflab()
    else:
        services.directory = Path(workerinput["perflab_services"])


def _deliverable_interrupts() -> None:
    """Ctrl-C and Ctrl-\\ reach the perflab processes the tests interrupt, however the suite
    was started: a background job of a non-interactive shell starts with SIGINT and SIGQUIT
    ignored, every child inherits that, and Python then installs no KeyboardInterrupt (a
    SIGINT'd perflab ran on with its sample's program, whose load failed the tests after)."""
    for number, handler in ((signal.SIGINT, signal.default_int_handler), (signal.SIGQUIT, signal.SIG_DFL)):
        if signal.getsignal(number) == signal.SIG_IGN:
            signal.signal(number, handler)


def _compile_perflab() -> None:
    """Byte-compile perflab's sources once for the session's hundreds of perflab processes,
    which would each compile them again where PYTHONDONTWRITEBYTECODE is set (it stops only
    the writing of .pyc files, not their use; a .pyc older than its source is not used)."""
    import compileall
    compileall.compile_dir(ROOT / "src" / "perflab", quiet=2)


MAX_WORKERS = 32       # past this, starting the workers costs more than a ~1000-test suite gains


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config) -> int | None:
    """What ``-n auto`` (pyproject's addopts) means: 3 workers per 2 CPUs (the tests mostly wait
    on child processes: 2 workers kept 2 CPUs 27% busy; 4 made unguarded timing tests fail;
    bench/README.md, "Workers per CPU"). PYTEST_XDIST_AUTO_NUM_WORKERS overrides it."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None                         # xdist's own hook reads it
    cpus = len(os.sched_getaffinity(0))
    return min(MAX_WORKERS, cpus + cpus // 2)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items) -> None:
    """On an xdist worker under --dist loadgroup, the group of each test, as a ``@group`` suffix
    of its node id (what pytest-xdist 3.8 fails to add under pytest 9.2's structured node ids,
    pytest-dev/pytest-xdist#1386): its xdist_group mark's, or else, for a test using a
    module-scoped fixture, its module's, so the fixture is built once, not once per worker
    (unless marked ``spread``: cheap fixtures, long tests better spread over the workers). Then
    the order in which the units go out (tests/scheduling.py)."""
    if not (hasattr(config, "workerinput") and config.getvalue("loadgroup")):
        return
    for item in items:
        if "@" in item.nodeid.rsplit("]", 1)[-1]:
            continue                        # xdist did it (a pytest before 9.2)
        groups = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                         for m in item.iter_markers("xdist_group")})
        fixtures = getattr(item, "_fixtureinfo", None)
        if not groups and fixtures and not item.get_closest_marker("spread") and any(
                d.scope in ("module", "class", "package") for defs in fixtures.name2fixturedefs.values() for d in defs):
            groups = [item.nodeid.split("::", 1)[0]]
        if groups:
            _set_node_id(item, f"{item.nodeid}@{'_'.join(groups)}")
    scheduling.order(items)


def _set_node_id(item, nodeid: str) -> None:
    if hasattr(item, "_id"):                # pytest 9.2: structured node ids
        from _pytest.nodeid import NodeId
        item._id = NodeId.parse(nodeid)
    else:
        item._nodeid = nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    node.workerinput["perflab_services"] = str(node.config.stash[SESSION].directory)


def pytest_collection_finish(session) -> None:
    services.collected()   # an exclusive test waits for every worker's start-up to end


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A test marked ``exclusive`` (it measures the whole machine, e.g. a system-wide profile)
    runs, set-up to teardown, while no other test of the session runs, on any worker."""
    with services.machine(exclusive=item.get_closest_marker("exclusive") is not None):
        return (yield)


def pytest_unconfigure(config) -> None:
    from browser import quit_shared
    quit_shared()
    if SESSION in config.stash:
        config.stash[SESSION].close()


def _pg_bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    """A throwaway PostgreSQL server on 127.0.0.1; ``stop()`` and ``start()`` keep its data
    and port (an outage), ``close()`` removes it. With ``kept``, a directory whose data
    outlives the server (bench/ scripts): made there once, reused, only stopped by close().
    ``settings``: server parameters beside the tests' (-c NAME=VALUE)."""

    def __init__(self, register: Callable[[dict], None] | None = None, kept: Path | None = None,
                 settings: dict[str, str] | None = None):
        initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
        if not (initdb and pg_ctl):
            raise RuntimeError("PostgreSQL server binaries not installed (install.sh --test installs them)")
        self.kept = kept is not None
        if kept is not None:
            kept.mkdir(parents=True, exist_ok=True)
        self.directory = kept or Path(tempfile.mkdtemp(prefix="perflab-pg-", dir="/tmp"))
        self.as_user: list[str] = []
        if os.geteuid() == 0:  # postgres refuses to run as root
            shutil.chown(self.directory, "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.pg_ctl, self.data, self.port = pg_ctl, self.directory / "data", _free_port()
        self.settings = "".join(f" -c {name}={value}" for name, value in (settings or {}).items())
        if register:   # a kept directory outlives the session too: only stopped
            register({"run": [self._stop_command()], "remove": [] if self.kept else [str(self.directory)]})
        if not (self.data / "PG_VERSION").exists():
            made = subprocess.run([*self.as_user, initdb, "-D", str(self.data), "-A", "trust", "-U", "postgres"],
                                  capture_output=True, text=True)
            if made.returncode != 0:   # as root: a directory the postgres user cannot reach, say
                raise RuntimeError(f"initdb {self.data} failed: {(made.stderr.strip() or '?').splitlines()[-1]}")
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}"
        self.start()

    def start(self) -> None:
        # max_connections: every xdist worker's tests, their perflab processes and fleet workers share it
        subprocess.run([*self.as_user, self.pg_ctl, "-D", str(self.data), "-w", "-t", "60",
                        "-l", str(self.directory / "log"),
                        "-o", f"-h 127.0.0.1 -p {self.port} -k {self.directory} -F -c max_connections=400"
                              + self.settings,
                        "start"],
                       check=True, capture_output=True)

    def _stop_command(self) -> list[str]:
        return [*self.as_user, self.pg_ctl, "-D", str(self.data), "-m", "immediate", "stop"]

    def stop(self) -> None:
        subprocess.run(self._stop_command(), capture_output=True)

    def close(self) -> None:
        self.stop()
        if not self.kept:
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
def postgres_server() -> str:
    """The URL of the session's PostgreSQL server on 127.0.0.1 (one for every xdist worker),
    stopped and removed when the session ends. A test takes a database of its own
    (``_new_pg_database``); a test that stops the server starts its own ``PostgresServer``."""
    require_postgres()
    return services.shared("postgres", lambda register: PostgresServer(register).url)


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
                time.sleep(0.05)   # until it answers: uvicorn prints no ready line at log level warning
        yield url, port, db
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# what the interpreter reads as it starts: a run given one of these starts a fresh interpreter
_START_UP_ENVIRONMENT = ("PYTHON", "LANG", "LC_")


def _forked() -> bool:
    return os.environ.get("PERFLAB_TESTS_FORKSERVER", "1") != "0"


def perflab_argv() -> list[str]:
    """``perflab`` as an argv for Popen: tests/forkserver.py's client, or (PERFLAB_TESTS_FORKSERVER=0)
    a fresh ``python -m perflab.cli.main``. The environment is the client's own."""
    return forkserver.client_command() if _forked() else list(PERFLAB)


def perflab_shell() -> str:
    """``perflab`` for a shell line (``perflab_argv``)."""
    return shlex.join(perflab_argv())


def new_alert(store, **changes) -> int:
    """An alert written by hand (store.alerts.create): a tip regression of b's time on host h
    from commit a..a to b..b, 1 -> 2 s, untriaged, with ``changes`` to its fields; its id."""
    values = {"change_id": "c0ffee", "host": "h", "benchmark": "b", "params": {}, "metric": "time", "unit": "s",
              "direction": "lower", "kind": "regression", "before": 1.0, "after": 2.0, "change_pct": 100.0,
              "oriented_pct": -100.0, "p_value": None, "method": "tip", "state": "untriaged", "duplicate_of": None}
    return store.alerts.create({**values, **changes}, last_good="a" * 40, first_bad="b" * 40, repo=None, who="t")


def run_cli(*args: str, db: str | None = None, env: dict | None = None, timeout: float = 120,
            check: bool = False) -> subprocess.CompletedProcess:
    """Run the real perflab CLI in a child process, as a user would: forked from a server that
    has imported perflab (tests/forkserver.py), or, with PERFLAB_TESTS_FORKSERVER=0 or an
    environment the interpreter reads as it starts, a fresh ``python -m perflab.cli.main``."""
    environment = dict(os.environ, **(env or {}))
    environment.pop("PERFLAB_DB", None)
    argv = [*(["--db", db] if db else []), *args]
    if _forked() and not any(
            key.startswith(_START_UP_ENVIRONMENT) for key in env or {}):
        result = forkserver.run(PERFLAB, argv, environment, timeout)
    else:
        result = subprocess.run([*PERFLAB, *argv], capture_output=True, text=True, timeout=timeout,
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
    ``persistent``, its data: append-only file in a temporary directory). With ``register``
    (services.shared), it is the session's server: it outlives the worker that started it."""

    def __init__(self, persistent: bool = False, register: Callable[[dict], None] | None = None,
                 databases: int = 16):
        binary = shutil.which("redis-server")
        if not binary:
            if os.environ.get("CI"):
                pytest.fail("redis-server is not installed; install.sh --test installs it")
            pytest.skip("redis-server not installed")
        self.binary = binary
        self.port = _free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="perflab-redis-", dir="/tmp"))
        self.persistent, self.register, self.databases = persistent, register, databases
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        persistence = (["--appendonly", "yes", "--appendfsync", "always"] if self.persistent
                       else ["--appendonly", "no"])
        command = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", *persistence,
                   "--dir", str(self.directory), "--databases", str(self.databases), "--daemonize", "no"]
        if self.register:      # the session's: its own process group, stopped by the session's reaper
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                            start_new_session=True)
            self.register({"kill_groups": [self.process.pid], "remove": [str(self.directory)]})
        else:
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                            preexec_fn=_die_with_parent)
        self._wait_ready()

    def _wait_ready(self) -> None:
        """Until it answers PING; its exit or 20 s end the wait with an error."""
        import time
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self.process and self.process.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.02)   # not listening (or still loading its data): redis is up within milliseconds
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


REDIS_DATABASES = 4096     # one per test that asks, over the whole session


@dataclass(frozen=True)
class RedisDatabase:
    """One empty Redis database of the session's server, for one test: its ``url``."""
    url: str


@pytest.fixture
def redis_server() -> Iterator[RedisDatabase]:
    """A Redis database of its own on the session's server (127.0.0.1, one server for every
    xdist worker; Celery's keys and broadcasts are per database), emptied at the end. A test
    that stops or restarts Redis starts its own ``RedisServer``."""
    import redis
    server = services.shared("redis", lambda register: RedisServer(register=register, databases=REDIS_DATABASES).url)
    with redis.Redis.from_url(server) as first:
        number = int(first.incr("perflab-tests:databases"))   # atomic across workers
    if number >= REDIS_DATABASES:
        pytest.fail(f"the session's Redis has {REDIS_DATABASES} databases: raise REDIS_DATABASES in conftest.py")
    url = server.rsplit("/", 1)[0] + f"/{number}"
    try:
        yield RedisDatabase(url)
    finally:
        with redis.Redis.from_url(url) as database:
            database.flushdb()
