"""`perflab watch`: the regression robot's loop.

For each new commit of a branch (the last one seen is kept in the store), a build job per
host: the worker checks the commit out in its own worktree, builds it and runs the suite
with --commit. When a batch of jobs has landed, change detection runs on the series of the
robot's label (analysis/history.py); each new change is raised as an alert
(analysis/alerts.py), and a confirmed alert whose range spans several commits (the robot
skipped some: --tip-only, a busy fleet, or a tip alert read over several new commits) queues
one bisect job per host and range (analysis/alert_bisects.py), whose answer the job attaches
to the alerts. A tip alert's rerun request (suspect or confirmed: analysis/alert_reruns.py)
queues one rerun job on the alert's host: both commits built and measured again in rounds,
the runs attached to the alert; the detection after it lands judges them. Every event is a
line of the watch's log (``LogLine``: queued, measured, the alerts' events since the watch
started), stamped with its own time.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from celery import Celery

from perflab import vcs
from perflab.fleet.app import MAX_JOB_TIMEOUT_S, host_queue
from perflab.fleet.submit import submit, suite_request, wait_for, with_run
from perflab.model.alerts import CONFIRMED_EVENT, SUSPECT
from perflab.model.errors import UsageError
from perflab.model.jobs import JobKind, JobRequest, JobState
from perflab.model.run_request import Identity, RunRequest, Target
from perflab.render.watch_log import alert_event_text, job_end_text, queued_text, rerun_queued_text
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
class LogLine:
    """One event of the watch's log, at its own time (render/watch_log.py lays it out)."""

    at: float
    text: str


@dataclass(frozen=True)
class Round:
    """What one pass of the loop did, and its log's lines."""

    commits: tuple[str, ...]
    build_jobs: tuple[int, ...]
    alerts: int | None           # None: no detection ran this round
    bisect_jobs: tuple[int, ...]
    reruns: tuple[QueuedRerun, ...] = ()
    log: tuple[LogLine, ...] = ()


class AlertLog:
    """The alerts' events not yet logged, of those after the watch started (a worker's
    bisect answers and a person's triage too)."""

    def __init__(self, store: Store):
        self.seen = store.alerts.last_event_id()

    def new_lines(self, store: Store) -> list[LogLine]:
        events = store.alerts.events_after(self.seen)
        if not events:
            return []
        self.seen = events[-1].id
        alerts = {a.id: a for a in store.alerts.all()}
        # a suspect confirmed since is logged as raised a suspect (its status when raised)
        confirmed = {a for a, them in store.alerts.all_events().items()
                     if any(e.action == CONFIRMED_EVENT for e in them)}
        return [LogLine(e.at, text) for e in events
                if (text := alert_event_text(e, alerts[e.alert_id], SUSPECT if e.alert_id in confirmed else None))]


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


def queue_builds(store: Store, app: Celery, options: WatchOptions,
                 commits: list[str]) -> tuple[list[int], list[LogLine]]:
    """A build job per commit and host; the job ids and a "queued" line per commit."""
    suite = suite_request(options.suite)
    subjects = vcs.commit_subjects(options.repo, commits)
    queued, log = [], []
    for commit in commits:
        jobs = []
        for host in options.hosts:
            request = with_run({"repo": options.repo, "commit": commit, "build": options.build, "suite": suite,
                                "timeout": options.timeout_s},
                               RunRequest(target=Target(words=(suite["name"],)),
                                          identity=robot_identity(options, options.label, commit)))
            job_id, _ = submit(store, app, JobKind.BUILD, host_queue(host), request)
            jobs.append((job_id, host))
        queued += [j for j, _ in jobs]
        log.append(LogLine(time.time(), queued_text(commit, subjects.get(commit), jobs)))
    if commits:
        store.branches.remember(options.repo, options.branch, commits[-1])
    return queued, log


