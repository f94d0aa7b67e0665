"""For the bench scripts that need perflab's packages: `in_project_venv(__file__)` re-executes
the script with the project's .venv Python when another one started it, then puts the
repository's src/ first on the import path (the tree being measured, not an installed one)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"


def in_project_venv(script: str) -> None:
    """Run ``script`` (its ``__file__``) in the project's .venv, with src/ first on the path."""
    if VENV_PYTHON.exists() and Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
        os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), script, *sys.argv[1:]])
    if str(ROOT / "src") not in sys.path:
        sys.path.insert(0, str(ROOT / "src"))
