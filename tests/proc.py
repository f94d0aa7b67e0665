"""Looking at processes through /proc, for tests that check what perflab started is gone.

A zombie counts as gone: it is dead, only not yet reaped (PID 1 in a container may
never reap the orphans a SIGKILL test leaves).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable


def stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, pgrp) of a process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return fields[0], int(fields[1]), int(fields[2])


def running(pid: int) -> bool:
    s = stat(pid)
    return s is not None and s[0] not in ("Z", "X")


def processes() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return [word.decode() for word in handle.read().split(b"\0") if word]
    except OSError:
        return []


def group_running(pgid: int) -> bool:
    return any((s := stat(pid)) and s[2] == pgid and s[0] not in ("Z", "X") for pid in processes())


def wait_for(condition: Callable[[], object], timeout: float) -> object:
    """Poll ``condition`` until it is truthy or ``timeout`` passes; its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.05)
    return condition()
