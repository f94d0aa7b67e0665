"""Runs: creating one, moving its status, and finding runs (by reference, all of them,
the replicates of one another)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import asdict
from typing import Any

import sqlalchemy as sa

from perflab.model.errors import UsageError
from perflab.model.limits import is_id, shorten
from perflab.model.records import ENVIRONMENT_NOT_LOADED, SPEC_NOT_LOADED, UNKNOWN_HOSTS, RunInfo, RunStatus
from perflab.model.run_request import RunRequest
from perflab.store import pending
from perflab.store.connection import StoreConnection, among_ids, inserted_id
from perflab.store.schema import job_runs, points, runs, samples, series
from perflab.store.series import SeriesRepository


def this_host() -> str:
    """The name runs made here are recorded under: $PERFLAB_HOST (a fleet worker's --host,
    so one machine may serve as several lab hosts), else the machine's node name."""
    return os.environ.get("PERFLAB_HOST") or os.uname().nodename


def owner_alive(pid: int | None, host: str) -> bool:
    """Whether the perflab that owns a running run still lives (only knowable on its host)."""
    if pid is None or host != this_host():
        return True
    return pending.process_alive(pid)


class RunRepository:
    """The runs of a store; every write is one transaction."""

    def __init__(self, db: StoreConnection, series: SeriesRepository):
        self.db = db
        self.series = series

    # -- writing ---------------------------------------------------------------
    def create(self, *, label: str, host: str, request: RunRequest,
               environment: dict[str, Any], commit: str | None = None,
               commit_describe: str | None = None, repo: str | None = None,
               job_id: int | None = None) -> int:
        """A new running run; ``job_id`` links it to the fleet job that asked for it, in
        the same transaction (a job's run is never half recorded)."""
        conn = self.db.conn
        result = conn.execute(runs.insert().values(
            label=label, commit=commit, commit_describe=commit_describe, repo=repo, host=host,
            started_at=time.time(), status=RunStatus.RUNNING.value, pid=os.getpid(),
            spec=request.to_json(), environment=environment))
        run_id = inserted_id(result)
        if job_id is not None:
            conn.execute(job_runs.insert().values(job_id=job_id, run_id=run_id))
        conn.commit()
        return run_id

    def insert_finished(self, *, label: str, host: str, request: RunRequest,
                        environment: dict[str, Any], status: RunStatus, at: float) -> int:
        """The row of a run that is already over (an import); not committed."""
        return inserted_id(self.db.conn.execute(runs.insert().values(
            label=label, commit=None, commit_describe=None, repo=None, host=host,
            started_at=at, finished_at=at, status=status.value, pid=None,
            spec=request.to_json(), environment=environment)))

    def set_status(self, run_id: int, status: RunStatus, *, finished: bool = True,
                   environment: dict[str, Any] | None = None) -> None:
        values: dict[str, Any] = {"status": status.value}
        if finished:
            values["finished_at"] = time.time()
        if status is RunStatus.RUNNING:
            values.update(pid=os.getpid(), finished_at=None)
            self.series.unseal(run_id)
        if environment is not None:
            values["environment"] = environment
        self.db.conn.execute(runs.update().where(runs.c.id == run_id).values(**values))
        self.db.conn.commit()

    def update_request(self, run_id: int, change: Callable[[RunRequest], RunRequest]) -> None:
        """Rewrite a run's stored request (how an early-stopped run ended, an A/B's decision)."""
        row = self.db.conn.execute(sa.select(runs.c.spec).where(runs.c.id == run_id)).first()
        request = change(RunRequest.from_json((row[0] if row else None) or {}))
        self.db.conn.execute(runs.update().where(runs.c.id == run_id).values(spec=request.to_json()))
        self.db.conn.commit()

    def mark_dead(self) -> None:
        """Write 'interrupted' for this host's runs whose perflab died (SIGKILL, power loss),
        finished at their last sample; the run is sealed as an interrupted run is."""
        conn = self.db.conn
        query = sa.select(runs.c.id, runs.c.pid, runs.c.started_at).where(
            runs.c.status == RunStatus.RUNNING.value, runs.c.host == this_host())
        dead = [(run_id, pid, started) for run_id, pid, started in conn.execute(query)
                if not owner_alive(pid, this_host())]
        self.db.commit_reads()
        for run_id, pid, started in dead:
            try:
                last = conn.execute(sa.select(sa.func.max(samples.c.measured_at))
                                    .where(samples.c.run_id == run_id)).scalar()
                marked = conn.execute(
                    runs.update().where(runs.c.id == run_id, runs.c.pid == pid,
                                        runs.c.status == RunStatus.RUNNING.value)
                    .values(status=RunStatus.INTERRUPTED.value, finished_at=last or started))
                if marked.rowcount == 1:   # we, not a concurrent perflab, marked it
                    self.series.seal(run_id)      # commits the mark and the series together
                else:
                    conn.commit()
            except sa.exc.OperationalError:
                # a read-only database or a long lock: the next perflab will write it
                conn.rollback()

    # -- reading ---------------------------------------------------------------
    def exists(self, run_id: int) -> bool:
        return self.db.conn.execute(sa.select(runs.c.id).where(runs.c.id == run_id)).first() is not None

    def is_running(self, run_id: int) -> bool:
        """Whether the run is recorded running and its perflab lives."""
        found = _run_infos(self.db.conn.execute(sa.select(*_LIGHT_COLUMNS).where(runs.c.id == run_id)))
        return bool(found) and found[0].status is RunStatus.RUNNING

    def all(self, *, counted: bool = True, details: bool = True) -> list[RunInfo]:
        """Every run, oldest first, with its count of benchmarks and samples (zero when not
        ``counted``: a history needs the runs, not their counts), and without reading their
        spec and environment when not ``details`` (decoding 5,000 environments costs a
        history page more than its values: they are NotLoaded, see ``with_details``)."""
        query = (sa.select(runs) if details else sa.select(*_LIGHT_COLUMNS)).order_by(runs.c.started_at, runs.c.id)
        result = _run_infos(self.db.conn.execute(query))
        if counted:
            counts = self.series.counts()
            for info in result:
                info.samples, info.benchmarks = counts.get(info.id, (0, 0))
        return result

    def measuring(self, benchmarks: AbstractSet[str], metrics: AbstractSet[str],
                  hosts: AbstractSet[str] = frozenset()) -> list[RunInfo]:
        """Light runs (``all(counted=False, details=False)``'s) that sealed values of these
        benchmarks and metrics (either empty: any), on these hosts (empty: any), and every run
        not complete (its values may be in sample rows only), oldest first: a history of a few
        series reads their runs through the index of series by point, not every run of the store."""
        having = sa.select(series.c.run_id).select_from(series.join(points, points.c.id == series.c.point_id))
        if benchmarks:
            having = having.where(points.c.benchmark.in_(sorted(benchmarks)))
        if metrics:
            having = having.where(series.c.metric.in_(sorted(metrics)))
        # two queries, not one OR: the runs by their key from the series index, the runs not
        # complete through schema 9's ix_runs_status (an OR of both scans every run)
        unfinished = [s.value for s in RunStatus if s is not RunStatus.COMPLETE]
        # with hosts, PostgreSQL hashes the series' run ids against the hosts' runs read from
        # ix_runs_host_light alone (schema 11); SQLite probes each run of the series by key
        measured = runs.c.id.in_(having)
        found: dict[int, RunInfo] = {}
        for where in (measured, runs.c.status.in_(unfinished)):
            query = sa.select(*_LIGHT_COLUMNS).where(where)
            if hosts:
                query = query.where(runs.c.host.in_(sorted(hosts)))
            found.update((r.id, r) for r in _run_infos(self.db.conn.execute(query)))
        return sorted(found.values(), key=lambda r: (r.started_at, r.id))

    def recent(self, limit: int) -> list[RunInfo]:
        """The newest ``limit`` runs, newest first, without their spec, environment and
        counts: schema 8's ix_runs_started reads them in order."""
        query = sa.select(*_LIGHT_COLUMNS).order_by(runs.c.started_at.desc(), runs.c.id.desc()).limit(limit)
        return _run_infos(self.db.conn.execute(query))

    def since(self, moment: float) -> list[RunInfo]:
        """The runs started at or after ``moment``, oldest first, counted (``all``'s rows for
        a day, read through ix_runs_started, the counts of those runs only)."""
        query = (sa.select(*_LIGHT_COLUMNS).where(runs.c.started_at >= moment)
                 .order_by(runs.c.started_at, runs.c.id))
        result = _run_infos(self.db.conn.execute(query))
        counts = self.series.counts([r.id for r in result])
        for info in result:
            info.samples, info.benchmarks = counts.get(info.id, (0, 0))
        return result

    def with_details(self, chosen: Iterable[RunInfo]) -> dict[int, RunInfo]:
        """Run id -> the run with its spec and environment, for the few of ``chosen`` that
        need them (a change report's named runs; the rest of a history stays light)."""
        wanted = sorted({run.id for run in chosen})
        found: dict[int, RunInfo] = {}
        for among in among_ids(runs.c.id, wanted, self.db.dialect):
            found.update((run.id, run) for run in _run_infos(self.db.conn.execute(sa.select(runs).where(among))))
        return found

    def replicates(self, hosts: set[str], exclude: AbstractSet[int] = frozenset()) -> list[list[int]]:
        """Ids of complete runs on ``hosts`` that repeat one another, in groups of two or
        more: the replicates run-to-run variance is measured on. Runs other than ``exclude``
        (the runs being compared: their own difference is what is tested) repeat one another
        when they ran the same thing (`replicate_identity`) on the same host, kernel and
        commit, and either share a label ('perflab calibrate -k K' records K under one) or
        each has a label no other such run has (ten A/A pairs labelled a1, b1, a2, ...: one
        group of twenty). Two labels of several runs each stay apart: a label is how a user
        says "this build" when the commit does not."""
        known = sorted(set(hosts) - UNKNOWN_HOSTS)   # a run of an unknown machine repeats nothing
        complete = (runs.c.host.in_(known), runs.c.status == RunStatus.COMPLETE.value)
        # only a host and commit of two or more runs can hold replicates: a nightly store of
        # one run a commit reads no spec at all
        shared = (sa.select(runs.c.host, runs.c.commit).where(*complete)
                  .group_by(runs.c.host, runs.c.commit).having(sa.func.count() >= 2).subquery())
        query = (sa.select(runs.c.id, runs.c.host, runs.c.label, runs.c.commit, runs.c.spec, runs.c.environment)
                 .join(shared, sa.and_(runs.c.host == shared.c.host,
                                       runs.c.commit.is_not_distinct_from(shared.c.commit)))
                 .where(*complete).order_by(runs.c.id))
        same: dict[tuple[str, str | None, str], dict[str, list[int]]] = {}
        for run_id, host, label, commit, spec, environment in self.db.conn.execute(query):
            what = replicate_identity(spec or {}, environment or {})
            same.setdefault((host, commit, what), {}).setdefault(label, []).append(int(run_id))
        groups = []
        for labels in same.values():
            # a label of several runs stays apart: what the compared runs leave of it never
            # joins the runs alone under labels of their own
            alone = [ids[0] for ids in labels.values() if len(ids) == 1]
            candidates = [ids for ids in labels.values() if len(ids) >= 2] + [alone]
            groups += [kept for kept in ([i for i in ids if i not in exclude] for ids in candidates)
                       if len(kept) >= 2]
        return groups

    def resolve(self, reference: str) -> RunInfo:
        """A run by id, or the latest run with that label, or the latest run of a commit
        (its hash or a prefix of 4 or more hex digits)."""
        reference = reference.strip()
        latest = (runs.c.started_at.desc(), runs.c.id.desc())
        queries = [sa.select(runs).where(runs.c.id == int(reference))] if is_id(reference) else []
        queries.append(sa.select(runs).where(runs.c.label == reference).order_by(*latest))
        if len(reference) >= 4 and all(c in "0123456789abcdefABCDEF" for c in reference):
            queries.append(sa.select(runs).where(runs.c.commit.startswith(reference.lower())).order_by(*latest))
        for query in queries:  # the first that finds one
            found = _run_infos(self.db.conn.execute(query.limit(1)))
            if found:
                return found[0]
        raise UsageError(f"no run with id or label {shorten(reference)!r} (nor a commit of that prefix)",
                         hint="'perflab runs' lists them")


