"""The perflab CLI in a child process without paying the interpreter's start-up each time.

One server per xdist worker, ``python tests/forkserver.py SOCKET``, imports perflab and its
libraries once (SQLAlchemy, numpy, pydantic: ~0.3 s of CPU a process) and then, for each
request, forks a process that takes the caller's stdin/stdout/stderr (passed as file
descriptors), environment, working directory and argv, and runs ``perflab.cli.main`` as
``python -m`` does: its own exit code, its own output, its own children, its own death (a
signal kills it, not the server). What it does not repeat is the start-up: a test of the
start-up itself (a broken import, an environment read before main) runs ``conftest.PERFLAB``.
A perflab process forked here that starts ``sys.executable -m perflab.cli.main`` (alerts
--rerun's sides) has it forked from the server too (``_python_shim``); any other command line
runs python itself.

A shell line runs it through ``shell_command()``: a client of the standard library only that
hands over its own descriptors and ends with the perflab process's exit code or signal.

Protocol on a Unix socket, one connection per run: the client sends a JSON request with the
three descriptors; the server answers the child's pid, then its wait status, one line each.
Only the standard library before the preload: the server runs this file as a script.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import signal
import socket
import sys

PRELOAD = ("perflab.cli.common", "perflab.cli.record", "perflab.cli.compare", "perflab.cli.ab",
           "perflab.cli.calibrate", "perflab.cli.history", "perflab.cli.changepoints", "perflab.cli.bisect",
           "perflab.cli.alerts", "perflab.cli.profile", "perflab.cli.machine", "perflab.cli.fleet",
           "perflab.execute.record", "perflab.store", "perflab.store.store", "perflab.analysis.compare",
           "perflab.analysis.summary", "perflab.render.runs", "perflab.render.compare",
           "sqlalchemy.dialects.sqlite", "numpy", "scipy.stats", "pydantic",
           "perflab.fleet.execution")   # before the shim (serve): a worker's jobs stay in its process group


# -- the server -------------------------------------------------------------------------------
def _preload() -> None:
    import importlib
    for name in PRELOAD:
        with contextlib.suppress(ImportError):   # the child meets the same error, as perflab would
            importlib.import_module(name)
    sys.modules.pop("perflab.cli.main", None)   # `python -m` runs it as __main__ only
    from perflab.model import run_request
    run_request._adapter()                  # a pure, cached schema: built once here, not per run
    import threading
    assert threading.active_count() == 1, "a preloaded module started a thread: fork would lose it"


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    fds = array.array("i")
    data = b""
    while not data.endswith(b"\n"):
        chunk, ancdata, _flags, _addr = conn.recvmsg(1 << 16, socket.CMSG_SPACE(3 * fds.itemsize))
        if not chunk:
            raise EOFError
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
        data += chunk
    return json.loads(data), list(fds)


def _run_perflab(request: dict, fds: list[int]) -> int:
    """In the forked child: become ``python -m perflab.cli.main ARGS``; its exit code."""
    import runpy
    import traceback
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    sys.path[0] = request["cwd"]            # as `python -m` has it
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = [_main_path(), *request["args"]]   # argv[0] as `python -m` sets it
    try:
        runpy.run_module("perflab.cli.main", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:              # what the interpreter does with sys.exit(x)
        if stop.code is None or isinstance(stop.code, int):
            code = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    return code


def _child(conn: socket.socket, request: dict, fds: list[int]) -> None:
    """In the forked child: run perflab in a grandchild, report its pid, then its status."""
    pid = os.fork()
    if pid == 0:
        conn.close()
        code = 1
        try:
            code = _run_perflab(request, fds)
            import atexit
            import threading
            threading._shutdown()           # type: ignore[attr-defined]  # as at interpreter exit
            atexit._run_exitfuncs()
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except BrokenPipeError:
                    code = 120               # the interpreter's code when flushing stdout fails
        finally:
            os._exit(code)
    for fd in fds:
        os.close(fd)
    conn.sendall(f"{pid}\n".encode())
    _, status = os.waitpid(pid, 0)
    conn.sendall(f"{status}\n".encode())


# what a perflab process forked here finds as sys.executable: python itself, except that the
# perflab processes it starts (``python -m perflab.cli.main ...``: alerts --rerun's sides) are
# forked from this server too, without an interpreter's start-up (~0.5 s of CPU, and as long
# again of the run's settle pause)
_PYTHON_SHIM = """#!/bin/sh
if [ "$1" = -m ] && [ "$2" = perflab.cli.main ]; then shift 2; exec {python} -S {client} --client {socket} "$@"; fi
exec {python} "$@"
"""


def _python_shim(path: str) -> str:
    """Write the shim beside the socket ``path``; its path."""
    import shlex
    shim = os.path.join(os.path.dirname(path), "python")
    with open(shim, "w") as out:
        out.write(_PYTHON_SHIM.format(python=shlex.quote(sys.executable), client=shlex.quote(__file__),
                                      socket=shlex.quote(path)))
    os.chmod(shim, 0o755)
    return shim


def serve(path: str) -> None:
    _preload()
    sys.executable = _python_shim(path)     # after the preload: module constants keep python itself
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        try:
            request, fds = _receive(conn)
        except (EOFError, OSError, ValueError):
            conn.close()
            continue
        if os.fork() == 0:
            listener.close()
            try:
                _child(conn, request, fds)
            finally:
                os._exit(0)
        conn.close()
        for fd in fds:
            os.close(fd)
        while True:                          # reap the reporters that have ended
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break


# -- the client (the test's side) -------------------------------------------------------------
_server: tuple[object, str] | None = None     # (the Popen, its socket path), one per test process


def _die_with_parent() -> None:
    import ctypes
    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)   # PR_SET_PDEATHSIG


def _socket_path() -> str:
    import subprocess
    import tempfile
    global _server
    if _server is None or _server[0].poll() is not None:   # type: ignore[attr-defined]
        directory = tempfile.mkdtemp(prefix="perflab-forkserver-", dir="/tmp")
        path = os.path.join(directory, "socket")
        environment = {k: v for k, v in os.environ.items() if k != "PERFLAB_DB"}
        process = subprocess.Popen([sys.executable, __file__, path], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, env=environment, preexec_fn=_die_with_parent)
        assert process.stdout is not None
        if process.stdout.readline().strip() != b"ready":
            raise RuntimeError("the perflab fork server did not start")
        _server = (process, path)
    return _server[1]


def run(command: list[str], args: list[str], env: dict[str, str], timeout: float):
    """Like ``subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout,
    stdin=DEVNULL)`` for ``command`` = ``[python, -m, perflab.cli.main]`` + ``args``."""
    import locale
    import selectors
    import subprocess
    import time
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    devnull = os.open(os.devnull, os.O_RDONLY)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(_socket_path())
        request = {"args": args, "env": env, "cwd": os.getcwd()}
        conn.sendmsg([json.dumps(request).encode() + b"\n"],
                     [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [devnull, out_w, err_w]))])
    finally:
        for fd in (out_w, err_w, devnull):
            os.close(fd)
    deadline = time.monotonic() + timeout
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    replies = b""
    pid: int | None = None
    with selectors.DefaultSelector() as selector:
        for fd in (out_r, err_r, conn.fileno()):
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            ready = selector.select(max(left, 0)) if left > 0 else []
            if not ready:
                if pid is not None:
                    _kill(pid)
                for fd in chunks:
                    os.close(fd)
                conn.close()
                raise subprocess.TimeoutExpired(command + args, timeout)
            for key, _ in ready:
                data = os.read(key.fd, 1 << 16) if key.fd in chunks else conn.recv(64)
                if not data:
                    selector.unregister(key.fd)
                elif key.fd in chunks:
                    chunks[key.fd].append(data)
                else:
                    replies += data
                    if pid is None and b"\n" in replies:
                        pid = int(replies.split(b"\n", 1)[0])
    conn.close()
    for fd in chunks:
        os.close(fd)
    lines = replies.split(b"\n")
    if len(lines) < 3:
        raise RuntimeError(f"the perflab fork server ended the run without its status: {replies!r}")
    encoding = locale.getpreferredencoding(False)

    def text(fd: int) -> str:          # as subprocess's text mode: universal newlines
        return b"".join(chunks[fd]).decode(encoding).replace("\r\n", "\n").replace("\r", "\n")
    return subprocess.CompletedProcess(command + args, os.waitstatus_to_exitcode(int(lines[1])),
                                       text(out_r), text(err_r))


def _kill(pid: int, number: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, number)


def _main_path() -> str:
    import importlib.util
    spec = importlib.util.find_spec("perflab.cli.main")
    assert spec is not None and spec.origin is not None
    return spec.origin


def client_command() -> list[str]:
    """The argv that runs ``perflab``: a client (the standard library only, no site) that hands
    the server its own stdin/stdout/stderr, environment and working directory, and ends as the
    perflab process ends (its exit code, or its signal)."""
    return [sys.executable, "-S", __file__, "--client", _socket_path()]


def shell_command() -> str:
    """``client_command`` for a shell line."""
    import shlex
    return shlex.join(client_command())


def _client(path: str, args: list[str]) -> None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    request = {"args": args, "env": dict(os.environ), "cwd": os.getcwd()}
    conn.sendmsg([json.dumps(request).encode() + b"\n"],
                 [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
    reader = conn.makefile("rb")
    pid = int(reader.readline())
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):   # what a shell or a timeout sends
        signal.signal(number, lambda received, _frame: _kill(pid, received))
    code = os.waitstatus_to_exitcode(int(reader.readline()))
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__":
    if sys.argv[1] == "--client":
        _client(sys.argv[2], sys.argv[3:])
    else:
        serve(sys.argv[1])
