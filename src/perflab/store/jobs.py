"""The fleet's book in the store: jobs, the runs they made, workers and their heartbeats,
and the robot's memory of the branches it watches.

Every change of a job's state is one conditional UPDATE (``WHERE state = ...``), so two
workers that got the same job (a broker redelivery) cannot both move it on: the one whose
UPDATE touched a row runs it, the other learns so and leaves it alone.
"""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa

from perflab.model.errors import UsageError
from perflab.model.frontpage import FleetHealth
from perflab.model.jobs import Job, JobKind, JobRequest, JobState, WorkerInfo
from perflab.model.limits import parse_id
from perflab.store.connection import StoreConnection, inserted_id
from perflab.store.database import upsert
from perflab.store.schema import job_runs, jobs, watched_branches, workers

MISSED_BEATS = 10   # a worker silent for this many of its heartbeat intervals is dead


def _dead(now: float) -> sa.ColumnElement[bool]:
    return sa.or_(workers.c.stopped_at.is_not(None),
                  workers.c.heartbeat_at < now - MISSED_BEATS * workers.c.heartbeat_s)


class JobRepository:
    """Jobs and the runs they made. A read ends its transaction: a poller must see later commits."""

    def __init__(self, db: StoreConnection):
        self.db = db

    def add(self, kind: JobKind, queue: str, request: JobRequest) -> int:
        result = self.db.conn.execute(jobs.insert().values(
            kind=kind.value, queue=queue, request=request, state=JobState.QUEUED.value,
            submitted_at=time.time(), cancel_requested=False))
        self.db.conn.commit()
        return inserted_id(result)

    def delete(self, job_id: int) -> None:
        """Take back a job that never reached the broker (submit found it unreachable)."""
        self.db.conn.execute(jobs.delete().where(jobs.c.id == job_id, jobs.c.state == JobState.QUEUED.value))
        self.db.conn.commit()

    def get(self, job_id: int) -> Job:
        parse_id(job_id, "job id")   # an id no key can hold is refused before the driver overflows
        conn = self.db.conn
        row = conn.execute(sa.select(jobs).where(jobs.c.id == job_id)).mappings().first()
        if row is None:
            conn.rollback()
            raise UsageError(f"no job {job_id}", hint="'perflab jobs' lists them")
        found = self._from_rows([row])[0]
        conn.rollback()   # end the read transaction: a poller must see later commits
        return found

    def all(self, states: set[JobState] | None = None, limit: int | None = None) -> list[Job]:
        """The jobs in these states (all when None), the last ``limit`` of them, oldest first."""
        query = sa.select(jobs).order_by(jobs.c.id.desc())
        if states:
            query = query.where(jobs.c.state.in_(sorted(s.value for s in states)))
        if limit:
            query = query.limit(limit)
        found = self._from_rows(list(self.db.conn.execute(query).mappings()))
        self.db.conn.rollback()
        return found[::-1]

    def health(self, workers_now: list[WorkerInfo], now: float) -> FleetHealth:
        """The queue's depth, its oldest job's submission, the running jobs and the failures of
        the last day: aggregates over ix_jobs_state, not every job read."""
        conn = self.db.conn
        by_state: dict[str, int] = dict(conn.execute(sa.select(jobs.c.state, sa.func.count())
                                     .where(jobs.c.state.in_([JobState.QUEUED.value, JobState.RUNNING.value]))
                                     .group_by(jobs.c.state)).all())
        oldest = conn.execute(sa.select(sa.func.min(jobs.c.submitted_at))
                              .where(jobs.c.state == JobState.QUEUED.value)).scalar()
        failed = conn.execute(sa.select(sa.func.count()).where(jobs.c.state == JobState.FAILED.value,
                                                               jobs.c.finished_at >= now - 86400)).scalar()
        conn.rollback()
        return FleetHealth(tuple(workers_now), MISSED_BEATS, int(by_state.get(JobState.QUEUED.value, 0)),
                           int(by_state.get(JobState.RUNNING.value, 0)), oldest, int(failed or 0))

    def claim(self, job_id: int, *, host: str, worker: str) -> bool:
        """queued -> running for this worker; False if another delivery or a cancel came first."""
        result = self.db.conn.execute(
            jobs.update().where(jobs.c.id == job_id, jobs.c.state == JobState.QUEUED.value)
            .values(state=JobState.RUNNING.value, started_at=time.time(), host=host, worker=worker))
        self.db.conn.commit()
        return result.rowcount == 1

    def finish(self, job_id: int, state: JobState, *, error: str | None = None,
               worker: str | None = None, output: str | None = None) -> bool:
        """running (or queued, for a cancel) -> a final state; False if it already was final.
        With ``worker``, only while that worker holds the job."""
        where = [jobs.c.id == job_id, jobs.c.state.in_([JobState.QUEUED.value, JobState.RUNNING.value])]
        if worker is not None:
            where.append(jobs.c.worker == worker)
        result = self.db.conn.execute(jobs.update().where(*where).values(
            state=state.value, finished_at=time.time(), error=error, output=output))
        self.db.conn.commit()
        return result.rowcount == 1

    def request_cancel(self, job_id: int) -> Job:
        """Cancel a job: a queued one at once (its worker drops it when it arrives); a
        running one is flagged, and its worker, which polls the flag, kills its process group."""
        job = self.get(job_id)
        if job.state is JobState.QUEUED and self.finish(job_id, JobState.CANCELLED, error="cancelled while queued"):
            return self.get(job_id)
        self.db.conn.execute(jobs.update().where(jobs.c.id == job_id, jobs.c.state == JobState.RUNNING.value)
                             .values(cancel_requested=True))
        self.db.conn.commit()
        return self.get(job_id)

    def cancel_requested(self, job_id: int) -> bool:
        flag = self.db.conn.execute(sa.select(jobs.c.cancel_requested).where(jobs.c.id == job_id)).scalar()
        self.db.conn.rollback()
        return bool(flag)

    def fail_orphaned(self) -> list[int]:
        """The dead-worker policy (fleet/worker.py): a running job whose worker stopped, or has
        missed MISSED_BEATS heartbeats, is failed and never run again."""
        now = time.time()
        conn = self.db.conn
        dead = sa.select(workers.c.name).where(_dead(now))
        orphaned = [int(i) for i in conn.execute(
            sa.select(jobs.c.id).where(jobs.c.state == JobState.RUNNING.value, jobs.c.worker.in_(dead))).scalars()]
        failed = []
        for job_id in orphaned:
            result = conn.execute(
                jobs.update().where(jobs.c.id == job_id, jobs.c.state == JobState.RUNNING.value)
                .values(state=JobState.FAILED.value, finished_at=now,
                        error=f"its worker died (missed {MISSED_BEATS} heartbeats)"))
            if result.rowcount == 1:
                failed.append(job_id)
        conn.commit()
        return failed

    def _from_rows(self, rows: list[Any]) -> list[Job]:
        ids = [row["id"] for row in rows]
        made: dict[int, list[int]] = {}
        if ids:
            query = sa.select(job_runs.c.job_id, job_runs.c.run_id).where(job_runs.c.job_id.in_(ids))
            for job_id, run_id in self.db.conn.execute(query.order_by(job_runs.c.run_id)):
                made.setdefault(int(job_id), []).append(int(run_id))
        return [Job(id=row["id"], kind=JobKind(row["kind"]), queue=row["queue"], request=row["request"],
                    state=JobState(row["state"]), submitted_at=row["submitted_at"], started_at=row["started_at"],
                    finished_at=row["finished_at"], host=row["host"], worker=row["worker"],
                    cancel_requested=bool(row["cancel_requested"]), error=row["error"], output=row["output"],
                    run_ids=tuple(made.get(row["id"], ()))) for row in rows]


