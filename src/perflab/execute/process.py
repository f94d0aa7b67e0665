"""Spawn one process and time it, as hyperfine does, with nothing of ours inside the clock.

The child is started with posix_spawn (vfork-like: no copy of perflab's memory) in a
process group of its own and, where perflab may use cgroups, in perflab's cgroup for
samples, where nothing but perflab outlives a sample (see cgroups.py), so a timeout,
Ctrl-C or the death of perflab kills everything it started, even a grandchild that
left the process group.
Without cgroups (not root) a run's samples start through a shim that asks the kernel
for SIGKILL when perflab dies (PR_SET_PDEATHSIG) before it execs the command, and a
group janitor (GroupJanitor) kills the sample's process group when perflab dies; what
left the group (setsid, a daemon) or runs a set-user-ID program can still outlive it.
Wall time comes from CLOCK_MONOTONIC from before the spawn until the child is reaped, as
hyperfine times it, less perflab's own look between its exit (waitid) and the reap; CPU
time and peak RSS come from the kernel's rusage of the reaped child (wait4).
"""

from __future__ import annotations

import contextlib
import gc
import os
import resource
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from perflab.execute.cgroups import RunCgroups
from perflab.execute.cgroups import kill as kill_cgroup
from perflab.model.records import ProcessResult


@dataclass(frozen=True)
class Streams:
    """Where the child's stdin/stdout/stderr go: open file descriptors, owned by the caller."""

    stdin: int
    stdout: int
    stderr: int


class CapturedOutput:
    """Two unlinked temporary files that take a child's stdout and stderr, reused per sample.

    Files rather than pipes: nothing has to read while the child runs, and the
    child's writes cost what writes to a file cost.
    """

    def __init__(self, stdin: int):
        self._stdin = stdin
        self._files = [tempfile.TemporaryFile(), tempfile.TemporaryFile()]  # noqa: SIM115  (closed by close())

    def streams(self) -> Streams:
        for handle in self._files:
            os.ftruncate(handle.fileno(), 0)
            os.lseek(handle.fileno(), 0, os.SEEK_SET)
        return Streams(self._stdin, self._files[0].fileno(), self._files[1].fileno())

    def read(self) -> tuple[str, str]:
        texts = []
        for handle in self._files:
            os.lseek(handle.fileno(), 0, os.SEEK_SET)
            texts.append(handle.read().decode(errors="replace"))
        return texts[0], texts[1]

    def close(self) -> None:
        for handle in self._files:
            handle.close()


def open_devnull_streams() -> Streams:
    read = os.open(os.devnull, os.O_RDONLY)
    write = os.open(os.devnull, os.O_WRONLY)
    return Streams(stdin=read, stdout=write, stderr=write)


def spawn_and_wait(executable: str, argv: Sequence[str], *, streams: Streams,
                   env: dict[str, str] | None = None, cwd: str | None = None,
                   cpus: set[int] | None = None, timeout: float | None = None,
                   cgroups: RunCgroups | None = None) -> ProcessResult:
    """Run ``argv`` (``executable``: its path, resolved by the caller) to completion and measure it.

    ``cpus`` pins the child: perflab pins itself around the spawn so the child inherits
    the mask from its first instruction, then restores its own mask after reaping.
    ``cgroups``: the child starts in the samples' cgroup (perflab is in it already, see
    `RunCgroups.for_sample`), and whatever it left there after it is reaped (or at a
    timeout) is killed.
    """
    file_actions = _file_actions(streams)
    saved_mask = None
    if cpus:
        saved_mask = os.sched_getaffinity(0)
        os.sched_setaffinity(0, cpus)
    environment = _encoded(os.environ if env is None else env)
    old_cwd = None
    if cwd is not None:
        old_cwd = os.getcwd()
        os.chdir(cwd)
    group = cgroups.for_sample() if cgroups is not None else None
    alone = False   # the child created no process: it cannot have left one running
    gc_was_enabled = gc.isenabled()
    gc.disable()  # a collection of perflab's garbage must not land inside the clock
    try:
        start = time.perf_counter()
        shim = GroupJanitor.shim() if cgroups is None else None
        if shim is not None:
            pid, exec_start = _spawn_dying_with_perflab(shim, executable, argv, environment, file_actions)
        else:
            exec_start = None
            pid = os.posix_spawn(executable, list(argv), environment,
                                 file_actions=file_actions, setpgroup=0)
            GroupJanitor.watch(pid)   # no deathsig shim (it could not be built): the janitor alone guards
        try:
            timed_out, alone, status, usage, end = _await(pid, timeout, cgroups, group)
            start = start if exec_start is None else exec_start
        except BaseException:
            # Ctrl-C or SIGTERM while waiting: take the child's whole group down with us.
            _kill_all(pid, cgroups, group)
            _reap(pid)
            raise
    finally:
        if cgroups is not None:
            cgroups.end_sample(alone)   # leftovers must not run into the next sample
        if gc_was_enabled:
            gc.enable()
        if saved_mask is not None:
            os.sched_setaffinity(0, saved_mask)
        if old_cwd is not None:
            os.chdir(old_cwd)
    if not alone:
        kill_group(pid)  # leftovers the command backgrounded must not run into the next sample
    GroupJanitor.forget()
    return _result(pid, status, usage, end - start, timed_out)


