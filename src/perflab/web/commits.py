"""Commits as people read them on the dashboard: the hash, its subject and author (from the
repository the runs recorded, through perflab.vcs, cached for the server's life: a commit
never changes), and a link when ``serve --commit-url`` gives a template."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote

from perflab.model.alerts import point_commit, short_point
from perflab.model.errors import UsageError
from perflab.vcs import commit_lines

MAX_CACHED = 50_000   # commits remembered (about 10 MB): a year of a busy repository


@dataclass(frozen=True)
class CommitName:
    short: str                  # 12 hex digits, or "run N" for a run without a commit
    subject: str | None
    author: str | None
    url: str | None


def check_url_template(template: str | None) -> str | None:
    """``--commit-url``: an http(s) URL with ``{sha}`` where the full hash goes."""
    if template is None:
        return None
    if "{sha}" not in template or not template.startswith(("https://", "http://")):
        raise UsageError(f"bad --commit-url {template[:80]!r}: expected an http(s) URL with {{sha}}, "
                         "e.g. https://git.kernel.org/torvalds/c/{sha}")
    return template


class CommitNames:
    """(repository, commit) -> subject and author, asked of git once per commit."""

    def __init__(self, url_template: str | None = None):
        self.url_template = url_template
        self.known: dict[tuple[str, str], tuple[str, str] | None] = {}

    def prefetch(self, pairs: Iterable[tuple[str | None, str | None]]) -> None:
        """Look up the commits not seen yet, one git call per repository."""
        wanted: dict[str, set[str]] = {}
        for repo, key in pairs:
            sha = point_commit(key) if key else None
            if repo and sha and (repo, sha) not in self.known:
                wanted.setdefault(repo, set()).add(sha)
        for repo, shas in wanted.items():
            found = commit_lines(repo, shas)
            if len(self.known) + len(shas) > MAX_CACHED:
                self.known.clear()
            self.known.update({(repo, sha): found.get(sha) for sha in shas})

    def get(self, repo: str | None, key: str | None) -> CommitName:
        """``key`` (a commit, or run-<id>) as the pages show it."""
        if not key:
            return CommitName("-", None, None, None)
        sha = point_commit(key)
        if sha is None:
            return CommitName(short_point(key), None, None, None)
        if repo and (repo, sha) not in self.known:
            self.prefetch([(repo, sha)])
        found = self.known.get((repo, sha)) if repo else None
        url = self.url_template.replace("{sha}", quote(sha, safe="")) if self.url_template else None
        return CommitName(sha[:12], found[0] if found else None, found[1] if found else None, url)