class WorkerRepository:
    """The fleet's workers and their heartbeats."""

    def __init__(self, db: StoreConnection):
        self.db = db

    def register(self, info: WorkerInfo) -> None:
        conn = self.db.conn
        conn.execute(workers.delete().where(workers.c.name == info.name))
        conn.execute(workers.insert().values(
            name=info.name, host=info.host, machine_class=info.machine_class, pid=info.pid,
            nodename=info.nodename, started_at=info.started_at, heartbeat_at=info.heartbeat_at,
            heartbeat_s=info.heartbeat_s, stopped_at=None, environment=info.environment))
        conn.commit()

    def heartbeat(self, name: str) -> None:
        self.db.conn.execute(workers.update().where(workers.c.name == name).values(heartbeat_at=time.time()))
        self.db.conn.commit()

    def stopped(self, name: str) -> None:
        self.db.conn.execute(workers.update().where(workers.c.name == name).values(stopped_at=time.time()))
        self.db.conn.commit()

    def all(self) -> list[WorkerInfo]:
        rows = self.db.conn.execute(sa.select(workers).order_by(workers.c.host, workers.c.started_at)).mappings()
        found = [WorkerInfo(name=r["name"], host=r["host"], machine_class=r["machine_class"], pid=r["pid"],
                            nodename=r["nodename"], started_at=r["started_at"], heartbeat_at=r["heartbeat_at"],
                            heartbeat_s=r["heartbeat_s"], stopped_at=r["stopped_at"],
                            environment=r["environment"] or {}) for r in rows]
        self.db.conn.rollback()
        return found

    def alive(self, name: str) -> bool:
        row = self.db.conn.execute(sa.select(sa.not_(_dead(time.time()))).where(workers.c.name == name)).first()
        self.db.conn.rollback()
        return row is not None and bool(row[0])

    def known_queues(self) -> set[str]:
        """Every queue a worker has served: host.NAME and class.NAME."""
        rows = self.db.conn.execute(sa.select(workers.c.host, workers.c.machine_class).distinct()).all()
        self.db.conn.rollback()
        return {f"host.{h}" for h, _ in rows} | {f"class.{c}" for _, c in rows if c}


class BranchRepository:
    """The robot's memory: the last commit it saw of each branch it watches."""

    def __init__(self, db: StoreConnection):
        self.db = db

    def last_seen(self, repo: str, branch: str) -> str | None:
        value = self.db.conn.execute(sa.select(watched_branches.c.last_commit).where(
            watched_branches.c.repo == repo, watched_branches.c.branch == branch)).scalar()
        self.db.conn.rollback()
        return value

    def remember(self, repo: str, branch: str, commit: str) -> None:
        statement = upsert(self.db.dialect, watched_branches, ["repo", "branch"], ["last_commit", "updated_at"])
        self.db.conn.execute(statement, [{"repo": repo, "branch": branch, "last_commit": commit,
                                          "updated_at": time.time()}])
        self.db.conn.commit()