def _await(pid: int, timeout: float | None, cgroups: RunCgroups | None,
           group: Path | None) -> tuple[bool, bool, int, resource.struct_rusage, float]:
    """Wait for the child (killing its tree at ``timeout``) and reap it: (timed out, alone:
    it created no process, its wait status, its rusage, the clock at its end)."""
    timed_out = False
    if timeout is not None:
        timed_out = not _wait_exit(pid, timeout)
        if timed_out:
            _kill_all(pid, cgroups, group)
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)   # exited; its pid is still held
    exited = time.perf_counter()
    alone = not timed_out and nothing_created_since(pid)
    reap = time.perf_counter()
    _, status, usage = os.wait4(pid, 0)
    return timed_out, alone, status, usage, exited + (time.perf_counter() - reap)   # the reap counts, as in hyperfine


def _file_actions(streams: Streams) -> list[tuple[int, int, int]]:
    """posix_spawn's actions that make ``streams`` the child's stdin, stdout and stderr."""
    return [
        (os.POSIX_SPAWN_DUP2, streams.stdin, 0),
        (os.POSIX_SPAWN_DUP2, streams.stdout, 1),
        (os.POSIX_SPAWN_DUP2, streams.stderr, 2),
    ]


def _result(pid: int, status: int, usage: resource.struct_rusage, wall_s: float,
            timed_out: bool) -> ProcessResult:
    """The reaped child's measurements (taken after the clock stopped)."""
    # Until exec the child runs in perflab's memory, and the kernel folds that memory's
    # peak into the child's ru_maxrss: only a peak above perflab's own is the command's.
    own_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return ProcessResult(
        wall_s=wall_s, user_s=usage.ru_utime, system_s=usage.ru_stime,
        max_rss_bytes=usage.ru_maxrss * 1024 if usage.ru_maxrss > own_peak else None,
        exit_code=os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else None,
        signal=os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        timed_out=timed_out, minflt=usage.ru_minflt, majflt=usage.ru_majflt,
        nvcsw=usage.ru_nvcsw, nivcsw=usage.ru_nivcsw, inblock=usage.ru_inblock,
        oublock=usage.ru_oublock, pid=pid)


_last_encoded: tuple[tuple[tuple[str, str], ...], dict[bytes, bytes]] = ((), {})


def _encoded(env: Mapping[str, str]) -> dict[bytes, bytes]:
    """The environment as bytes, re-encoded only when its content changes.

    os.posix_spawn encodes a str mapping on every call, inside the timed window
    (~50-90 us for a usual environment here, 10% of spawning `true`); bytes pass as is.
    os.environ itself is not even compared: on POSIX it keeps its bytes in a dict of its own.
    """
    global _last_encoded
    if env is os.environ:
        data = getattr(env, "_data", None)   # private, but in every CPython; iterating env costs ~70 us
        if os.supports_bytes_environ and isinstance(data, dict):
            return data
    snapshot = tuple(env.items())
    if snapshot != _last_encoded[0]:
        _last_encoded = (snapshot, {os.fsencode(k): os.fsencode(v) for k, v in snapshot})
    return _last_encoded[1]


_loadavg: int | None = None   # /proc/loadavg kept open; -1: not the kernel's own


def nothing_created_since(pid: int) -> bool:
    """Whether no process or thread was created in perflab's pid namespace (or one below
    it) since ``pid``, which must still be held (exited, not yet reaped).

    /proc/loadavg's last field is the pid handed out last, and a held pid is never handed
    out again: it equals ``pid`` exactly when nothing was created since. A child whose
    tree created nothing cannot have left anything running. (A privileged clone3 with
    set_tid does not move that cursor; such a sample is not guarded, as one that moves
    itself out of its cgroup is not.) False when it cannot be read, or when something is
    mounted over /proc/loadavg (lxcfs: a copy refreshed once a second).
    """
    global _loadavg
    if _loadavg is None:
        _loadavg = _open_loadavg()
    if _loadavg < 0:
        return False
    try:
        return int(os.pread(_loadavg, 128, 0).rsplit(None, 1)[1]) == pid
    except (OSError, ValueError, IndexError):
        return False


