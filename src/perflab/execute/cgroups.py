"""Every sample in a cgroup v2 of its own: nothing it started outlives it, or perflab.

Layout: ``<cgroup2>/perflab/<perflab pid>/`` holds one perflab's cgroups (a perflab
started by another perflab's sample nests below that sample's cgroup instead):
``sample-<n>`` for the measured processes, ``session-<n>`` for what a
workload's session starts (tbench_srv, iperf3 -s).

The child is in its cgroup from its first instruction: perflab moves itself into the
sample cgroup before ``posix_spawn`` (the child inherits the cgroup at fork; neither a
fork nor ``setsid`` leaves it), as it already does with the CPU mask, and stays there
from one sample to the next (moving and a new cgroup every sample cost a tenth of a timed
`true`: bench/README.md, "Method history"). After each sample
perflab reads the cgroup's processes, unless no process was created since the child
(then it left none): when anything but perflab is left (a backgrounded or ``setsid``
grandchild, a daemon), it steps out, kills the cgroup (``cgroup.kill``) and removes it,
and the next sample gets a new one. A timeout kills the cgroup the same way.

However perflab dies, SIGKILL included, a janitor cleans up: a small process in a
session of its own and outside these cgroups that waits for EOF on a pipe only perflab
holds, then kills and removes this perflab's whole directory (cgroup_switch.c has the
same kind of janitor for its own cgroups). A later perflab removes the directories of
dead perflabs whose janitor was killed too (``sweep_dead``).

Without a writable cgroup2 (not root, none mounted) samples run as before, in a process
group of their own, and perflab says once what that leaves unguarded.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from perflab.store.pending import process_alive

DIRECTORY = "perflab"
KILL_WAIT_S = 5.0     # killed tasks take a moment to leave their cgroup


def cgroup2_mount() -> Path | None:
    """Where the cgroup2 hierarchy is mounted, or None."""
    try:
        with open("/proc/self/mountinfo") as handle:
            for line in handle:
                fields, _, tail = line.partition(" - ")
                if tail.split()[:1] == ["cgroup2"]:
                    return Path(fields.split()[4])
    except OSError:
        return None
    return None


def own_cgroup(mount: Path) -> Path:
    """This process's cgroup v2 directory."""
    with open("/proc/self/cgroup") as handle:
        for line in handle:
            if line.startswith("0::"):
                return mount / line[3:].strip().lstrip("/")
    return mount


