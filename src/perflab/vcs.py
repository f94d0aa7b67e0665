"""git: the one module that runs it. Commits, their graph and order, subjects, trees.

Every caller (a run's commit identity, history's graph order, bisect's range and
worktrees) goes through `git`, so a missing or stuck git is one EnvironmentProblem and
the timeout is set in one place. Nothing here knows about runs, series or statistics.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from perflab.model.errors import EnvironmentProblem, UsageError

GIT_TIMEOUT_S = 120.0  # rev-list of a kernel's history takes seconds, not minutes


def git(repo: str, *args: str, revisions: Sequence[str] | None = None) -> subprocess.CompletedProcess[str]:
    """``git -C repo ARGS``, output captured; a missing or stuck git is an EnvironmentProblem.
    ``revisions`` (of rev-list or log) go on its standard input (--stdin): as arguments,
    5,000 hashes cost git 0.07 s more than the walk they ask for."""
    try:
        if revisions is None:
            return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=False,
                                  stdin=subprocess.DEVNULL, timeout=GIT_TIMEOUT_S)
        return subprocess.run(["git", "-C", repo, *args, "--stdin"], capture_output=True, text=True, check=False,
                              input="".join(f"{r}\n" for r in revisions), timeout=GIT_TIMEOUT_S)
    except FileNotFoundError:
        raise EnvironmentProblem("git not found", hint="apt-get install git") from None
    except subprocess.TimeoutExpired:
        raise EnvironmentProblem(f"git {' '.join(args[:2])} in {repo} took over {GIT_TIMEOUT_S:g} s") from None


def git_output(repo: str, *args: str, revisions: Sequence[str] | None = None) -> str | None:
    """The stripped stdout of a git command that succeeded with some output, else None."""
    result = git(repo, *args, revisions=revisions)
    out = result.stdout.strip()
    return out if result.returncode == 0 and out else None


def git_checked(repo: str, *args: str, revisions: Sequence[str] | None = None) -> subprocess.CompletedProcess[str]:
    """git in ``repo``; a failure is the user's (a bad ref, not a repository): UsageError."""
    result = git(repo, *args, revisions=revisions)
    if result.returncode != 0:
        raise UsageError(f"git {' '.join(args)} failed in {repo}: {last_line(result.stderr)}")
    return result


