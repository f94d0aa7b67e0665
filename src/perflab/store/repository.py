"""Reading and writing runs and samples. Every sample is its own transaction."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import struct
import sys
import time
from array import array
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import asdict, dataclass, fields
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Engine

if TYPE_CHECKING:  # numpy is imported where samples are read: `perflab runs` needs none
    import numpy as np

from perflab.model.errors import UsageError
from perflab.model.limits import is_id
from perflab.model.records import (
    ENVIRONMENT_NOT_LOADED,
    SPEC_NOT_LOADED,
    UNKNOWN_HOSTS,
    Measurement,
    MetricInfo,
    Point,
    RunInfo,
    RunStatus,
    is_monitor_metric,
)
from perflab.model.run_request import RunRequest
from perflab.store import location, pending
from perflab.store.database import insert_or_ignore, open_engine, opens_read_only, upsert
from perflab.store.schema import (
    artifacts,
    job_runs,
    metrics,
    points,
    profile_symbols,
    profile_traces,
    runs,
    samples,
    series,
)

UNREACHABLE_WAIT_S = 600.0   # how long a writer waits for a PostgreSQL server to come back
RECONNECT_PAUSE_S = 1.0
_T = TypeVar("_T")


@dataclass(frozen=True)
class SampleRows:
    """A run's samples as parallel columns (numpy where numeric), one entry per value;
    ``points`` the normalised JSON of each sample's point, ``params`` the same decoded
    (once per distinct point)."""

    benchmark: list[str]
    points: list[str]
    repetition: np.ndarray
    metric: list[str]
    value: np.ndarray        # NaN where the sample failed
    unit: list[str]
    status: list[str]
    note: list[str]
    measured_at: np.ndarray

    def __len__(self) -> int:
        return len(self.metric)

    @cached_property
    def params(self) -> list[dict[str, Any]]:
        decoded = {text: decode_params(text) for text in dict.fromkeys(self.points)}
        return [decoded[text] for text in self.points]

    def own(self) -> SampleRows:
        """Only the benchmarks' own metrics: without what monitors and the runner's pressure
        watch record beside every sample."""
        import numpy as np
        keep = [i for i, metric in enumerate(self.metric) if not is_monitor_metric(metric)]
        kept: dict[str, Any] = {}
        for f in fields(self):
            column = getattr(self, f.name)
            kept[f.name] = column[keep] if isinstance(column, np.ndarray) else [column[i] for i in keep]
        return SampleRows(**kept)


def _inserted_id(result: sa.CursorResult[Any]) -> int:
    """The key of the row an insert made (every table here has an integer key)."""
    key = result.inserted_primary_key
    if key is None:
        raise RuntimeError("the database returned no key for the row it inserted")
    return int(key[0])


def decode_params(point: str) -> dict[str, Any]:
    """A point's parameters from their stored, normalised JSON: the one place they are decoded."""
    value = json.loads(point)
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class ValueGroup:
    """The ok values of one (benchmark, point, metric) of a run, in repetition order.
    ``point`` is the point's identity (normalised JSON), ``params`` its parameters."""

    benchmark: str
    point: str
    metric: str
    unit: str
    values: np.ndarray
    failures: int         # samples of this point that failed, timed out or were invalid

    @cached_property
    def params(self) -> dict[str, Any]:
        return decode_params(self.point)


@dataclass(frozen=True)
class ProfileSymbol:
    """One symbol of one sample's profile: % of the samples of ``event``."""

    benchmark: str
    point: str            # normalised JSON
    repetition: int
    event: str
    symbol: str
    self_pct: float
    children_pct: float

    @cached_property
    def params(self) -> dict[str, Any]:
        return decode_params(self.point)


@dataclass(frozen=True)
class ProfileTrace:
    """One call chain of one sample's profile; ``frames`` joined by ";" (see schema)."""

    benchmark: str
    point: str            # normalised JSON
    repetition: int
    event: str
    kind: str             # "calltrace" (callee first, value %) or "stack" (root first, weight)
    frames: str
    value: float

    @cached_property
    def params(self) -> dict[str, Any]:
        return decode_params(self.point)


@dataclass(frozen=True)
class Artifact:
    """A file kept for the user (perf.data, a log), stored by content hash beside the DB."""

    benchmark: str | None
    params: str | None
    repetition: int | None
    kind: str
    sha256: str
    size: int
    path: Path