def _open_loadavg() -> int:
    try:
        with open("/proc/self/mountinfo") as handle:
            if any(line.split()[4] == "/proc/loadavg" for line in handle):
                return -1
        return os.open("/proc/loadavg", os.O_RDONLY | os.O_CLOEXEC)
    except (OSError, IndexError):
        return -1


def _wait_exit(pid: int, timeout: float) -> bool:
    """Block until the child exits or the timeout passes; True if it exited."""
    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        return bool(ready)
    finally:
        os.close(fd)


def _kill_all(pid: int, cgroups: RunCgroups | None, group: Path | None) -> None:
    """Kill the child's process group and, first leaving it ourselves, its cgroup."""
    kill_group(pid)
    if group is not None:
        cgroups.leave()   # type: ignore[union-attr]
        kill_cgroup(group)


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


_EXEC_STAMP = struct.Struct("d")   # the shim's CLOCK_MONOTONIC just before its exec
_ERRNO = struct.Struct("i")        # then, if the exec failed, its errno


def _spawn_dying_with_perflab(shim: str, executable: str, argv: Sequence[str], env: dict[bytes, bytes],
                              file_actions: list) -> tuple[int, float | None]:
    """posix_spawn ``argv`` through the deathsig shim (csrc/deathsig.c), which sets
    PR_SET_PDEATHSIG before it execs it: (pid, the time just before that exec). An exec
    that fails raises its OSError here, as posix_spawn does.

    The kernel sends the death signal when the *thread* that spawned exits: spawn_and_wait
    spawns and reaps in one thread, so that is perflab's death. The clock starts at the
    command's exec, not at the shim's (a fork of perflab instead would put the teardown of
    its copied memory, ~10 ms, into every sample: bench/README.md)."""
    read, write = os.pipe()
    os.set_inheritable(write, True)   # the shim's STAMP_FD; it makes it close-on-exec
    try:
        pid = os.posix_spawn(shim, [shim, str(os.getpid()), str(write), executable, *argv], env,
                             file_actions=file_actions, setpgroup=0)
    finally:
        os.close(write)
    GroupJanitor.watch(pid)
    data = b""
    try:
        while chunk := os.read(read, 64):   # EOF at the command's exec (or the shim's exit)
            data += chunk
    finally:
        os.close(read)
    if len(data) == _EXEC_STAMP.size + _ERRNO.size:   # the exec failed: raise, as posix_spawn
        _reap(pid)
        GroupJanitor.forget()
        errno = _ERRNO.unpack_from(data, _EXEC_STAMP.size)[0]
        raise OSError(errno, os.strerror(errno), executable)
    return pid, (_EXEC_STAMP.unpack_from(data)[0] if len(data) >= _EXEC_STAMP.size else None)


class GroupJanitor:
    """Without cgroups: a small process, in a session of its own, that kills the running
    sample's process group when perflab dies (SIGKILL included: it waits for EOF on a pipe
    only perflab holds). perflab tells it each sample's group, and that the group is gone."""

    _active: GroupJanitor | None = None

    def __init__(self, shim: str | None) -> None:
        self._shim = shim
        read, self._pipe = os.pipe()   # close-on-exec: no sample inherits them
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-S", "-c", _GROUP_JANITOR], stdin=read,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        finally:
            os.close(read)

    @classmethod
    @contextlib.contextmanager
    def running(cls, shim: str | None):
        """A janitor for the block (the samples a run spawns without cgroups); ``shim``,
        the built deathsig program, starts each sample (None: it could not be built)."""
        janitor = cls(shim)
        cls._active = janitor
        try:
            yield janitor
        finally:
            cls._active = None
            os.close(janitor._pipe)   # EOF: it kills a group still named (none, normally) and exits
            with contextlib.suppress(subprocess.TimeoutExpired):
                janitor._process.wait(5)

    @classmethod
    def shim(cls) -> str | None:
        return cls._active._shim if cls._active is not None else None

    @classmethod
    def watch(cls, pgid: int) -> None:
        if cls._active is not None:
            os.write(cls._active._pipe, b"%d\n" % pgid)

    @classmethod
    def forget(cls) -> None:
        if cls._active is not None:
            os.write(cls._active._pipe, b"-\n")


# The group janitor, run as `python -S -c`: the standard library only, it starts in a few ms.
# A line "PGID" names the running sample's group, "-" says it is gone; at EOF it kills the
# group still named. Only the current group is kept: an old one's number may be reused.
_GROUP_JANITOR = r"""
import os, signal
group, pending = None, b""
while True:
    chunk = os.read(0, 4096)
    if not chunk:
        break
    *lines, pending = (pending + chunk).split(b"\n")
    for line in lines:
        group = None if line == b"-" else int(line)
if group is not None:
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
"""


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
