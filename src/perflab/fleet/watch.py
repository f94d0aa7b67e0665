"""`perflab watch`: the regression robot's loop.

For each new commit of a branch (the last one seen is kept in the store), a build job per
host: the worker checks the commit out in its own worktree, builds it and runs the suite
with --commit. When a batch of jobs has landed, change detection runs on the series of the
robot's label (analysis/history.py); each new change is raised as an alert
(analysis/alerts.py), and a change whose range spans several commits (the robot skipped
some: --tip-only, or a busy fleet) queues one bisect job on the host that saw it. A tip
alert's rerun request (suspect or confirmed: analysis/alert_reruns.py) queues one rerun job on the
alert's host: both commits built and measured again in rounds, the runs attached to the
alert; the detection after it lands judges them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from celery import Celery

from perflab import vcs
from perflab.fleet.app import MAX_JOB_TIMEOUT_S, host_queue
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
class QueuedRerun:
    job_id: int
    host: str
    alerts: tuple[int, ...]


@dataclass(frozen=True)
class Round:
    """What one pass of the loop did."""

    commits: tuple[str, ...]
    build_jobs: tuple[int, ...]
    alerts: int | None           # None: no detection ran this round
    bisect_jobs: tuple[int, ...]
    reruns: tuple[QueuedRerun, ...] = ()
    verdicts: tuple[str, ...] = ()   # "alert N: <the rerun's verdict>", judged this round


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


def detect(store: Store, app: Celery, options: WatchOptions, warn: Callable[[str], None]) -> Round:
    """Change detection on the robot's runs: alerts (judging the reruns landed), bisect
    jobs for multi-commit ranges, rerun jobs for the rerun requests."""
    from perflab.analysis.alerts import update_alerts
    started = time.time()
    try:
        alerts = len(update_alerts(store, labels=[options.label]))
    except UsageError:
        return Round((), (), 0, ())   # no complete runs yet
    return Round((), (), alerts, tuple(queue_bisects(store, app, options, warn)),
                 tuple(queue_reruns(store, app, options)), tuple(_verdicts_since(store, started)))


def _verdicts_since(store: Store, started: float) -> list[str]:
    from perflab.analysis.alerts import ROBOT
    from perflab.model.alerts import RERUN_VERDICTS
    return [f"alert {alert_id}: {e.note}" for alert_id, events in sorted(store.alerts.all_events().items())
            for e in events if e.action in RERUN_VERDICTS and e.who == ROBOT and e.at >= started]


def queue_bisects(store: Store, app: Celery, options: WatchOptions, warn: Callable[[str], None]) -> list[int]:
    """A bisect job for each change of the robot's series whose range spans several commits."""
    from perflab.analysis.history import build_history, select_changes
    history = build_history(store, labels=[options.label])
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
    return queued


def rerun_timeout(options: WatchOptions) -> float:
    """A rerun job's limit: it builds and runs the suite 2 x ROUNDS times where a build job
    does it once (at most the longest job the broker allows)."""
    from perflab.stats.rerun import ROUNDS
    return min(MAX_JOB_TIMEOUT_S, 2 * ROUNDS * options.timeout_s)


def queue_reruns(store: Store, app: Celery, options: WatchOptions) -> list[QueuedRerun]:
    """A rerun job for each pending rerun request on one of the robot's hosts whose commits
    its repository holds; a request (its "rerun requested" event) already in a rerun job
    is never queued again, even when that job failed (a side that does not build would
    fail at every poll): a person reruns it then (``perflab alert ID rerun``)."""
    from perflab.analysis.alert_reruns import pending_reruns
    asked = {r for job in store.jobs.all() if job.kind is JobKind.RERUN for r in job.request.get("requests", [])}
    queued = []
    for pending in pending_reruns(store):
        requests = {a.id: r for a, r in zip(pending.alerts, pending.requests, strict=True)}
        alerts = [a for a, r in requests.items() if r not in asked]
        host = pending.alerts[0].host
        if not alerts or host not in options.hosts or not _known(options.repo, pending.last_good, pending.first_bad):
            continue
        request = dict(rerun_request(options, pending.last_good, pending.first_bad, alerts),
                       requests=[requests[a] for a in alerts])
        job_id, _ = submit(store, app, JobKind.RERUN, host_queue(host), request)
        queued.append(QueuedRerun(job_id, host, tuple(alerts)))
    return queued


def rerun_request(options: WatchOptions, good: str, bad: str, alerts: list[int]) -> dict[str, Any]:
    """A rerun job's request: the commits, build and suite, the rounds (stats/rerun.order,
    each side and label) and the alerts its runs are attached to."""
    from perflab.analysis.alert_reruns import rounds_of
    from perflab.analysis.alerts import ROBOT
    rounds = rounds_of(alerts[0], time.strftime("%Y%m%d%H%M%S"))
    suite = suite_request(options.suite)
    return with_run({"repo": options.repo, "good": good, "bad": bad, "build": options.build, "suite": suite,
                     "timeout": rerun_timeout(options), "alerts": alerts, "who": ROBOT,
                     "rounds": [asdict(r) for r in rounds]},
                    RunRequest(target=Target(words=(suite["name"],)), identity=Identity(build=options.build)))


def _known(repo: str, *commits: str) -> bool:
    return all(vcs.git_output(repo, "rev-parse", "--verify", "--quiet", f"{c}^{{commit}}") for c in commits)


def run_round(store: Store, app: Celery, options: WatchOptions, warn: Callable[[str], None],
              wait_s: float | None) -> Round:
    """Queue the new commits; with ``wait_s`` (per build job), wait for their jobs and
    detect at once, then wait for the rerun jobs queued and detect again until none is
    (a request is queued once, and an alert asks at most twice: this ends)."""
    commits = new_commits(store, options)
    jobs = queue_builds(store, app, options, commits)
    if wait_s is None:
        return Round(tuple(commits), tuple(jobs), None, ())
    _wait_all(store, jobs, wait_s, warn)
    done = found = replace(detect(store, app, options, warn), commits=tuple(commits), build_jobs=tuple(jobs))
    while found.reruns:
        _wait_all(store, [r.job_id for r in found.reruns], wait_s * rerun_timeout(options) / options.timeout_s, warn)
        found = detect(store, app, options, warn)
        done = replace(done, alerts=(done.alerts or 0) + (found.alerts or 0),
                       bisect_jobs=done.bisect_jobs + found.bisect_jobs, reruns=done.reruns + found.reruns,
                       verdicts=done.verdicts + found.verdicts)
    return done


def _wait_all(store: Store, jobs: list[int] | tuple[int, ...], wait_s: float, warn: Callable[[str], None]) -> None:
    for job_id in jobs:
        job = wait_for(store, job_id, wait_s)
        if job.state is not JobState.DONE:
            warn(f"job {job_id} ({job.host or job.queue}) {job.state.value}: {job.error or ''}")


def loop(store: Store, app: Celery, options: WatchOptions, interval_s: float, warn: Callable[[str], None],
         report: Callable[[Round], None]) -> None:
    """Poll forever: queue new commits each interval; detect when a batch of build or rerun
    jobs has landed."""
    pending: list[int] = []
    while True:
        done_round = run_round(store, app, options, warn, wait_s=None)
        pending += done_round.build_jobs
        if done_round.commits:
            report(done_round)
        if pending and all(store.jobs.get(j).state.finished for j in pending):
            found = detect(store, app, options, warn)
            pending = [r.job_id for r in found.reruns]   # when they land, a detection judges them
            report(found)
        time.sleep(interval_s)


def absolute(repo: str) -> str:
    return str(Path(repo).expanduser().resolve())
