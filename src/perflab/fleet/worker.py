"""`perflab worker`: a Celery worker that takes one job at a time for its host and class.

Policy for a dead worker (stated in docs/fleet.md): a job whose worker misses ten heartbeats
(store/jobs.py MISSED_BEATS) is marked failed, never run a second time. Its run, if it began, stays in
the store as an interrupted run: a benchmark cut short by a dying machine is evidence about
that machine, and rerunning it silently elsewhere would hide it. Any live worker (and
`perflab jobs`) applies the policy. When Redis later redelivers the unacknowledged job, the
worker that gets it finds the job no longer queued and drops it: one job, at most one run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from celery import Celery, signals
from celery.exceptions import SoftTimeLimitExceeded

from perflab.fleet.app import class_queue, host_queue, make_app
from perflab.fleet.execution import Outcome, WorkerContext, execute
from perflab.model.jobs import JobState, WorkerInfo
from perflab.store import Store

HEARTBEAT_S = 3.0
STORE_RETRY_S = 2.0         # how often a worker retries a store that went away

log = logging.getLogger("perflab.fleet")

# Set in the worker's main process before the pool forks; its children inherit it.
_CONTEXT: WorkerContext | None = None
_STORES: dict[int, Store] = {}   # one store per process (a forked child opens its own)


def _store() -> Store:
    assert _CONTEXT is not None
    store = _STORES.get(os.getpid())
    if store is None:
        store = _STORES[os.getpid()] = _retrying(lambda: Store(_CONTEXT.db, create=True))
    return store


# what a store that went away raises: the failed call, then the connection it left behind
_UNREACHABLE = (sa.exc.OperationalError, sa.exc.InterfaceError, sa.exc.PendingRollbackError)


def _retrying(action: Any, give_up_after_s: float = 600.0) -> Any:
    """``action()`` again while the store is unreachable (PostgreSQL restarting), bounded."""
    deadline = time.monotonic() + give_up_after_s
    while True:
        try:
            return action()
        except _UNREACHABLE:
            if time.monotonic() > deadline:
                raise
            for store in _STORES.values():
                store.reconnect()
            log.warning("perflab worker: the store is unreachable; retrying in %.0f s", STORE_RETRY_S)
            time.sleep(STORE_RETRY_S)


def run_job(job_id: int) -> None:
    """The Celery task: claim the job in the store, run it, write how it ended."""
    assert _CONTEXT is not None
    ctx = _CONTEXT
    store = _store()
    if not _retrying(lambda: store.jobs.claim(job_id, host=ctx.host, worker=ctx.name)):
        _not_claimed(store, job_id, ctx)
        return
    job = _retrying(lambda: store.jobs.get(job_id))
    try:
        outcome = execute(job, ctx, lambda: _cancel_requested(store, job_id))
    except SoftTimeLimitExceeded:
        outcome = Outcome("failed", f"timed out after {job.timeout:g} s (the job's --job-timeout)", "")
    except Exception as error:   # a bug here must not leave the job 'running' for ever
        line = f"worker error: {type(error).__name__}: {error}"
        _retrying(lambda: store.jobs.finish(job_id, JobState.FAILED, worker=ctx.name, error=line))
        raise
    state = {"done": JobState.DONE, "cancelled": JobState.CANCELLED}.get(outcome.kind, JobState.FAILED)
    _retrying(lambda: store.jobs.finish(job_id, state, error=outcome.error, worker=ctx.name,
                                        output=outcome.output))


def _cancel_requested(store: Store, job_id: int) -> bool:
    """The job's cancel flag; False while the store does not answer (asked again later)."""
    try:
        return store.jobs.cancel_requested(job_id)
    except _UNREACHABLE:
        store.reconnect()
        return False