def robot_identity(options: WatchOptions, label: str, commit: str | None) -> Identity:
    """What a robot's run records: its label and commit, the repository the commits come
    from, the build line that built the tree, and a `perflab run` line that measures the
    commit again in a clone of it (the suite as the watch read it; no --db: the store is
    the reader's) -- never a worker's own path."""
    words = ["perflab", "run", "--label", label, *(["--commit", commit] if commit else []),
             os.path.abspath(options.suite)]
    return Identity(label=label, commit=commit, repo=options.repo, build=options.build, command_line=tuple(words))


def detect(store: Store, app: Celery, options: WatchOptions, warn: Callable[[str], None], log: AlertLog) -> Round:
    """Change detection on the robot's runs: alerts (judging the reruns landed), bisect
    jobs for multi-commit ranges, rerun jobs for the rerun requests; the alerts' new events
    and the jobs queued as log lines."""
    from perflab.analysis.alerts import update_alerts
    try:
        alerts = len(update_alerts(store, labels=[options.label]))
    except UsageError:
        return Round((), (), 0, (), log=tuple(log.new_lines(store)))   # no complete runs yet
    bisects = queue_bisects(store, app, options, warn)
    reruns = queue_reruns(store, app, options)
    lines = [*log.new_lines(store), *(LogLine(time.time(), rerun_queued_text(r.job_id, r.host, r.alerts))
                                      for r in reruns)]
    return Round((), (), alerts, tuple(bisects), tuple(reruns), tuple(lines))


def queue_bisects(store: Store, app: Celery, options: WatchOptions, warn: Callable[[str], None]) -> list[int]:
    """A bisect job per host and commit range of several commits whose confirmed alerts
    were never bisected (analysis/alert_bisects.py), with the watch's build and
    --bisect-run lines; its alerts are marked "bisect queued"."""
    from perflab.analysis.alert_bisects import mark_queued, pending_bisects
    from perflab.analysis.alerts import ROBOT
    queued = []
    for pending in pending_bisects(store, options.repo, options.hosts):
        if options.bisect_run is None:
            warn(f"alert(s) {', '.join(str(a.id) for a in pending.alerts)} span {pending.commits} commits "
                 f"({pending.good[:12]}..{pending.bad[:12]}); pass --bisect-run CMD to queue a bisect")
            continue
        request: JobRequest = {"repo": options.repo, "good": pending.good, "bad": pending.bad,
                               "build": options.build, "run": options.bisect_run, "timeout": options.timeout_s,
                               "alerts": [a.id for a in pending.alerts], "who": ROBOT}
        job_id, _ = submit(store, app, JobKind.BISECT, host_queue(pending.host), request)
        mark_queued(store, pending, job_id, ROBOT)
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
        request: JobRequest = {**rerun_request(options, pending.last_good, pending.first_bad, alerts),
                               "requests": [requests[a] for a in alerts]}
        job_id, _ = submit(store, app, JobKind.RERUN, host_queue(host), request)
        queued.append(QueuedRerun(job_id, host, tuple(alerts)))
    return queued


def rerun_request(options: WatchOptions, good: str, bad: str, alerts: list[int]) -> JobRequest:
    """A rerun job's request: the commits, build and suite, the rounds (stats/rerun.order,
    each side and label) and the alerts its runs are attached to."""
    from perflab.analysis.alert_reruns import rounds_of
    from perflab.analysis.alerts import ROBOT
    rounds = rounds_of(alerts[0], time.strftime("%Y%m%d%H%M%S"))
    suite = suite_request(options.suite)
    return with_run({"repo": options.repo, "good": good, "bad": bad, "build": options.build, "suite": suite,
                     "timeout": rerun_timeout(options), "alerts": alerts, "who": ROBOT,
                     "rounds": [asdict(r) for r in rounds]},
                    RunRequest(target=Target(words=(suite["name"],)),
                               identity=robot_identity(options, rounds[0].label, None)))


def _known(repo: str, *commits: str) -> bool:
    return all(vcs.git_output(repo, "rev-parse", "--verify", "--quiet", f"{c}^{{commit}}") for c in commits)


