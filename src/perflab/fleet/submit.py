"""Putting a job on the fleet: checked, written to the store, then sent to its queue."""

from __future__ import annotations

import time
from pathlib import Path

from celery import Celery

from perflab.fleet.app import MAX_JOB_TIMEOUT_S, check_broker, publish
from perflab.model.errors import EnvironmentProblem, UsageError
from perflab.model.jobs import Job, JobKind, JobRequest, SuiteText
from perflab.model.run_request import RunRequest
from perflab.store import Store

WAIT_POLL_S = 0.5


def suite_request(path: str) -> SuiteText:
    """A suite travels as its text (the worker needs no copy); it is checked here first."""
    from perflab.workloads.suite import load_suite, machine_variables
    load_suite(path, machine_variables())   # a malformed suite is refused before it is queued
    return {"name": Path(path).name, "text": Path(path).read_text(encoding="utf-8")}


def with_run(request: JobRequest, run: RunRequest) -> JobRequest:
    """A job's request with the RunRequest document the worker records (``"run"``)."""
    return {**request, "run": run.to_json()}


def check_timeout(timeout_s: float) -> None:
    if not 0 < timeout_s <= MAX_JOB_TIMEOUT_S:
        raise UsageError(f"bad --job-timeout {timeout_s:g}: must be more than 0 and at most "
                         f"{MAX_JOB_TIMEOUT_S:g} s (the broker's visibility timeout is twice that)")


def submit(store: Store, app: Celery, kind: JobKind, queue: str, request: JobRequest) -> tuple[int, str | None]:
    """Queue a job; returns its id and a warning when no worker has ever served its queue
    (the job is queued all the same: it waits for such a worker)."""
    check_timeout(float(request["timeout"]))
    check_broker(app)
    warning = None
    if queue not in store.workers.known_queues():
        warning = (f"no worker has served {queue} yet: job queued; it waits until "
                   f"'perflab worker --{queue.split('.')[0]} {queue.split('.', 1)[1]}' starts")
    job_id = store.jobs.add(kind, queue, request)
    try:
        publish(app, job_id, queue, float(request["timeout"]))
    except Exception as error:   # kombu/redis errors: the job never reached the broker
        store.jobs.delete(job_id)
        raise EnvironmentProblem(f"cannot send job to the broker {app.conf.broker_url}: {type(error).__name__}",
                                 hint="is Redis running there?") from None
    return job_id, warning


def wait_for(store: Store, job_id: int, timeout_s: float | None) -> Job:
    """Block until the job is done, failed or cancelled (or the timeout passes)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        store.jobs.fail_orphaned()
        job = store.jobs.get(job_id)
        if job.state.finished:
            return job
        if deadline is not None and time.monotonic() > deadline:
            return job
        time.sleep(WAIT_POLL_S)