def _not_claimed(store: Store, job_id: int, ctx: WorkerContext) -> None:
    """A delivery of a job that is not queued: cancelled or finished (drop it), or running.
    Running on this very worker means the attempt before died with its pool process (a hard
    time limit, a crash) and Celery requeued it: that attempt is failed. Running elsewhere on
    a live worker is a duplicate delivery: left alone."""
    job = _retrying(lambda: store.jobs.get(job_id))
    if job.state is JobState.RUNNING and job.worker == ctx.name:
        _retrying(lambda: store.jobs.finish(job_id, JobState.FAILED, worker=ctx.name,
                                            error="the worker's pool process died during the job "
                                                  "(hard time limit or crash)"))
    elif job.state is JobState.RUNNING and job.worker and not store.workers.alive(job.worker):
        store.jobs.fail_orphaned()
    log.info("perflab worker: job %s is %s; this delivery is dropped", job_id, job.state.value)


def make_worker_app(broker: str) -> Celery:
    app = make_app(broker)
    app.task(name="perflab.job", bind=False, acks_late=True, reject_on_worker_lost=True)(run_job)
    return app


class Heartbeat(threading.Thread):
    """Beats the worker's heart in the store and applies the dead-worker policy to others."""

    def __init__(self, db: str, name: str, interval_s: float):
        super().__init__(name="perflab-heartbeat", daemon=True)
        self.db, self.worker, self.interval_s = db, name, interval_s
        self.stopped = threading.Event()

    def run(self) -> None:
        store: Store | None = None
        while not self.stopped.wait(self.interval_s):
            try:
                store = store or Store(self.db, create=True)
                store.workers.heartbeat(self.worker)
                for job_id in store.jobs.fail_orphaned():
                    log.warning("perflab worker: job %s failed: its worker died", job_id)
            except _UNREACHABLE:
                if store is not None:
                    store.reconnect()   # the store is away: beat again later
            except Exception:   # a heart that stops on a bug would fail this worker's jobs
                log.exception("perflab worker: heartbeat failed")
                if store is not None:
                    store.reconnect()
        if store is not None:
            with contextlib.suppress(sa.exc.SQLAlchemyError):
                store.workers.stopped(self.worker)
            store.close()


def serve(*, broker: str, db: str, host: str, machine_class: str | None, workdir: Path,
          environment: dict[str, Any], heartbeat_s: float = HEARTBEAT_S, loglevel: str = "WARNING") -> None:
    """Register this worker, beat its heart, and consume its queues until stopped."""
    global _CONTEXT
    name = f"{host}:{os.uname().nodename}:{os.getpid()}"
    # Runs made here are this host's (store.this_host): the jobs' runs record it, and this
    # worker's store recovery finishes the runs a killed worker of this host left.
    os.environ["PERFLAB_HOST"] = host
    workdir.mkdir(parents=True, exist_ok=True)
    now = time.time()
    with Store(db, create=True) as store:
        store.workers.register(WorkerInfo(name=name, host=host, machine_class=machine_class, pid=os.getpid(),
                                          nodename=os.uname().nodename, started_at=now, heartbeat_at=now,
                                          heartbeat_s=heartbeat_s, stopped_at=None, environment=environment))
        store.jobs.fail_orphaned()
    _CONTEXT = WorkerContext(name=name, host=host, machine_class=machine_class, db=db, workdir=workdir)
    queues = [host_queue(host)] + ([class_queue(machine_class)] if machine_class else [])
    heart = Heartbeat(db, name, heartbeat_s)
    heart.start()
    app = make_worker_app(broker)
    signals.worker_ready.connect(lambda **_: print(f"perflab worker {host}: ready", file=sys.stderr, flush=True),
                                 weak=False)
    try:
        app.worker_main(argv=["worker", "--pool", "prefork", "--concurrency", "1", "-O", "fair",
                              "--prefetch-multiplier", "1", "--queues", ",".join(queues),
                              "--hostname", f"{host}@{os.uname().nodename}-{os.getpid()}",
                              "--without-gossip", "--without-mingle", "--without-heartbeat",
                              "--loglevel", loglevel])
    finally:
        heart.stopped.set()
        heart.join(timeout=heartbeat_s * 3)