def last_line(text: str, width: int = 200) -> str:
    """The last non-empty line of a tool's output, cut to ``width``: what a one-line error quotes."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:width] if lines else ""


def is_repository(repo: str) -> bool:
    return Path(repo).is_dir() and git_output(repo, "rev-parse", "--git-dir") is not None


# --------------------------------------------------------------------------- commits

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


def subject_and_author(repo: str | None, sha: str) -> tuple[str, str] | None:
    """(subject line, "Name <email>") of ``sha`` in ``repo``; None where it is not known."""
    if not repo or not Path(repo).is_dir():
        return None
    out = git_output(repo, "log", "-1", "--format=%s%x00%an <%ae>", sha, "--")
    if not out or "\0" not in out:
        return None
    subject, _, author = out.strip().partition("\0")
    return subject, author


def commit_subjects(repo: str | None, shas: Iterable[str]) -> dict[str, str]:
    """sha -> subject line, for the commits ``repo`` knows (one git call); {} without it."""
    return {sha: subject for sha, (subject, _) in commit_lines(repo, shas).items()}


def commit_lines(repo: str | None, shas: Iterable[str]) -> dict[str, tuple[str, str]]:
    """sha -> (subject line, author's name), for the commits ``repo`` knows (one git call
    for them all, or one each when one of them is unknown); {} without a repository. A full
    sha's lines are kept for the next call (a commit's hash fixes them: the dashboard asks
    for the same 5,000 commits at every history page)."""
    wanted = sorted(set(shas))
    if not repo or not wanted or not Path(repo).is_dir():
        return {}
    known = {sha: kept for sha in wanted if (kept := _LINES.get(sha)) is not None}  # another thread may clear it
    asked = [sha for sha in wanted if sha not in known]
    if not asked:
        return known
    form = "--format=%H%x1f%an%x1f%s"
    out = git_output(repo, "log", "--no-walk=unsorted", form, revisions=asked)
    if out is not None:
        lines = out.splitlines()
    else:  # one unknown commit fails the batch: ask one by one
        lines = [line for sha in asked for line in (git_output(repo, "log", "-1", form, sha, "--"),) if line]
    # each line's hash cut to the lengths asked (full or short): a dict look-up per length,
    # not every asked sha tried against every line (25 million for a 5,000-commit history)
    wanted_set, lengths = set(asked), sorted({len(sha) for sha in asked})
    found = {}
    for line in lines:
        full, author, subject = (line.split("\x1f") + ["", ""])[:3]
        for size in lengths:
            if len(full) >= size and full[:size] in wanted_set:
                found[full[:size]] = (subject, author)
    with _KEPT:
        if len(_LINES) + len(found) > _KEPT_LINES:
            _LINES.clear()
        _LINES.update((sha, line) for sha, line in found.items() if len(sha) == 40)
    return {**known, **found}


_KEPT_LINES = 200_000   # commits' lines kept by a process (a dashboard's), about 30 MB at most
_LINES: dict[str, tuple[str, str]] = {}
_KEPT = threading.Lock()   # the dashboard serves pages from several threads


def _resolve(repo: str, ref: str, which: str) -> str:
    result = git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if result.returncode != 0 or not result.stdout.strip():
        raise UsageError(f"--{which} {ref!r}: no such commit in {repo}")
    return result.stdout.strip()


def check_range(repo: str, good: str, bad: str) -> tuple[str, str]:
    """(good sha, bad sha) of two refs, good an ancestor of bad; a bad ref or range is a
    UsageError naming the option."""
    if not os.path.isdir(repo):
        raise UsageError(f"--repo {repo}: no such directory")
    if git(repo, "rev-parse", "--git-dir").returncode != 0:
        raise UsageError(f"--repo {repo}: not a git repository")
    good_sha, bad_sha = _resolve(repo, good, "good"), _resolve(repo, bad, "bad")
    if good_sha == bad_sha:
        raise UsageError(f"--good and --bad are the same commit ({good_sha[:12]})")
    if git(repo, "merge-base", "--is-ancestor", good_sha, bad_sha).returncode != 0:
        raise UsageError(f"--good {good} is not an ancestor of --bad {bad}",
                         hint="bisect needs good to come before bad in the history")
    return good_sha, bad_sha


@dataclass(frozen=True)
class GraphCommit:
    """A commit with its parents (first parent first) and subject line."""

    sha: str
    parents: tuple[str, ...]
    subject: str


def _graph_log(repo: str, *revisions: str) -> list[GraphCommit]:
    out = git_checked(repo, "log", "--topo-order", "--reverse", "--format=%H %P%x00%s", *revisions, "--").stdout
    commits = []
    for line in out.splitlines():
        ids, _, subject = line.partition("\0")
        sha, *parents = ids.split()
        commits.append(GraphCommit(sha, tuple(parents), subject))
    return commits


def commit_graph(repo: str, good_sha: str, bad_sha: str) -> list[GraphCommit]:
    """Every commit of good..bad (reachable from bad, not from good), parents before
    children (bad last), as `git bisect` takes them."""
    return _graph_log(repo, bad_sha, f"^{good_sha}")


def describe_commit(repo: str, sha: str) -> GraphCommit:
    return _graph_log(repo, "--no-walk", sha)[0]


def first_parent_range(repo: str, good: str, bad: str) -> list[tuple[str, str]]:
    """(sha, subject) of good, then of every first-parent commit of good..bad, oldest first
    (bad last); a bad ref or range is a UsageError naming the option."""
    good_sha, bad_sha = check_range(repo, good, bad)
    listing = git_checked(repo, "log", "--first-parent", "--reverse", "--format=%H %s",
                          f"{good_sha}..{bad_sha}").stdout.splitlines()
    shas = [line.split(" ", 1) for line in listing]
    if not shas or shas[-1][0] != bad_sha:
        raise UsageError(f"--bad {bad} is not on the first-parent line from --good {good}")
    good_subject = git_checked(repo, "log", "-1", "--format=%s", good_sha).stdout.strip()
    return [(good_sha, good_subject), *((sha, subject[0] if subject else "") for sha, *subject in shas)]


def graph_order(repo: str, tips: Sequence[str]) -> list[str] | None:
    """Every commit reachable from ``tips`` (unknown ones ignored), oldest first, in graph
    order: git's --topo-order, which keeps a merged branch's commits together just before
    the merge that brings them in and otherwise follows the first-parent line. None when
    git knows none of them. When git knew every tip, the order is kept for the next call with
    the same tips (their hashes fix their ancestry: a dashboard's history pages ask again)."""
    key = (os.path.realpath(repo), tuple(tips))
    kept = _ORDERS.get(key)
    if kept is not None:
        return list(kept)
    order = git_output(repo, "rev-list", "--topo-order", "--reverse", "--ignore-missing", revisions=tips)
    if not order:
        return None
    found = order.split()
    if set(tips) <= set(found):
        with _KEPT:
            if len(_ORDERS) >= _KEPT_ORDERS:
                _ORDERS.pop(next(iter(_ORDERS)))
            _ORDERS[key] = tuple(found)
    return found


_KEPT_ORDERS = 16
_ORDERS: dict[tuple[str, tuple[str, ...]], tuple[str, ...]] = {}


def tree_hashes(repo: str, shas: Iterable[str]) -> dict[str, str]:
    """commit sha -> its tree's hash (one git call)."""
    wanted = list(dict.fromkeys(shas))
    if not wanted:
        return {}
    out = git_checked(repo, "log", "--no-walk=unsorted", "--format=%H %T", revisions=wanted).stdout
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def top_level_files(repo: str, sha: str) -> list[str]:
    """Names at the top of ``sha``'s tree ([] when git cannot say)."""
    out = git_output(repo, "ls-tree", "--name-only", sha)
    return out.splitlines() if out else []


# --------------------------------------------------------------------------- worktrees

@contextlib.contextmanager
def _worktree_lock(repo: str) -> Iterator[None]:
    """Hold this machine's lock on ``repo``'s worktree list. A `worktree prune` that runs while
    another process is inside `worktree add` deletes the half-made entry, and that add then
    fails ("could not open .git/worktrees/X/gitdir"): two bisects or workers on one clone."""
    common = git_output(repo, "rev-parse", "--git-common-dir")
    if common is None:
        raise UsageError(f"{repo} is not a git repository")
    path = os.path.join(repo, common, "perflab-worktrees.lock")
    try:
        handle = open(path, "a")  # noqa: SIM115 (closed by the with below: only open may fail)
    except OSError as error:   # a clone this user may read but not write
        raise UsageError(f"cannot make worktrees of {repo}: {path}: {error.strerror or error}") from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def add_worktree(repo: str, path: str, sha: str) -> None:
    """A detached worktree of ``sha`` at ``path`` (replacing a stale entry of that path)."""
    with _worktree_lock(repo):
        git(repo, "worktree", "prune")
        git_checked(repo, "worktree", "add", "--detach", "--force", "--quiet", path, sha)


def prune_worktrees(repo: str) -> None:
    """Forget the worktrees whose directories are gone (or no longer say they are one)."""
    with _worktree_lock(repo):
        git(repo, "worktree", "prune")
