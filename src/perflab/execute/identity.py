"""What is being measured: the label and the commit."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from perflab.model.errors import EnvironmentProblem, UsageError


def default_label() -> str:
    """The kernel release: the usual thing compared."""
    return os.uname().release


def git_commit(repo: str, commit: str | None = None) -> tuple[str, str]:
    """(full hash, ``git describe``) of ``commit`` (default HEAD) in ``repo``."""
    if not Path(repo).is_dir():
        raise UsageError(f"--repo {repo}: no such directory")
    revision = f"{commit or 'HEAD'}^{{commit}}"
    sha = _git(repo, "rev-parse", "--verify", "--quiet", revision)
    if sha is None:
        what = f"commit {commit!r}" if commit else "a HEAD commit"
        raise UsageError(f"--repo {repo}: not a git repository with {what}")
    describe = _git(repo, "describe", "--always", "--tags", sha) or sha[:12]
    return sha, describe


def _git(repo: str, *args: str) -> str | None:
    try:
        result = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise EnvironmentProblem("git not found", hint="apt-get install git") from None
    return result.stdout.strip() if result.returncode == 0 and result.stdout.strip() else None