def _write(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _process_ids(group: Path) -> list[int]:
    try:
        return [int(pid) for pid in (group / "cgroup.procs").read_text().split()]
    except FileNotFoundError:
        return []


def populated(group: Path) -> bool:
    try:
        with open(group / "cgroup.events") as handle:
            return "populated 1" in handle.read()
    except FileNotFoundError:
        return False


def kill(group: Path) -> None:
    """SIGKILL every process in ``group`` and below (cgroup.kill; by pid before Linux 5.14)."""
    try:
        _write(group / "cgroup.kill", "1")
        return
    except FileNotFoundError:
        if not group.exists():
            return
    for directory, _, _ in os.walk(group):
        with contextlib.suppress(OSError):
            for pid in Path(directory, "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)


def remove_tree(group: Path, wait_s: float = KILL_WAIT_S) -> bool:
    """Kill what is left in ``group`` and remove it with its sub-cgroups; True when gone."""
    try:
        os.rmdir(group)   # the usual case: the sample left nothing behind
        return True
    except FileNotFoundError:
        return True
    except OSError:
        pass
    if populated(group):
        kill(group)
    deadline = time.monotonic() + wait_s
    while True:
        for directory, _, _ in sorted(os.walk(group), key=lambda entry: -len(entry[0])):
            with contextlib.suppress(FileNotFoundError, OSError):
                os.rmdir(directory)
        if not group.exists():
            return True
        if time.monotonic() > deadline:
            return False
        kill(group)   # a process forked while we killed the others
        time.sleep(0.002)


def sweep_dead(parent: Path) -> None:
    """Remove the cgroups of dead perflabs (both they and their janitor were killed)."""
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            if entry.is_dir() and entry.name.isdigit() and not process_alive(int(entry.name)):
                remove_tree(entry)


class RunCgroups:
    """This perflab's cgroup directory, its janitor, and the cgroups made in it."""

    def __init__(self, base: Path, home: Path, janitor: subprocess.Popen[bytes], pipe: int):
        self.base = base
        self.home = home          # perflab's own cgroup, to go back to
        self._janitor = janitor
        self._pipe = pipe         # write end: its EOF tells the janitor perflab is gone
        self._numbers = itertools.count(1)
        self._current = home      # where perflab is now
        self._leaves = 0          # how often perflab went back home (stay_token)
        self._sample: Path | None = None   # the samples' cgroup, until one leaves something

    @classmethod
    def create(cls) -> tuple[RunCgroups | None, str | None]:
        """The cgroups of this perflab, or None and why they cannot be had here."""
        mount = cgroup2_mount()
        if mount is None:
            return None, "no cgroup2 hierarchy is mounted"
        try:
            home = own_cgroup(mount)
            # a perflab run by another perflab's sample nests there, so the outer one's
            # kill reaches it too
            parent = home if home.is_relative_to(mount / DIRECTORY) else mount / DIRECTORY
            base = parent / str(os.getpid())
            parent.mkdir(exist_ok=True)
            sweep_dead(parent)
            remove_tree(base)   # a dead perflab with our pid (pid reuse)
            base.mkdir()
            _write(home / "cgroup.procs", "0")   # moving ourselves must be allowed
        except OSError as error:
            return None, f"cannot use cgroups in {mount}: {error.strerror or error}"
        read, write = os.pipe()   # both ends close-on-exec: no sample inherits them
        try:
            janitor = subprocess.Popen(
                [sys.executable, "-c", _JANITOR, str(base)], stdin=read,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError as error:
            os.close(write)
            remove_tree(base)
            return None, f"cannot start the cgroup janitor: {error.strerror}"
        finally:
            os.close(read)
        return cls(base, home, janitor, write), None

    def new(self, kind: str) -> Path:
        """A new empty cgroup (``sample``, ``session``) in this perflab's directory."""
        group = self.base / f"{kind}-{next(self._numbers)}"
        group.mkdir()
        return group

    def enter(self, group: Path) -> None:
        """Move perflab itself into ``group``: what it spawns next starts there."""
        _write(group / "cgroup.procs", "0")
        self._current = group

    def leave(self) -> None:
        if self._current != self.home:
            _write(self.home / "cgroup.procs", "0")
            self._current = self.home
            self._leaves += 1

    def stay_token(self) -> int | None:
        """Equal at two calls only if perflab was in its directory all the time between them
        (None while it is not): its own work in between was then counted as its own."""
        return None if self._current == self.home else self._leaves

    @contextlib.contextmanager
    def inside(self, group: Path) -> Iterator[None]:
        """perflab in ``group`` for the block, then back where it was."""
        before = self._current
        self.enter(group)
        try:
            yield
        finally:
            if before == self.home:
                self.leave()
            else:
                self.enter(before)

    def for_sample(self) -> Path:
        """The cgroup the next sample's child starts in, with perflab already in it."""
        if self._sample is None:
            self._sample = self.new("sample")
        if self._current is not self._sample:
            self.enter(self._sample)
        return self._sample

    def end_sample(self, alone: bool = False) -> None:
        """After a sample: if anything but perflab is left in its cgroup, step out, kill
        it and remove the cgroup (the next sample gets a new one). ``alone``: the caller
        knows the child created no process (process.nothing_created_since), so nothing
        can be left and the cgroup's tasks are not listed (listing them slowed the next
        sample by 2-6%: bench/README.md)."""
        group = self._sample
        if group is None:
            return
        if self._current is group and (alone or _process_ids(group) == [os.getpid()]):
            return   # the usual case: the child left nothing; stay for the next sample
        self.leave()
        remove_tree(group)
        self._sample = None

    def close(self) -> None:
        """Remove every cgroup of this perflab (killing what is left) and stop the janitor."""
        with contextlib.suppress(OSError):
            self.leave()
        remove_tree(self.base)
        os.close(self._pipe)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._janitor.wait(KILL_WAIT_S)


# The janitor, run as `python -c`: only the standard library, so it starts in a few ms.
# It waits for EOF on stdin (perflab gone), then kills and removes perflab's cgroups.
_JANITOR = r"""
import os, sys, time
base = sys.argv[1]
while os.read(0, 4096):
    pass
def tree():
    return sorted((d for d, _, _ in os.walk(base)), key=len, reverse=True)
deadline = time.monotonic() + 10
while os.path.exists(base) and time.monotonic() < deadline:
    for d in tree():
        try:
            with open(os.path.join(d, "cgroup.kill"), "w") as f:
                f.write("1")
        except OSError:
            try:
                for pid in open(os.path.join(d, "cgroup.procs")).read().split():
                    try:
                        os.kill(int(pid), 9)
                    except OSError:
                        pass
            except OSError:
                pass
    for d in tree():
        try:
            os.rmdir(d)
        except OSError:
            pass
    time.sleep(0.005)
"""
