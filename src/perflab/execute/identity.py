"""What is being measured: the label and the commit (and the one way perflab runs git)."""

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
    sha = git_output(repo, "rev-parse", "--verify", "--quiet", revision)
    if sha is None:
        what = f"commit {commit!r}" if commit else "a HEAD commit"
        raise UsageError(f"--repo {repo}: not a git repository with {what}")
    describe = git_output(repo, "describe", "--always", "--tags", sha) or sha[:12]
    return sha, describe


GIT_TIMEOUT_S = 120.0  # rev-list of a kernel's history takes seconds, not minutes


def git(repo: str, *args: str) -> subprocess.CompletedProcess:
    """``git -C repo ARGS``, output captured; a missing or stuck git is an EnvironmentProblem."""
    try:
        return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=GIT_TIMEOUT_S)
    except FileNotFoundError:
        raise EnvironmentProblem("git not found", hint="apt-get install git") from None
    except subprocess.TimeoutExpired:
        raise EnvironmentProblem(f"git {' '.join(args[:2])} in {repo} took over {GIT_TIMEOUT_S:g} s") from None


def git_output(repo: str, *args: str) -> str | None:
    """The stripped stdout of a git command that succeeded with some output, else None."""
    result = git(repo, *args)
    out = result.stdout.strip()
    return out if result.returncode == 0 and out else None
