"""Finding the program a workload runs, with a clear error when it is missing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from perflab.model.errors import UsageError


def resolve_program(program: str, path: str | None = None) -> str:
    """The file ``program`` names (a path if it has a slash, else found on PATH)."""
    if not program.strip():
        raise UsageError("empty command: the program name is blank",
                         hint="put the command after --, e.g. perflab run -- ./mytool")
    if "/" in program:
        candidate = Path(program)
        if not candidate.exists():
            raise UsageError(f"command not found: {program}")
        if candidate.is_dir():
            raise UsageError(f"{program} is a directory, not a program")
        if not os.access(candidate, os.X_OK):
            raise UsageError(f"command is not executable: {program}", hint=f"chmod +x {program}")
        return str(candidate)
    found = shutil.which(program, path=path)
    if found is None and Path(program).is_dir():
        raise UsageError(f"{program} is a directory, not a program")
    if found is None:
        raise UsageError(f"command not found: {program}", hint="check the name, or give a path")
    return found
