"""What is being measured: the label and the commit (git itself is perflab.vcs)."""

from __future__ import annotations

import os

from perflab.vcs import git_commit

__all__ = ["default_label", "git_commit"]


def default_label() -> str:
    """The kernel release: the usual thing compared."""
    return os.uname().release
