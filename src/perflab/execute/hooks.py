"""--prepare / --conclude / --setup / --cleanup: shell lines run around samples, never timed."""

from __future__ import annotations

from typing import Any

from perflab.execute.process import Streams, spawn_and_wait
from perflab.model.errors import UsageError
from perflab.model.params import substitute

SHELL = "/bin/sh"


class HookFailed(UsageError):
    pass


def run_hook(kind: str, line: str, params: dict[str, Any], streams: Streams,
             timeout: float | None = None) -> None:
    """Run one hook through the shell at a point; a failure stops the run."""
    text = substitute(line, params)
    result = spawn_and_wait(SHELL, [SHELL, "-c", text], streams=streams, timeout=timeout)
    if not result.ok:
        raise HookFailed(f"--{kind} failed ({result.describe_failure()}): {text}")
