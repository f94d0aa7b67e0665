"""Local servers that a workload's client measures against (tbench_srv, iperf3 -s).

A workload starts its server in ``session()`` and the server must never outlive perflab:

- it gets a session (and process group) of its own: ``stop`` kills the group, so the
  per-connection children a forking server made die with it, and a Ctrl-C typed at the
  terminal reaches perflab, which then stops the server itself;
- it is started with ``PR_SET_PDEATHSIG=SIGKILL``: the kernel kills it when perflab
  dies, even by SIGKILL, when no ``finally`` runs;
- it is ready when it has a listening TCP socket on its port, read from ``/proc``:
  no probe connection, which a server such as iperf3 would take for a client;
- ``private_network`` puts it in a network namespace of its own with only loopback up,
  for a server that cannot be told where to listen: nothing outside the machine can
  reach it, and its fixed port cannot clash with another run. Its clients then join
  that namespace (``nsenter --net=<server.netns>``).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import os
import signal
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import IO

from perflab.model.errors import EnvironmentProblem

READY_TIMEOUT_S = 10.0
_PR_SET_PDEATHSIG = 1
_CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
_IFREQ = struct.Struct("16sH14x")   # struct ifreq: interface name, then ifr_flags
_TCP_LISTEN = "0A"
_libc = ctypes.CDLL(None, use_errno=True)


@dataclass
class Server:
    name: str
    process: subprocess.Popen[bytes]
    port: int
    log: IO[bytes]          # the server's stdout and stderr, for messages when it fails

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def netns(self) -> str:
        """The server's network namespace, for ``nsenter --net=``."""
        return f"/proc/{self.pid}/ns/net"

    def output(self, limit: int = 2000) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-limit:].strip()

    def check_alive(self) -> None:
        """Raise if the server has exited (every further sample would fail)."""
        if self.process.poll() is not None:
            raise EnvironmentProblem(f"{self.name} exited unexpectedly ({_status(self.process)})"
                                     + _quoted(self.output()))


@contextlib.contextmanager
def running_server(name: str, argv: Sequence[str], *, port: int,
                   private_network: bool = False) -> Iterator[Server]:
    """A started, listening server, always stopped on exit."""
    server = start_server(name, argv, port=port, private_network=private_network)
    try:
        yield server
    finally:
        stop_server(server)


def start_server(name: str, argv: Sequence[str], *, port: int,
                 private_network: bool = False) -> Server:
    log = tempfile.TemporaryFile()  # noqa: SIM115  (the Server owns it; stop_server closes it)
    try:
        process = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True,
                                   preexec_fn=functools.partial(_child_setup, os.getpid(),
                                                                private_network))
    except (OSError, subprocess.SubprocessError) as error:
        log.close()
        raise EnvironmentProblem(f"cannot start {name}: {error}") from None
    server = Server(name, process, port, log)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not listening(process.pid, port):
        if process.poll() is not None or time.monotonic() > deadline:
            message = (f"{name} exited ({_status(process)})" if process.poll() is not None
                       else f"{name} is not listening on port {port} after {READY_TIMEOUT_S:g} s")
            stop_server(server)
            raise EnvironmentProblem(message + _quoted(server.output()))
        time.sleep(0.01)
    return server


def stop_server(server: Server) -> None:
    """Kill the server's whole process group and reap the server."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(server.pid, signal.SIGKILL)
    server.process.wait()
    server.log.close()


def listening(pid: int, port: int) -> bool:
    """Whether process ``pid`` itself holds a TCP socket listening on ``port``."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    inodes = set()
    for fd in fds:
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[len("socket:["):-1])
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as handle:
                text = handle.read()
        except OSError:
            continue
        if any(_listens_on(line, port, inodes) for line in text.splitlines()[1:]):
            return True
    return False


def _listens_on(line: str, port: int, inodes: set[str]) -> bool:
    # /proc/net/tcp columns: sl local_address rem_address st ... uid timeout inode
    fields = line.split()
    return (len(fields) > 9 and fields[3] == _TCP_LISTEN
            and int(fields[1].rsplit(":", 1)[1], 16) == port and fields[9] in inodes)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@functools.cache
def private_network_unavailable() -> str | None:
    """Why no network namespace can be made here, or None (tried once per process)."""
    try:
        subprocess.run(["/bin/true"], check=True,
                       preexec_fn=functools.partial(_child_setup, os.getpid(), True))
    except (OSError, subprocess.SubprocessError):
        return "cannot create a network namespace (needs root, or CAP_SYS_ADMIN)"
    return None


def _child_setup(parent: int, private_network: bool) -> None:
    """Runs in the forked child before exec."""
    if _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:   # perflab died before the prctl took hold
        os._exit(1)
    if private_network:
        if _libc.unshare(_CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET)")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:   # a new namespace's lo is down
            _, flags = _IFREQ.unpack(fcntl.ioctl(sock, _SIOCGIFFLAGS, _IFREQ.pack(b"lo", 0)))
            fcntl.ioctl(sock, _SIOCSIFFLAGS, _IFREQ.pack(b"lo", flags | _IFF_UP))


def _status(process: subprocess.Popen[bytes]) -> str:
    code = process.returncode
    return f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"


def _quoted(output: str) -> str:
    return f": {' / '.join(output.splitlines()[-3:])}" if output else ""


class ServedWorkload:
    """Mixin for a workload whose samples are clients of a server held open by session()."""

    name: str
    _server: Server | None = None

    @contextlib.contextmanager
    def _serving(self, label: str, argv: Sequence[str], *, port: int,
                 private_network: bool = False) -> Iterator[None]:
        with running_server(label, argv, port=port, private_network=private_network) as server:
            self._server = server
            try:
                yield
            finally:
                self._server = None

    def _live_server(self) -> Server:
        """The session's server, checked alive: a dead one would fail every sample slowly."""
        if self._server is None:
            raise RuntimeError(f"{self.name} samples run inside the workload's session")
        self._server.check_alive()
        return self._server