def run_round(store: Store, app: Celery, options: WatchOptions, warn: Callable[[str], None],
              wait_s: float | None, log: AlertLog) -> Round:
    """Queue the new commits; with ``wait_s`` (per build job), wait for their jobs and
    detect at once, then wait for the rerun and bisect jobs queued and detect again until
    none is (a request is queued once, an alert asks at most twice for a rerun and once for
    a bisect: this ends)."""
    commits = new_commits(store, options)
    jobs, queued = queue_builds(store, app, options, commits)
    if wait_s is None:
        return Round(tuple(commits), tuple(jobs), None, (), log=tuple(queued))
    ended = _wait_all(store, jobs, wait_s, warn)
    found = detect(store, app, options, warn, log)
    done = replace(found, commits=tuple(commits), build_jobs=tuple(jobs), log=(*queued, *_in_order(ended, found.log)))
    while found.reruns or found.bisect_jobs:
        ended = (_wait_all(store, [r.job_id for r in found.reruns], wait_s * rerun_timeout(options) / options.timeout_s,
                           warn) + _wait_all(store, found.bisect_jobs, wait_s, warn))
        found = detect(store, app, options, warn, log)
        done = replace(done, alerts=(done.alerts or 0) + (found.alerts or 0),
                       bisect_jobs=done.bisect_jobs + found.bisect_jobs, reruns=done.reruns + found.reruns,
                       log=(*done.log, *_in_order(ended, found.log)))
    return done


def _in_order(*lines: Sequence[LogLine]) -> list[LogLine]:
    """Log lines of several sources in the order they happened."""
    return sorted((line for some in lines for line in some), key=lambda x: x.at)


def _wait_all(store: Store, jobs: Sequence[int], wait_s: float, warn: Callable[[str], None]) -> list[LogLine]:
    """Wait for each job; a line for each that ended (a warning for each that did not succeed)."""
    ended = []
    for job_id in jobs:
        job = wait_for(store, job_id, wait_s)
        if job.state.finished:
            ended.append(LogLine(job.finished_at or time.time(), job_end_text(job)))
        if job.state is not JobState.DONE:
            warn(f"job {job_id} ({job.host or job.queue}) {job.state.value}: {job.error or ''}")
    return ended


def loop(store: Store, app: Celery, options: WatchOptions, interval_s: float, warn: Callable[[str], None],
         report: Callable[[Round], None]) -> None:
    """Poll forever: queue new commits each interval; detect when a batch of build or rerun
    jobs has landed; log the alerts' events (a bisect's answer, a person's triage) and the
    jobs' ends as they come (a bisect, long, holds no detection back)."""
    log = AlertLog(store)
    pending: list[int] = []
    bisects: list[int] = []
    while True:
        done_round = run_round(store, app, options, warn, wait_s=None, log=log)
        pending += done_round.build_jobs
        ended = _ended(store, bisects)
        if pending and all(store.jobs.get(j).state.finished for j in pending):
            ended += _ended(store, pending)
            found = detect(store, app, options, warn, log)
            pending = [r.job_id for r in found.reruns]   # when they land, a detection judges them
            bisects += found.bisect_jobs
            done_round = replace(found, commits=done_round.commits, build_jobs=done_round.build_jobs,
                                 log=(*done_round.log, *_in_order(ended, found.log)))
        else:
            done_round = replace(done_round, log=(*done_round.log, *_in_order(ended, log.new_lines(store))))
        report(done_round)
        time.sleep(interval_s)


def _ended(store: Store, jobs: list[int]) -> list[LogLine]:
    """A line for each of ``jobs`` that has ended, taken out of the list."""
    ended = [job for job in map(store.jobs.get, jobs) if job.state.finished]
    for job in ended:
        jobs.remove(job.id)
    return [LogLine(job.finished_at or time.time(), job_end_text(job)) for job in ended]


def absolute(repo: str) -> str:
    return str(Path(repo).expanduser().resolve())
