"""What a notification says of an alert summary, read from the report API in one place.

``read_summary`` is the only reader of analysis (``alert_detail``: the alert, its events, the
`report change` of its change), render (the report's text and its % as `report change`
prints them) and git (the commits' authors and subjects): when the report or the alerts
change shape, this module follows and the mail and webhook code do not.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from perflab import vcs
from perflab.analysis.alerts import alert_detail
from perflab.model.alerts import CONFIRMED, DUPLICATE, INVALID, Alert, AlertEvent, AlertSummary, point_commit
from perflab.model.notify import BISECTED  # the event of a bisect's answer, as the robot records it
from perflab.render.change_report import render_change_report
from perflab.render.history import pct, shift
from perflab.store import Store

_SHA = re.compile(r"\b[0-9a-f]{40}\b")
_SHORT_SHA = re.compile(r"\b[0-9a-f]{7,39}\b")
# a branch named in a subject, before the others that hold the commit
_USUAL_BRANCHES = ("main", "master")
# the password of a URL's login (a --db postgresql://user:pass@host/db in a recorded command)
_URL_PASSWORD = re.compile(r"([a-zA-Z][\w+.-]*://[^/\s:@]+):[^@\s/]+@")


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    author: str
    email: str

    @property
    def address(self) -> str:
        return f"{self.author} <{self.email}>" if self.author else self.email


@dataclass(frozen=True)
class SummaryFacts:
    """One summary as people are told of it; every number is the report's own."""

    summary: AlertSummary
    headline: Alert                 # the alert the subject names: the largest confirmed change
    stat: str                       # BENCHMARK.METRIC
    shift: str                      # "-29.9%", as `report change` prints it (positive = better)
    kind: str                       # regression / improvement
    report_text: str | None         # `perflab report change` of the headline's change
    report_missing: str | None      # why there is none (the change is no longer detected)
    culprit: Commit | None          # the commit a bisect named, when one did
    commits: tuple[Commit, ...]     # the range's commits (last good, first bad], newest first
    branch: str | None
    repo: str | None

    @property
    def sha12(self) -> str:
        return (self.culprit.sha if self.culprit else self.summary.first_bad)[:12]


def read_summary(store: Store, summary_id: int) -> SummaryFacts:
    """The facts of summary ``summary_id``, its report rendered as `report change` renders it."""
    summary = store.alerts.summary(summary_id)
    headline = headline_alert(summary)
    detail = alert_detail(store, headline.id)
    report = detail.report
    repo = (report.repo if report is not None else None) or summary.repo
    events = store.alerts.all_events()
    named = getattr(detail, "culprit", None)   # the report's own culprit, where the report has one
    culprit_sha = named.commit if named is not None else bisect_answer(
        store, [e for a in summary.alerts for e in events.get(a.id, [])])
    commits = range_commits(repo, summary.last_good, summary.first_bad)
    culprit = next((c for c in commits if culprit_sha and c.sha.startswith(culprit_sha)), None)
    if culprit_sha and culprit is None:
        culprit = next(iter(commit_facts(repo, [culprit_sha])), Commit(culprit_sha, "", "", ""))
    return SummaryFacts(
        summary=summary, headline=headline,
        stat=report.change.stat if report is not None else f"{headline.benchmark}.{headline.metric}",
        shift=shift(report.change) if report is not None else pct(headline.oriented_pct),
        kind=report.change.verdict.value if report is not None else headline.kind,
        report_text=without_passwords(render_change_report(report)) if report is not None else None,
        report_missing=detail.report_missing, culprit=culprit, commits=tuple(commits),
        branch=branch_of(repo, summary.first_bad), repo=repo)


def without_passwords(text: str) -> str:
    """``text`` with every URL's password replaced by ***: a report quotes recorded command
    lines, and a mail leaves the lab."""
    return _URL_PASSWORD.sub(r"\1:***@", text)


def headline_alert(summary: AlertSummary) -> Alert:
    """The summary's alert a subject names: confirmed and not noise before the others, then
    the largest change (positive = better, so the worst regression first)."""
    def rank(a: Alert) -> tuple[bool, bool, float]:
        size = abs(a.oriented_pct) if math.isfinite(a.oriented_pct) else 0.0
        return (a.status != CONFIRMED, a.state in (INVALID, DUPLICATE), -size)
    return min(summary.alerts, key=rank)


def bisect_answer(store: Store, events: list[AlertEvent]) -> str | None:
    """The culprit commit of the newest "bisected" event (the robot's bisect answered): the
    commit of the event's run (the found commit's bisect run), else a commit its note names;
    None when no bisect answered or it named no commit."""
    for e in sorted(events, key=lambda e: e.at, reverse=True):
        if e.action != BISECTED:
            continue
        if e.run_id is not None and store.runs.exists(e.run_id):
            commit = store.runs.resolve(str(e.run_id)).commit
            if commit:
                return commit
        found = _SHA.search(e.note) or _SHORT_SHA.search(e.note)
        if found:
            return found.group(0)
    return None


def range_commits(repo: str | None, last_good: str, first_bad: str) -> list[Commit]:
    """The commits after ``last_good`` up to ``first_bad``, newest first ([] without a repository)."""
    good, bad = point_commit(last_good), point_commit(first_bad)
    if not repo or not bad or not vcs.is_repository(repo):
        return []
    revisions = [f"{good}..{bad}"] if good else ["-1", bad]
    return _log(repo, *revisions) or _log(repo, "-1", bad)


def commit_facts(repo: str | None, shas: list[str]) -> list[Commit]:
    if not repo or not vcs.is_repository(repo):
        return []
    return [c for sha in shas for c in _log(repo, "-1", sha)]


def _log(repo: str, *revisions: str) -> list[Commit]:
    out = vcs.git_output(repo, "log", "--format=%H%x00%s%x00%an%x00%ae", *revisions, "--")
    if out is None:
        return []
    return [Commit(*line.split("\x00")) for line in out.splitlines() if line.count("\x00") == 3]


def branch_of(repo: str | None, first_bad: str) -> str | None:
    """A branch that holds the commit: main or master when one does, else the first."""
    sha = point_commit(first_bad)
    if not repo or not sha or not vcs.is_repository(repo):
        return None
    out = vcs.git_output(repo, "branch", "--contains", sha, "--format=%(refname:short)") or ""
    branches = [b.strip() for b in out.splitlines() if b.strip()]
    return next((b for b in _USUAL_BRANCHES if b in branches), branches[0] if branches else None)
