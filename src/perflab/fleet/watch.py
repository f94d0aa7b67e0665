"""`perflab watch`: the regression robot's loop.

For each new commit of a branch (the last one seen is kept in the store), a build job per
host: the worker checks the commit out in its own worktree, builds it and runs the suite
with --commit. When a batch of jobs has landed, change detection runs on the series of the
robot's label (analysis/history.py); each new change is raised as an alert
(analysis/alerts.py), and a change whose range spans several commits (the robot skipped
some: --tip-only, or a busy fleet) queues one bisect job on the host that saw it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from celery import Celery

from perflab import vcs
from perflab.fleet.app import host_queue
from perflab.fleet.submit import submit, suite_request, wait_for, with_run
from perflab.model.errors import UsageError
from perflab.model.jobs import JobKind, JobState
from perflab.model.run_request import Identity, RunRequest, Target
from perflab.store import Store


@dataclass(frozen=True)
class WatchOptions:
    repo: str                  # absolute path: the workers reach it (same machine or shared file system)
    branch: str
    build: str
    suite: str
    hosts: tuple[str, ...]
    label: str
    timeout_s: float
    bisect_run: str | None = None
    tip_only: bool = False
    since: str | None = None


@dataclass(frozen=True)
class Round:
    """What one pass of the loop did."""

    commits: tuple[str, ...]
    build_jobs: tuple[int, ...]
    alerts: int | None           # None: no detection ran this round
    bisect_jobs: tuple[int, ...]


def check_options(options: WatchOptions) -> None:
    if not vcs.is_repository(options.repo):
        raise UsageError(f"--repo {options.repo}: not a git repository")
    if vcs.git_output(options.repo, "rev-parse", "--verify", "--quiet", f"{options.branch}^{{commit}}") is None:
        raise UsageError(f"--branch {options.branch}: no such branch in {options.repo}")
    if not options.hosts:
        raise UsageError("--hosts: name at least one host")
    suite_request(options.suite)   # a malformed suite: one line, before anything is queued


def new_commits(store: Store, options: WatchOptions) -> list[str]:
    """The branch's commits not yet queued, oldest first (first-parent line)."""
    tip = vcs.git_checked(options.repo, "rev-parse", f"{options.branch}^{{commit}}").stdout.strip()
    last = store.branches.last_seen(options.repo, options.branch)
    if last is None and options.since is None:
        return [tip]
    start = last or options.since or ""
    listed = vcs.git_checked(options.repo, "rev-list", "--first-parent", "--reverse", f"{start}..{tip}").stdout.split()
    if last is None and options.since is not None:
        listed = [vcs.git_checked(options.repo, "rev-parse", f"{options.since}^{{commit}}").stdout.strip(), *listed]
    return listed[-1:] if options.tip_only else listed


def queue_builds(store: Store, app: Celery, options: WatchOptions, commits: list[str]) -> list[int]:
    suite = suite_request(options.suite)
    queued = []
    for commit in commits:
        for host in options.hosts:
            request = with_run({"repo": options.repo, "commit": commit, "build": options.build, "suite": suite,
                                "timeout": options.timeout_s},
                               RunRequest(target=Target(words=(suite["name"],)),
                                          identity=Identity(label=options.label, commit=commit)))
            job_id, _ = submit(store, app, JobKind.BUILD, host_queue(host), request)
            queued.append(job_id)
    if commits:
        store.branches.remember(options.repo, options.branch, commits[-1])
    return queued


def detect(store: Store, app: Celery, options: WatchOptions,
           warn: Callable[[str], None]) -> tuple[int, list[int]]:
    """Change detection on the robot's runs: alerts, and bisect jobs for multi-commit ranges."""
    from perflab.analysis.alerts import update_alerts
    from perflab.analysis.history import build_history, select_changes
    try:
        alerts = len(update_alerts(store, labels=[options.label]))
        history = build_history(store, labels=[options.label])
    except UsageError:
        return 0, []   # no complete runs yet
    bisected = {job.request.get("change") for job in store.jobs.all() if job.kind is JobKind.BISECT}
    queued = []
    for change in select_changes(history):
        good, bad = change.previous.commit, change.point.commit
        if not good or not bad or change.id in bisected:
            continue
        # every commit bisect would search (merged branches too), as it walks the graph
        between = vcs.git_checked(options.repo, "rev-list", "--count", f"{good}..{bad}").stdout
        if int(between.strip() or 0) < 2:
            continue   # the change is at one commit: nothing to bisect
        if options.bisect_run is None:
            warn(f"change {change.id} spans {between.strip()} commits ({good[:12]}..{bad[:12]}); "
                 "pass --bisect-run CMD to queue a bisect")
            continue
        request = {"change": change.id, "repo": options.repo, "good": good, "bad": bad, "build": options.build,
                   "run": options.bisect_run, "timeout": options.timeout_s}
        job_id, _ = submit(store, app, JobKind.BISECT, host_queue(change.host), request)
        queued.append(job_id)
    return alerts, queued


def run_round(store: Store, app: Celery, options: WatchOptions, warn: Callable[[str], None],
              wait_s: float | None) -> Round:
    """Queue the new commits; with ``wait_s``, wait for their jobs and detect at once."""
    commits = new_commits(store, options)
    jobs = queue_builds(store, app, options, commits)
    alerts: int | None = None
    bisects: list[int] = []
    if wait_s is not None:
        for job_id in jobs:
            job = wait_for(store, job_id, wait_s)
            if job.state is not JobState.DONE:
                warn(f"job {job_id} ({job.host or job.queue}) {job.state.value}: {job.error or ''}")
        alerts, bisects = detect(store, app, options, warn)
    return Round(tuple(commits), tuple(jobs), alerts, tuple(bisects))


def loop(store: Store, app: Celery, options: WatchOptions, interval_s: float, warn: Callable[[str], None],
         report: Callable[[Round], None]) -> None:
    """Poll forever: queue new commits each interval; detect when a batch has landed."""
    pending: list[int] = []
    while True:
        done_round = run_round(store, app, options, warn, wait_s=None)
        pending += done_round.build_jobs
        if done_round.commits:
            report(done_round)
        if pending and all(store.jobs.get(j).state.finished for j in pending):
            pending = []
            alerts, bisects = detect(store, app, options, warn)
            report(Round((), (), alerts, tuple(bisects)))
        time.sleep(interval_s)


def absolute(repo: str) -> str:
    return str(Path(repo).expanduser().resolve())
