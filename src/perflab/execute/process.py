"""Spawn one process and time it, as hyperfine does, with nothing of ours inside the clock.

The child is started with posix_spawn (vfork-like: no copy of perflab's memory) in a
process group of its own and, where perflab may use cgroups, in perflab's cgroup for
samples, where nothing but perflab outlives a sample (see cgroups.py), so a timeout,
Ctrl-C or the death of perflab kills everything it started, even a grandchild that
left the process group.
Wall time comes from CLOCK_MONOTONIC around spawn and reap; CPU time and peak RSS come
from the kernel's rusage of the reaped child (wait4).
"""

from __future__ import annotations

import contextlib
import gc
import os
import resource
import select
import signal
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
    """Run ``argv`` to completion and measure it.

    ``executable`` is the resolved path (resolved once by the caller, outside the clock).
    ``cpus`` pins the child: perflab pins itself around the spawn so the child inherits
    the mask from its first instruction, then restores its own mask after reaping.
    ``cgroups``: the child starts in the samples' cgroup (perflab is in it already, see
    `RunCgroups.for_sample`), and whatever it left there after it is reaped (or at a
    timeout) is killed.
    """
    file_actions = [
        (os.POSIX_SPAWN_DUP2, streams.stdin, 0),
        (os.POSIX_SPAWN_DUP2, streams.stdout, 1),
        (os.POSIX_SPAWN_DUP2, streams.stderr, 2),
    ]
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
    gc_was_enabled = gc.isenabled()
    gc.disable()  # a collection of perflab's garbage must not land inside the clock
    try:
        start = time.perf_counter()
        pid = os.posix_spawn(executable, list(argv), environment,
                             file_actions=file_actions, setpgroup=0)
        try:
            timed_out = False
            if timeout is not None:
                timed_out = not _wait_exit(pid, timeout)
                if timed_out:
                    _kill_all(pid, cgroups, group)
            _, status, usage = os.wait4(pid, 0)
            end = time.perf_counter()
        except BaseException:
            # Ctrl-C or SIGTERM while waiting: take the child's whole group down with us.
            _kill_all(pid, cgroups, group)
            _reap(pid)
            raise
    finally:
        if cgroups is not None:
            cgroups.end_sample()   # leftovers must not run into the next sample
        if gc_was_enabled:
            gc.enable()
        if saved_mask is not None:
            os.sched_setaffinity(0, saved_mask)
        if old_cwd is not None:
            os.chdir(old_cwd)
    kill_group(pid)  # leftovers the command backgrounded must not run into the next sample
    # Until exec the child runs in perflab's memory, and the kernel folds that memory's
    # peak into the child's ru_maxrss: only a peak above perflab's own is the command's.
    own_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return ProcessResult(
        wall_s=end - start, user_s=usage.ru_utime, system_s=usage.ru_stime,
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
    """
    global _last_encoded
    snapshot = tuple(env.items())
    if snapshot != _last_encoded[0]:
        _last_encoded = (snapshot, {os.fsencode(k): os.fsencode(v) for k, v in snapshot})
    return _last_encoded[1]


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


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