class Store:
    """A perflab database, opened and checked."""

    def __init__(self, target: str | None = None, *, create: bool = False):
        self.target = location.resolve(target)
        self.read_only = opens_read_only(self.target, create=create)
        self.engine: Engine = open_engine(self.target, create=create)
        self._conn: sa.Connection | None = None
        self._point_ids: dict[tuple[str, str], int] = {}
        self._insert_samples = samples.insert()
        if not self.read_only:   # a reader without write permission cannot finish others' runs
            self.recover_pending()

    # -- lifetime --------------------------------------------------------------
    @property
    def conn(self) -> sa.Connection:
        if self._conn is None:
            self._conn = self.engine.connect()
        return self._conn

    def when_reachable(self, action: Callable[[], _T], wait_s: float = UNREACHABLE_WAIT_S,
                       on_wait: Callable[[], None] | None = None) -> _T:
        """``action()``, again while a PostgreSQL server does not answer (a restart, a network
        cut), for at most ``wait_s``; an SQLite error is raised at once (a local file that
        fails will not heal by waiting)."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                return action()
            except (sa.exc.OperationalError, sa.exc.InterfaceError, sa.exc.PendingRollbackError):
                if not self.is_server or time.monotonic() > deadline:
                    raise
                if on_wait is not None:
                    on_wait()
                self.reconnect()
                time.sleep(RECONNECT_PAUSE_S)

    @property
    def is_server(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    def reconnect(self) -> None:
        """Drop the connection (after the server went away): the next use opens a new one."""
        if self._conn is not None:
            with contextlib.suppress(sa.exc.SQLAlchemyError):  # already broken: the pool discards it
                self._conn.close()
            self._conn = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------
    def create_run(self, *, label: str, host: str, request: RunRequest,
                   environment: dict[str, Any], commit: str | None = None,
                   commit_describe: str | None = None, repo: str | None = None,
                   job_id: int | None = None) -> int:
        """A new running run; ``job_id`` links it to the fleet job that asked for it, in
        the same transaction (a job's run is never half recorded)."""
        result = self.conn.execute(runs.insert().values(
            label=label, commit=commit, commit_describe=commit_describe, repo=repo, host=host,
            started_at=time.time(), status=RunStatus.RUNNING.value, pid=os.getpid(),
            spec=request.to_json(), environment=environment))
        run_id = _inserted_id(result)
        if job_id is not None:
            self.conn.execute(job_runs.insert().values(job_id=job_id, run_id=run_id))
        self.conn.commit()
        return run_id

    def point_id(self, point: Point) -> int:
        """The id of a benchmark's parameter point, created on first use."""
        key = (point.benchmark, point.key)
        cached = self._point_ids.get(key)
        if cached is not None:
            return cached
        select = sa.select(points.c.id).where(points.c.benchmark == key[0], points.c.params == key[1])
        found = self.conn.execute(select).scalar()
        if found is None:
            try:
                found = _inserted_id(self.conn.execute(points.insert().values(benchmark=key[0],
                                                                              params=key[1])))
                self.conn.commit()
            except sa.exc.IntegrityError:  # another perflab inserted it meanwhile
                self.conn.rollback()
                found = self.conn.execute(select).scalar_one()
        self._point_ids[key] = int(found)
        return int(found)

    def add_sample(self, run_id: int, point: Point, repetition: int,
                   measurements: Sequence[Measurement], measured_at: float | None = None) -> None:
        """Commit every value of one repetition at once: a sample is whole or absent."""
        point_id = self.point_id(point)
        stamp = time.time() if measured_at is None else measured_at
        self.conn.execute(self._insert_samples, [
            {"run_id": run_id, "point_id": point_id, "repetition": repetition,
             "metric": m.metric, "value": m.value, "unit": m.unit, "status": m.status.value,
             "note": m.note, "measured_at": stamp}
            for m in measurements])
        self.conn.commit()

    # -- samples on their way in (see pending.py) ------------------------------------
    def open_pending(self, run_id: int) -> pending.PendingFile:
        return pending.PendingFile(pending.path_for(self.target, run_id))

    def flush_pending(self, run_id: int, file: pending.PendingFile) -> None:
        """Move a running run's pending samples into the database in one transaction."""
        self._ingest(run_id, file.path)
        file.truncate()

    def flush_pending_if_reachable(self, run_id: int, file: pending.PendingFile) -> bool:
        """``flush_pending``; False (the samples stay in the file) while a PostgreSQL server
        does not answer."""
        try:
            self.flush_pending(run_id, file)
            return True
        except (sa.exc.OperationalError, sa.exc.InterfaceError, sa.exc.PendingRollbackError):
            if not self.is_server:
                raise
            self.reconnect()
            return False

    def recover_pending(self) -> None:
        """Finish what dead perflabs left: their pending samples are ingested (each file
        claimed once, see pending.py) and their runs written 'interrupted'."""
        for run_id, path, claimer in pending.existing(self.target):
            if claimer is not None and pending.process_alive(claimer):
                continue  # another perflab is recovering it right now
            if self._owner_alive(run_id):
                continue  # its perflab is alive and will flush them itself
            claimed = pending.claim(path)
            if claimed is None:
                continue  # another perflab claimed it first
            if self._owner_alive(run_id):  # a --resume began between our look and the claim
                pending.unclaim(claimed)
                continue
            if self._run_row(run_id) is not None:
                self._ingest(run_id, claimed)
            claimed.unlink(missing_ok=True)
        self._mark_dead_runs()

    def _run_row(self, run_id: int) -> Any:
        return self.conn.execute(sa.select(runs).where(runs.c.id == run_id)).mappings().first()

    def _owner_alive(self, run_id: int) -> bool:
        found = _run_infos(self.conn.execute(sa.select(runs).where(runs.c.id == run_id)))
        return bool(found) and found[0].status is RunStatus.RUNNING

    def _mark_dead_runs(self) -> None:
        """Write 'interrupted' for this host's runs whose perflab died (SIGKILL, power loss),
        finished at their last sample; the run is sealed as an interrupted run is."""
        query = sa.select(runs.c.id, runs.c.pid, runs.c.started_at).where(
            runs.c.status == RunStatus.RUNNING.value, runs.c.host == this_host())
        dead = [(run_id, pid, started) for run_id, pid, started in self.conn.execute(query)
                if not _alive(pid, this_host())]
        if self.conn.in_transaction():
            self.conn.commit()
        for run_id, pid, started in dead:
            try:
                last = self.conn.execute(sa.select(sa.func.max(samples.c.measured_at))
                                         .where(samples.c.run_id == run_id)).scalar()
                marked = self.conn.execute(
                    runs.update().where(runs.c.id == run_id, runs.c.pid == pid,
                                        runs.c.status == RunStatus.RUNNING.value)
                    .values(status=RunStatus.INTERRUPTED.value, finished_at=last or started))
                if marked.rowcount == 1:   # we, not a concurrent perflab, marked it
                    self.seal(run_id)      # commits the mark and the series together
                else:
                    self.conn.commit()
            except sa.exc.OperationalError:
                # a read-only database or a long lock: the next perflab will write it
                self.conn.rollback()

    def _ingest(self, run_id: int, path: Path) -> None:
        rows = pending.read_rows(path, run_id)
        if rows:
            # a crash between this commit and the truncation replays lines: keep the first
            self.conn.execute(_insert_ignoring_duplicates(self.engine.dialect.name), rows)
            self.conn.commit()

    def save_metric_info(self, benchmark: str, infos: Iterable[MetricInfo]) -> None:
        """Record what each metric means, so later readers know its direction.

        One upsert per metric: several perflabs registering the same new benchmark at
        once all succeed (the last description wins)."""
        _save_metric_infos(self.conn, benchmark, infos)
        self.conn.commit()

    def set_run_status(self, run_id: int, status: RunStatus, *, finished: bool = True,
                       environment: dict[str, Any] | None = None) -> None:
        values: dict[str, Any] = {"status": status.value}
        if finished:
            values["finished_at"] = time.time()
        if status is RunStatus.RUNNING:
            values.update(pid=os.getpid(), finished_at=None)
            self.conn.execute(series.delete().where(series.c.run_id == run_id))  # unsealed again
        if environment is not None:
            values["environment"] = environment
        self.conn.execute(runs.update().where(runs.c.id == run_id).values(**values))
        self.conn.commit()

    def update_request(self, run_id: int, change: Callable[[RunRequest], RunRequest]) -> None:
        """Rewrite a run's stored request (how an early-stopped run ended, an A/B's decision)."""
        request = change(RunRequest.from_json(self._run_row(run_id).spec or {}))
        self.conn.execute(runs.update().where(runs.c.id == run_id).values(spec=request.to_json()))
        self.conn.commit()

    # -- reading ---------------------------------------------------------------
    def list_runs(self, *, counted: bool = True, details: bool = True) -> list[RunInfo]:
        """Every run, oldest first, with its count of benchmarks and samples (zero when not
        ``counted``: a history needs the runs, not their counts), and without reading their
        spec and environment when not ``details`` (decoding 5,000 environments costs a
        history page more than its values: they are NotLoaded, see ``with_details``).

        Sealed runs are counted from their series (a repetition of a point is counted
        once: the metric with the most values and failures has them all); only unsealed
        runs are counted from their sample rows.
        """
        query = (sa.select(runs) if details else sa.select(*_LIGHT_COLUMNS)).order_by(runs.c.started_at, runs.c.id)
        if not counted:
            return _run_infos(self.conn.execute(query))
        per_point = (sa.select(series.c.run_id, points.c.benchmark,
                               sa.func.max(sa.func.length(series.c.ok_values) / 8
                                           + series.c.failures).label("n"))
                     .select_from(series.join(points, points.c.id == series.c.point_id))
                     .group_by(series.c.run_id, series.c.point_id, points.c.benchmark).subquery())
        sealed = (sa.select(per_point.c.run_id, sa.func.sum(per_point.c.n).label("samples"),
                            sa.func.count(sa.distinct(per_point.c.benchmark)).label("benchmarks"))
                  .group_by(per_point.c.run_id))
        per_sample = (sa.select(samples.c.run_id, samples.c.point_id, samples.c.repetition).distinct()
                      .where(samples.c.run_id.not_in(sa.select(series.c.run_id).distinct()))
                      .subquery())
        unsealed = (sa.select(per_sample.c.run_id, sa.func.count().label("samples"),
                              sa.func.count(sa.distinct(points.c.benchmark)).label("benchmarks"))
                    .select_from(per_sample.join(points, points.c.id == per_sample.c.point_id))
                    .group_by(per_sample.c.run_id))
        counts = {run_id: (int(n), int(b)) for run_id, n, b in self.conn.execute(sealed)}
        counts.update({run_id: (int(n), int(b)) for run_id, n, b in self.conn.execute(unsealed)})
        result = _run_infos(self.conn.execute(query))
        for info in result:
            info.samples, info.benchmarks = counts.get(info.id, (0, 0))
        return result

    def with_details(self, chosen: Iterable[RunInfo]) -> dict[int, RunInfo]:
        """Run id -> the run with its spec and environment, for the few of ``chosen`` that
        need them (a change report's named runs; the rest of a history stays light)."""
        wanted = sorted({run.id for run in chosen})
        found: dict[int, RunInfo] = {}
        for start in range(0, len(wanted), _RUNS_BY_ID):  # bounded IN lists
            query = sa.select(runs).where(runs.c.id.in_(wanted[start:start + _RUNS_BY_ID]))
            found.update((run.id, run) for run in _run_infos(self.conn.execute(query)))
        return found

    def replicate_runs(self, hosts: set[str], exclude: AbstractSet[int] = frozenset()) -> list[list[int]]:
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
        for run_id, host, label, commit, spec, environment in self.conn.execute(query):
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

    def resolve_run(self, reference: str) -> RunInfo:
        """A run by id, or the latest run with that label, or the latest run of a commit
        (its hash or a prefix of 4 or more hex digits)."""
        reference = reference.strip()
        latest = (runs.c.started_at.desc(), runs.c.id.desc())
        queries = [sa.select(runs).where(runs.c.id == int(reference))] if is_id(reference) else []
        queries.append(sa.select(runs).where(runs.c.label == reference).order_by(*latest))
        if len(reference) >= 4 and all(c in "0123456789abcdefABCDEF" for c in reference):
            queries.append(sa.select(runs).where(runs.c.commit.startswith(reference.lower())).order_by(*latest))
        for query in queries:  # the first that finds one
            found = _run_infos(self.conn.execute(query.limit(1)))
            if found:
                return found[0]
        raise UsageError(f"no run with id or label {reference!r} (nor a commit of that prefix)",
                         hint="'perflab runs' lists them")

    def sample_rows(self, run_id: int) -> SampleRows:
        import numpy as np
        query = (sa.select(points.c.benchmark, points.c.params, samples.c.repetition,
                           samples.c.metric, samples.c.value, samples.c.unit, samples.c.status,
                           samples.c.note, samples.c.measured_at)
                 .select_from(samples.join(points, points.c.id == samples.c.point_id))
                 .where(samples.c.run_id == run_id)
                 .order_by(samples.c.id))
        rows = self.conn.execute(query).all()
        columns = list(zip(*rows)) if rows else [()] * 9
        return SampleRows(
            benchmark=list(columns[0]), points=list(columns[1]),
            repetition=np.asarray(columns[2], dtype=np.int64),
            metric=list(columns[3]),
            value=np.asarray([np.nan if v is None else v for v in columns[4]], dtype=float),
            unit=list(columns[5]), status=list(columns[6]), note=list(columns[7]),
            measured_at=np.asarray(columns[8], dtype=float))

    def value_groups(self, run_id: int, benchmarks: set[str] | None = None,
                     metrics: set[str] | None = None) -> list[ValueGroup]:
        """A run's ok values grouped by point and metric, in repetition order.

        A sealed (finished) run is read from its series blobs; an unsealed one from its
        sample rows (the database sorts via the index, numpy splits).
        """
        import numpy as np
        if self._sealed(run_id):
            query = _series_query(benchmarks, metrics).where(series.c.run_id == run_id)
            return [ValueGroup(bench, params, metric, unit, np.frombuffer(blob, dtype="<f8"), failures)
                    for _, bench, params, metric, unit, failures, blob in self.conn.execute(query)]
        return self._groups_from_rows(run_id, benchmarks, metrics)

    def value_groups_of_runs(self, run_ids: Iterable[int], benchmarks: set[str] | None = None,
                             metrics: set[str] | None = None) -> dict[int, list[ValueGroup]]:
        """``value_groups`` of many runs at once (a history of 5,000 commits): the sealed
        runs' series of the chosen benchmarks and metrics in one query, the few unsealed
        runs (killed, resumed) from their sample rows."""
        import numpy as np
        wanted = set(run_ids)
        if not wanted:
            return {}
        query = _series_query(benchmarks, metrics)
        if len(wanted) <= _RUNS_BY_ID:
            query = query.where(series.c.run_id.in_(sorted(wanted)))
        found: dict[int, list[ValueGroup]] = {}
        for run_id, bench, params, metric, unit, failures, blob in self.conn.execute(query):
            if run_id in wanted:
                found.setdefault(run_id, []).append(
                    ValueGroup(bench, params, metric, unit, np.frombuffer(blob, dtype="<f8"), failures))
        # a run with series rows is sealed; of the others, those without any are not (yet)
        missing = wanted - found.keys()
        if missing:
            sealed_query = sa.select(series.c.run_id).distinct()
            if len(missing) <= _RUNS_BY_ID:
                sealed_query = sealed_query.where(series.c.run_id.in_(sorted(missing)))
            sealed = {run_id for (run_id,) in self.conn.execute(sealed_query)}
            for run_id in sorted(missing - sealed):  # from their rows
                found[run_id] = self._groups_from_rows(run_id, benchmarks, metrics)
        return found

    def seal(self, run_id: int) -> None:
        """Write the run's series blobs (after its last sample). The samples are read in
        order, a batch at a time, and each series is written once complete: memory holds one
        series blob (8 bytes a value), not the rows nor the run's other series."""
        self.conn.execute(series.delete().where(series.c.run_id == run_id))
        query = (sa.select(samples.c.point_id, samples.c.metric, samples.c.value, samples.c.unit,
                           samples.c.status)
                 .where(samples.c.run_id == run_id)
                 .order_by(samples.c.point_id, samples.c.metric, samples.c.repetition))
        group: tuple[int, str] | None = None
        unit, failures = "", 0
        values = array("d")

        def close() -> None:  # written at once, while the query is still read: one blob in memory
            if group is not None:
                if sys.byteorder == "big":
                    values.byteswap()
                self.conn.execute(series.insert(), [{
                    "run_id": run_id, "point_id": group[0], "metric": group[1], "unit": unit,
                    "failures": failures, "ok_values": memoryview(values).cast("B")}])

        # stream_results: PostgreSQL reads through a server-side cursor, not the whole result at once
        for batch in self.conn.execute(query.execution_options(stream_results=True)).partitions(_SEAL_BATCH):
            for point_id, metric, value, row_unit, status in batch:
                if (point_id, metric) != group:
                    close()
                    group, unit, failures, values = (point_id, metric), row_unit, 0, array("d")
                if status == "ok" and value is not None and value == value:   # not NaN
                    values.append(value)
                else:
                    failures += 1
        close()
        self.conn.commit()

    def _sealed(self, run_id: int) -> bool:
        return self.conn.execute(sa.select(series.c.run_id).where(series.c.run_id == run_id)
                                 .limit(1)).first() is not None

    def _groups_from_rows(self, run_id: int, benchmarks: set[str] | None,
                          metrics: set[str] | None) -> list[ValueGroup]:
        import numpy as np
        point_query = (sa.select(points.c.id, points.c.benchmark, points.c.params)
                       .where(points.c.id.in_(sa.select(samples.c.point_id).distinct()
                                               .where(samples.c.run_id == run_id))))
        if benchmarks:
            point_query = point_query.where(points.c.benchmark.in_(sorted(benchmarks)))
        known = {pid: (bench, params) for pid, bench, params in self.conn.execute(point_query)}
        if not known:
            return []
        query = (sa.select(samples.c.point_id, samples.c.metric, samples.c.value, samples.c.unit,
                           samples.c.status)
                 .where(samples.c.run_id == run_id, samples.c.point_id.in_(sorted(known)))
                 .order_by(samples.c.point_id, samples.c.metric, samples.c.repetition))
        if metrics:
            query = query.where(samples.c.metric.in_(sorted(metrics)))
        rows = self.conn.execute(query).all()
        if not rows:
            return []
        pids, names, values, units, statuses = zip(*rows)
        pid_array = np.fromiter(pids, dtype=np.int64, count=len(pids))
        value_array = np.array(values, dtype=float)  # None -> nan
        ok = np.fromiter((s == "ok" for s in statuses), dtype=bool, count=len(statuses))
        ok &= ~np.isnan(value_array)
        # a new group starts where the point or the metric changes
        changed = (pid_array[1:] != pid_array[:-1]) | np.fromiter(
            (a != b for a, b in zip(names[1:], names[:-1])), dtype=bool, count=len(names) - 1)
        starts = np.flatnonzero(np.concatenate(([True], changed))).tolist()
        groups = []
        for start, end in zip(starts, starts[1:] + [len(rows)]):
            bench, params = known[int(pid_array[start])]
            mask = ok[start:end]
            groups.append(ValueGroup(bench, params, names[start], units[start],
                                     value_array[start:end][mask], int(end - start - mask.sum())))
        return groups

    def done_repetitions(self, run_id: int) -> set[tuple[str, str, int]]:
        """(benchmark, params, repetition) already recorded, for --resume."""
        query = (sa.select(points.c.benchmark, points.c.params, samples.c.repetition).distinct()
                 .select_from(samples.join(points, points.c.id == samples.c.point_id))
                 .where(samples.c.run_id == run_id))
        return {(b, p, int(r)) for b, p, r in self.conn.execute(query)}

    def metric_infos(self, benchmark: str) -> dict[str, MetricInfo]:
        from perflab.model.records import Direction
        query = sa.select(metrics).where(metrics.c.benchmark == benchmark)
        return {row.metric: MetricInfo(name=row.metric, unit=row.unit,
                                       direction=Direction(row.direction),
                                       noise_floor=row.noise_floor, description=row.description)
                for row in self.conn.execute(query)}

    # -- profiles ----------------------------------------------------------------
    def add_profile(self, run_id: int, point_id: int, repetition: int, event: str,
                    symbols: Iterable[tuple[str, float, float]],
                    traces: Iterable[tuple[str, str, float]]) -> None:
        """Replace one sample's profile of ``event``: (symbol, self %, children %) rows and
        (kind, frames, value) rows, in one transaction (a resumed sample overwrites)."""
        key = {"run_id": run_id, "point_id": point_id, "repetition": repetition, "event": event}
        for table in (profile_symbols, profile_traces):
            self.conn.execute(table.delete().where(*(table.c[k] == v for k, v in key.items())))
        symbol_rows = [dict(key, symbol=name, self_pct=float(own), children_pct=float(children))
                       for name, own, children in symbols]
        trace_rows = [dict(key, kind=kind, frames=frames, value=float(value))
                      for kind, frames, value in traces]
        if symbol_rows:
            self.conn.execute(profile_symbols.insert(), symbol_rows)
        if trace_rows:
            self.conn.execute(profile_traces.insert(), trace_rows)
        self.conn.commit()

    def profiled_runs(self, run_ids: Iterable[int]) -> set[int]:
        """Those of ``run_ids`` with profile rows: two queries, where a side of a change
        pooling thousands of unprofiled runs would otherwise ask each run."""
        wanted = set(run_ids)
        found: set[int] = set()
        for table in (profile_symbols, profile_traces):
            query = sa.select(table.c.run_id).distinct()
            if len(wanted) <= _RUNS_BY_ID:
                query = query.where(table.c.run_id.in_(sorted(wanted)))
            found |= {run_id for (run_id,) in self.conn.execute(query) if run_id in wanted}
        return found

    def profile_symbols(self, run_id: int, benchmarks: set[str] | None = None) -> list[ProfileSymbol]:
        table = profile_symbols
        query = (sa.select(points.c.benchmark, points.c.params, table.c.repetition, table.c.event,
                           table.c.symbol, table.c.self_pct, table.c.children_pct)
                 .select_from(table.join(points, points.c.id == table.c.point_id))
                 .where(table.c.run_id == run_id)
                 .order_by(table.c.point_id, table.c.event, table.c.symbol, table.c.repetition))
        if benchmarks:
            query = query.where(points.c.benchmark.in_(sorted(benchmarks)))
        return [ProfileSymbol(*row) for row in self.conn.execute(query)]

    def profile_traces(self, run_id: int, kind: str,
                       benchmarks: set[str] | None = None) -> list[ProfileTrace]:
        table = profile_traces
        query = (sa.select(points.c.benchmark, points.c.params, table.c.repetition, table.c.event,
                           table.c.kind, table.c.frames, table.c.value)
                 .select_from(table.join(points, points.c.id == table.c.point_id))
                 .where(table.c.run_id == run_id, table.c.kind == kind)
                 .order_by(table.c.point_id, table.c.event, table.c.frames, table.c.repetition))
        if benchmarks:
            query = query.where(points.c.benchmark.in_(sorted(benchmarks)))
        return [ProfileTrace(*row) for row in self.conn.execute(query)]

    # -- artifacts -------------------------------------------------------------------
    @property
    def artifact_dir(self) -> Path:
        """``<db>.artifacts`` beside an SQLite file; the data directory for a server."""
        if location.is_url(self.target):
            return location.default_path().parent / "artifacts"
        path = Path(self.target).expanduser()
        return path.parent / (path.name + ".artifacts")

    def add_artifact(self, run_id: int, point_id: int | None, repetition: int | None,
                     kind: str, source: Path) -> Artifact:
        """Move ``source`` into the content-addressed store and record it (same content, one copy)."""
        digest = hashlib.sha256()
        with open(source, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        sha = digest.hexdigest()
        target = self.artifact_dir / sha[:2] / sha
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            Path(source).unlink()
        else:
            shutil.move(source, target.with_suffix(".partial"))
            os.replace(target.with_suffix(".partial"), target)  # whole or absent
        size = target.stat().st_size
        self.conn.execute(artifacts.insert().values(
            run_id=run_id, point_id=point_id, repetition=repetition, kind=kind, sha256=sha,
            size=size, created_at=time.time()))
        self.conn.commit()
        return self._artifact(None, None, repetition, kind, sha, size)

    def artifacts(self, run_id: int) -> list[Artifact]:
        query = (sa.select(points.c.benchmark, points.c.params, artifacts.c.repetition,
                           artifacts.c.kind, artifacts.c.sha256, artifacts.c.size)
                 .select_from(artifacts.outerjoin(points, points.c.id == artifacts.c.point_id))
                 .where(artifacts.c.run_id == run_id).order_by(artifacts.c.id))
        return [self._artifact(*row) for row in self.conn.execute(query)]

    def _artifact(self, benchmark: str | None, params: str | None, repetition: int | None,
                  kind: str, sha: str, size: int) -> Artifact:
        return Artifact(benchmark, params, repetition, kind, sha, int(size),
                        self.artifact_dir / sha[:2] / sha)

    # -- importing -------------------------------------------------------------
    def import_run(self, *, label: str, host: str, request: RunRequest, environment: dict[str, Any],
                   samples: Iterable[tuple[Point, int, Sequence[Measurement], float | None]],
                   metric_infos: dict[str, Sequence[MetricInfo]],
                   status: RunStatus = RunStatus.COMPLETE,
                   progress: Callable[[int], None] | None = None) -> int:
        """Write a whole finished run in ONE transaction: all of it, or nothing.

        ``samples`` are (point, repetition, measurements, measured_at or None), read as
        they come and inserted a batch at a time (memory does not grow with them);
        ``progress(n)`` is told the samples written so far after each batch. The run row,
        new points, samples, metric metadata and the series blobs (``seal``) commit
        together; any error rolls everything back, so a failed import leaves no trace.
        """
        conn = self.conn
        if conn.in_transaction():  # only reads can be pending: every writer above commits
            conn.commit()
        now = time.time()
        new_ids: dict[tuple[str, str], int] = {}
        try:
            run_id = _inserted_id(conn.execute(runs.insert().values(
                label=label, commit=None, commit_describe=None, repo=None, host=host,
                started_at=now, finished_at=now, status=status.value, pid=None,
                spec=request.to_json(), environment=environment)))
            rows: list[dict[str, Any]] = []
            written = 0
            for point, repetition, measurements, measured_at in samples:
                key = (point.benchmark, point.key)
                point_id = self._point_ids.get(key) or new_ids.get(key)
                if point_id is None:
                    point_id = new_ids[key] = self._point_in_transaction(*key)
                stamp = now if measured_at is None else measured_at
                rows.extend({"run_id": run_id, "point_id": point_id, "repetition": repetition,
                             "metric": m.metric, "value": m.value, "unit": m.unit,
                             "status": m.status.value, "note": m.note, "measured_at": stamp}
                            for m in measurements)
                written += 1
                if len(rows) >= _IMPORT_BATCH:
                    conn.execute(self._insert_samples, rows)
                    rows = []
                    if progress is not None:
                        progress(written)
            if rows:
                conn.execute(self._insert_samples, rows)
            if progress is not None:
                progress(written)
            for benchmark, infos in metric_infos.items():
                _save_metric_infos(conn, benchmark, infos)
            self.seal(run_id)  # writes the series blobs and commits: the one commit
        except BaseException:
            conn.rollback()
            raise
        self._point_ids.update(new_ids)  # cached only once they surely exist
        return run_id

    def _point_in_transaction(self, benchmark: str, params: str) -> int:
        """A point's id, inserting it without committing; a concurrent twin is no error."""
        statement = insert_or_ignore(self.engine.dialect.name, points, ["benchmark", "params"])
        if statement is not None:
            self.conn.execute(statement.values(benchmark=benchmark, params=params))
        select = sa.select(points.c.id).where(points.c.benchmark == benchmark, points.c.params == params)
        found = self.conn.execute(select).scalar()
        if found is None:  # another dialect: plain insert
            found = _inserted_id(self.conn.execute(points.insert().values(benchmark=benchmark, params=params)))
        return int(found)


_SEAL_BATCH = 10_000      # sample rows read at once when sealing a run
_IMPORT_BATCH = 10_000    # sample rows inserted at once by an import
_F8 = struct.Struct("<d")  # a series blob's value: little-endian float64, as numpy's "<f8"

# value_groups_of_runs names up to this many runs in its query (an IN list); more, and it
# reads the chosen metrics' series of every run and keeps the wanted ones (no huge IN list)
_RUNS_BY_ID = 500


def _series_query(benchmarks: set[str] | None, metrics: set[str] | None) -> sa.Select[Any]:
    """(run id, benchmark, params, metric, unit, failures, blob) of the sealed series of the
    chosen benchmarks and metrics (all when None), by point and metric."""
    query = (sa.select(series.c.run_id, points.c.benchmark, points.c.params, series.c.metric, series.c.unit,
                       series.c.failures, series.c.ok_values)
             .select_from(series.join(points, points.c.id == series.c.point_id))
             .order_by(series.c.point_id, series.c.metric))
    if benchmarks:
        query = query.where(points.c.benchmark.in_(sorted(benchmarks)))
    if metrics:
        query = query.where(series.c.metric.in_(sorted(metrics)))
    return query


#: Run options that do not change what a repetition measures: a run of 10 repetitions
#: repeats one of 25 of the same command.
_NOT_SETUP = frozenset({"repetitions", "seed", "shuffle", "show_output", "timeout", "force"})


def replicate_identity(spec: dict[str, Any], environment: dict[str, Any]) -> str:
    """What a run measured, as a key: its commands or workloads with the options that set
    them up (pinning, warm-up, set-up commands, monitors, profiling), not their sweeps
    (rows pair up by point), and the kernel it ran on; of an imported run, the tool it came
    from. Runs with the same key, host and commit are replicates of one thing
    (`Store.replicate_runs`)."""
    request = RunRequest.from_json(spec)
    what = sorted(json.dumps({"workload": p.workload,
                              "options": {k: v for k, v in asdict(p.options).items() if k not in _NOT_SETUP}},
                             sort_keys=True, default=str)
                  for p in request.plans)
    imported = request.imported.kind if request.imported else None
    return json.dumps([what, imported, environment.get("kernel")], sort_keys=True, default=str)


def _insert_ignoring_duplicates(dialect: str) -> Any:
    statement = insert_or_ignore(dialect, samples, ["run_id", "point_id", "metric", "repetition"])
    return samples.insert() if statement is None else statement


_METRIC_COLUMNS = ["unit", "direction", "noise_floor", "description"]


def _save_metric_infos(conn: sa.Connection, benchmark: str, infos: Iterable[MetricInfo]) -> None:
    """Insert or update metric metadata without a read first (no window for a twin)."""
    rows = [{"benchmark": benchmark, "metric": info.name, "unit": info.unit,
             "direction": info.direction.value, "noise_floor": info.noise_floor,
             "description": info.description} for info in infos]
    if not rows:
        return
    statement = upsert(conn.dialect.name, metrics, ["benchmark", "metric"], _METRIC_COLUMNS)
    if statement is not None:
        conn.execute(statement, rows)
        return
    for row in rows:  # another dialect: read, then write
        where = (metrics.c.benchmark == benchmark) & (metrics.c.metric == row["metric"])
        values = {k: row[k] for k in _METRIC_COLUMNS}
        if conn.execute(sa.select(metrics.c.metric).where(where)).first():
            conn.execute(metrics.update().where(where).values(**values))
        else:
            conn.execute(metrics.insert().values(**row))


# the runs' columns but their spec and environment (see list_runs)
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
        if status is RunStatus.RUNNING and not _alive(row[i_pid], row[i_host]):
            status = RunStatus.INTERRUPTED  # its perflab died (SIGKILL, power loss)
        out.append(RunInfo(
            id=row[i_id], label=row[i_label], commit=row[i_commit], commit_describe=row[i_describe],
            host=row[i_host], started_at=row[i_started], finished_at=row[i_finished], status=status,
            spec=SPEC_NOT_LOADED if i_spec is None else row[i_spec] or {},
            environment=ENVIRONMENT_NOT_LOADED if i_environment is None else row[i_environment] or {},
            pid=row[i_pid], repo=row[i_repo]))
    return out


def this_host() -> str:
    """The name runs made here are recorded under: $PERFLAB_HOST (a fleet worker's --host,
    so one machine may serve as several lab hosts), else the machine's node name."""
    return os.environ.get("PERFLAB_HOST") or os.uname().nodename


def _alive(pid: int | None, host: str) -> bool:
    """Whether the perflab that owns a running run still lives (only knowable on its host)."""
    if pid is None or host != this_host():
        return True
    return pending.process_alive(pid)