#: Run options that do not change what a repetition measures: a run of 10 repetitions
#: repeats one of 25 of the same command.
_NOT_SETUP = frozenset({"repetitions", "seed", "shuffle", "show_output", "timeout", "force"})


def replicate_identity(spec: dict[str, Any], environment: dict[str, Any]) -> str:
    """What a run measured, as a key: its commands or workloads with the options that set
    them up (pinning, warm-up, set-up commands, monitors, profiling), not their sweeps
    (rows pair up by point), and the kernel it ran on; of an imported run, the tool it came
    from. Runs with the same key, host and commit are replicates of one thing
    (`RunRepository.replicates`)."""
    request = RunRequest.from_json(spec)
    what = sorted(json.dumps({"workload": p.workload,
                              "options": {k: v for k, v in asdict(p.options).items() if k not in _NOT_SETUP}},
                             sort_keys=True, default=str)
                  for p in request.plans)
    imported = request.imported.kind if request.imported else None
    return json.dumps([what, imported, environment.get("kernel")], sort_keys=True, default=str)


# the runs' columns but their spec and environment (see RunRepository.all)
_LIGHT_COLUMNS = [c for c in runs.c if c.name not in ("spec", "environment")]

_STATUSES = {status.value: status for status in RunStatus}


def _run_infos(result: sa.CursorResult[Any]) -> list[RunInfo]:
    """The runs of a query of ``runs``' columns (all, or _LIGHT_COLUMNS), read from the rows
    by position: several times faster than row mappings for a history's 5,000 runs."""
    at = {name: i for i, name in enumerate(result.keys())}
    i_id, i_label, i_commit, i_describe, i_host, i_started, i_finished, i_status, i_pid, i_repo = (
        at[name] for name in ("id", "label", "commit", "commit_describe", "host", "started_at", "finished_at",
                              "status", "pid", "repo"))
    i_spec, i_environment = at.get("spec"), at.get("environment")
    out = []
    for row in result:
        status = _STATUSES[row[i_status]]
        if status is RunStatus.RUNNING and not owner_alive(row[i_pid], row[i_host]):
            status = RunStatus.INTERRUPTED  # its perflab died (SIGKILL, power loss)
        out.append(RunInfo(
            id=row[i_id], label=row[i_label], commit=row[i_commit], commit_describe=row[i_describe],
            host=row[i_host], started_at=row[i_started], finished_at=row[i_finished], status=status,
            spec=SPEC_NOT_LOADED if i_spec is None else row[i_spec] or {},
            environment=ENVIRONMENT_NOT_LOADED if i_environment is None else row[i_environment] or {},
            pid=row[i_pid], repo=row[i_repo]))
    return out
