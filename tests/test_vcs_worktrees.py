"""Worktrees of one clone made by several processes at once (two bisects, two fleet workers on
one machine): none of them may lose its worktree to another's prune."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from perflab.model.errors import UsageError
from perflab.vcs import add_worktree, git_output, prune_worktrees

from test_history import commit, new_repo


def _add_and_drop(repo: str, base: str, sha: str, count: int) -> int:
    """What a bisect build does: add a worktree, make it a plain directory, prune."""
    for i in range(count):
        path = os.path.join(base, str(i))
        add_worktree(repo, path, sha)
        assert Path(path, "delay").exists()
        os.unlink(os.path.join(path, ".git"))
        prune_worktrees(repo)
    return count


def test_concurrent_adds_and_prunes_all_succeed(tmp_path):
    repo = new_repo(tmp_path / "app")
    sha = commit(repo, "one", "100")
    with ProcessPoolExecutor(3) as pool:
        done = list(pool.map(_add_and_drop, [str(repo)] * 3, [str(tmp_path / f"w{n}") for n in range(3)],
                             [sha] * 3, [15] * 3))
    assert done == [15] * 3
    assert git_output(str(repo), "worktree", "list", "--porcelain").count("worktree ") == 1  # the main one


def test_a_clone_without_write_access_is_one_clear_line(tmp_path):
    repo = new_repo(tmp_path / "app")
    sha = commit(repo, "one", "100")
    (repo / ".git" / "perflab-worktrees.lock").mkdir()     # unopenable as a file, even as root
    with pytest.raises(UsageError, match="cannot make worktrees of"):
        add_worktree(str(repo), str(tmp_path / "w"), sha)
