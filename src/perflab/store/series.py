"""A finished run's values, sealed: one blob of ok values per (point, metric), read back
as value groups (the unit every comparison and history works on)."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

if TYPE_CHECKING:
    import numpy as np

from perflab.store.connection import RUNS_BY_ID, StoreConnection, among_ids
from perflab.store.samples import decode_params
from perflab.store.schema import points, run_ids_on, runs, samples, series

_SEAL_BATCH = 10_000      # rows read at once in a pass: samples when sealing a run, series blobs
CHUNKED_RUNS = 20 * RUNS_BY_ID   # up to this many runs are read by their key, not by a pass over the store


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


class SeriesRepository:
    """Sealing runs and reading their values by point and metric."""

    def __init__(self, db: StoreConnection):
        self.db = db

    def seal(self, run_id: int) -> None:
        """Write the run's series blobs (after its last sample) and commit. The samples are
        read in order, a batch at a time, and each series is written once complete: memory
        holds one series blob (8 bytes a value), not the rows nor the run's other series."""
        conn = self.db.conn
        conn.execute(series.delete().where(series.c.run_id == run_id))
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
                conn.execute(series.insert(), [{
                    "run_id": run_id, "point_id": group[0], "metric": group[1], "unit": unit,
                    "failures": failures, "ok_values": memoryview(values).cast("B")}])

        # stream_results: PostgreSQL reads through a server-side cursor, not the whole result at once
        for batch in conn.execute(query.execution_options(stream_results=True)).partitions(_SEAL_BATCH):
            for point_id, metric, value, row_unit, status in batch:
                if (point_id, metric) != group:
                    close()
                    group, unit, failures, values = (point_id, metric), row_unit, 0, array("d")
                if status == "ok" and value is not None and value == value:   # not NaN
                    values.append(value)
                else:
                    failures += 1
        close()
        conn.commit()

    def unseal(self, run_id: int) -> None:
        """Drop a run's series (it runs again); not committed."""
        self.db.conn.execute(series.delete().where(series.c.run_id == run_id))

    def sealed(self, run_id: int) -> bool:
        return self.db.conn.execute(sa.select(series.c.run_id).where(series.c.run_id == run_id)
                                    .limit(1)).first() is not None

    def counts(self, run_ids: list[int] | None = None) -> dict[int, tuple[int, int]]:
        """Run id -> (samples, benchmarks) of every run that has any (of ``run_ids`` only,
        when given, read RUNS_BY_ID at a time: `runs --since` counts a day's runs, not a
        year's). Sealed runs are counted from their series (a repetition of a point is counted
        once: the metric with the most values and failures has them all); only unsealed runs
        from their sample rows."""
        if run_ids is None:
            return self._counts(sa.true(), samples.c.run_id.not_in(sa.select(series.c.run_id).distinct()))
        found: dict[int, tuple[int, int]] = {}
        for start in range(0, len(run_ids), RUNS_BY_ID):
            chunk = run_ids[start:start + RUNS_BY_ID]
            # a few runs: each probed by the series' key, not every sealed run listed
            unsealed = ~sa.exists().where(series.c.run_id == samples.c.run_id)
            found.update(self._counts(series.c.run_id.in_(chunk), samples.c.run_id.in_(chunk) & unsealed))
        return found

    def _counts(self, sealed_where: Any, samples_where: Any) -> dict[int, tuple[int, int]]:
        per_point = (sa.select(series.c.run_id, points.c.benchmark,
                               sa.func.max(sa.func.length(series.c.ok_values) / 8
                                           + series.c.failures).label("n"))
                     .select_from(series.join(points, points.c.id == series.c.point_id)).where(sealed_where)
                     .group_by(series.c.run_id, series.c.point_id, points.c.benchmark).subquery())
        sealed = (sa.select(per_point.c.run_id, sa.func.sum(per_point.c.n).label("samples"),
                            sa.func.count(sa.distinct(per_point.c.benchmark)).label("benchmarks"))
                  .group_by(per_point.c.run_id))
        per_sample = (sa.select(samples.c.run_id, samples.c.point_id, samples.c.repetition).distinct()
                      .where(samples_where)
                      .subquery())
        unsealed = (sa.select(per_sample.c.run_id, sa.func.count().label("samples"),
                              sa.func.count(sa.distinct(points.c.benchmark)).label("benchmarks"))
                    .select_from(per_sample.join(points, points.c.id == per_sample.c.point_id))
                    .group_by(per_sample.c.run_id))
        counts = {run_id: (int(n), int(b)) for run_id, n, b in self.db.conn.execute(sealed)}
        counts.update({run_id: (int(n), int(b)) for run_id, n, b in self.db.conn.execute(unsealed)})
        return counts

    def of_one(self, host: str, benchmark: str, params: str, metric: str, *, around: int | None = None,
               runs_before: int = 0, runs_after: int = 0) -> list[tuple[int, str | None, float, Any]]:
        """One series' sealed values on ``host``: (run id, commit, started at, values), oldest
        run first; ``params`` the normalised JSON of its point. With ``around`` (a run id),
        only the ``runs_before`` runs recorded before it and ``runs_after`` from it on, in the
        order they were recorded: the index of series by point reads them and stops (a
        sparkline costs its own rows, not its series')."""
        import numpy as np
        point = self.db.conn.execute(sa.select(points.c.id).where(points.c.benchmark == benchmark,
                                                                  points.c.params == params)).scalar()
        if point is None:
            return []
        # PostgreSQL: the host's run ids (ix_runs_host_light) merged with the series' (8 ms, not 30);
        # SQLite: the series' index read in order, each run's host probed by key (0.1 ms)
        on_host = series.c.run_id.in_(run_ids_on([host])) if self.db.is_server else runs.c.host == host
        query = (sa.select(runs.c.id, runs.c.commit, runs.c.started_at, series.c.ok_values)
                 .select_from(series.join(runs, runs.c.id == series.c.run_id))
                 .where(series.c.point_id == point, series.c.metric == metric, on_host))
        if around is None:
            found = list(self.db.conn.execute(query.order_by(runs.c.started_at, runs.c.id)))
        else:
            before = query.where(series.c.run_id < around).order_by(series.c.run_id.desc())
            after = query.where(series.c.run_id >= around).order_by(series.c.run_id)
            found = [*reversed(list(self.db.conn.execute(before.limit(runs_before)))),
                     *self.db.conn.execute(after.limit(runs_after))]
        return [(run_id, commit, started, np.frombuffer(blob, dtype="<f8")) for run_id, commit, started, blob in found]

    def first_run(self, host: str, key: str) -> int | None:
        """The first run of history point ``key`` (a commit, or run-<id>) on ``host``."""
        if key.startswith("run-") and key[4:].isdigit():
            return int(key[4:])
        return self.db.conn.execute(sa.select(sa.func.min(runs.c.id))
                                    .where(runs.c.commit == key, runs.c.host == host)).scalar()

    def value_groups(self, run_id: int, benchmarks: set[str] | None = None,
                     metrics: set[str] | None = None) -> list[ValueGroup]:
        """A run's ok values grouped by point and metric, in repetition order.

        A sealed (finished) run is read from its series blobs; an unsealed one from its
        sample rows (the database sorts via the index, numpy splits).
        """
        import numpy as np
        if self.sealed(run_id):
            query = _series_query(benchmarks, metrics).where(series.c.run_id == run_id)
            return [ValueGroup(bench, params, metric, unit, np.frombuffer(blob, dtype="<f8"), failures)
                    for _, bench, params, metric, unit, failures, blob in self.db.conn.execute(query)]
        return self._groups_from_rows(run_id, benchmarks, metrics)

    def value_groups_of_runs(self, run_ids: Iterable[int], benchmarks: set[str] | None = None,
                             metrics: set[str] | None = None) -> dict[int, list[ValueGroup]]:
        """``value_groups`` of many runs at once (a history of 5,000 commits), by run: the
        groups of ``each_value_group`` gathered."""
        found: dict[int, list[ValueGroup]] = {}
        for run_id, group in self.each_value_group(run_ids, benchmarks, metrics):
            found.setdefault(run_id, []).append(group)
        return found

    def each_value_group(self, run_ids: Iterable[int], benchmarks: set[str] | None = None,
                         metrics: set[str] | None = None) -> Iterator[tuple[int, ValueGroup]]:
        """(run id, group) of the chosen benchmarks and metrics of many runs, as read: the
        sealed runs' series in one query (each run's in ``value_groups``' order), then the few
        unsealed runs' (killed, resumed) from their sample rows. A caller that keeps only the
        values holds no group of a whole store at once (`alerts --update` reads every run)."""
        import numpy as np
        wanted = set(run_ids)
        if not wanted:
            return
        query = _series_query(benchmarks, metrics)
        if len(wanted) <= CHUNKED_RUNS:   # by the key, RUNS_BY_ID at a time: one series' runs of a large store
            ordered = sorted(wanted)
            rows: Iterable[Any] = (row for among in among_ids(series.c.run_id, ordered, self.db.dialect)
                                   for row in self.db.conn.execute(query.where(among)))
        else:   # most of the store: one pass over it (PostgreSQL: by a server-side cursor, not all rows at once)
            rows = (row for batch in self.db.conn.execute(query.execution_options(stream_results=True))
                    .partitions(_SEAL_BATCH) for row in batch)
        seen: set[int] = set()
        for run_id, bench, params, metric, unit, failures, blob in rows:
            if run_id in wanted:
                seen.add(run_id)
                yield run_id, ValueGroup(bench, params, metric, unit, np.frombuffer(blob, dtype="<f8"), failures)
        # a run with series rows is sealed; of the others, those without any are not (yet)
        missing = wanted - seen
        if missing:
            sealed = self._sealed_of(missing)
            for run_id in sorted(missing - sealed):  # from their rows
                yield from ((run_id, group) for group in self._groups_from_rows(run_id, benchmarks, metrics))

    def _sealed_of(self, run_ids: set[int]) -> set[int]:
        """Which of ``run_ids`` have series rows: probed by the key, RUNS_BY_ID at a time, for
        up to CHUNKED_RUNS of them (an alert's report asks about its runs' outside load, which
        a fleet's runs did not record: not every sealed run of the store listed), else one pass."""
        query = sa.select(series.c.run_id).distinct()
        if len(run_ids) > CHUNKED_RUNS:
            return {run_id for (run_id,) in self.db.conn.execute(query)}
        return {run_id for among in among_ids(series.c.run_id, sorted(run_ids), self.db.dialect)
                for (run_id,) in self.db.conn.execute(query.where(among))}

    def _groups_from_rows(self, run_id: int, benchmarks: set[str] | None,
                          metrics: set[str] | None) -> list[ValueGroup]:
        import numpy as np
        conn = self.db.conn
        point_query = (sa.select(points.c.id, points.c.benchmark, points.c.params)
                       .where(points.c.id.in_(sa.select(samples.c.point_id).distinct()
                                               .where(samples.c.run_id == run_id))))
        if benchmarks:
            point_query = point_query.where(points.c.benchmark.in_(sorted(benchmarks)))
        known = {pid: (bench, params) for pid, bench, params in conn.execute(point_query)}
        if not known:
            return []
        query = (sa.select(samples.c.point_id, samples.c.metric, samples.c.value, samples.c.unit,
                           samples.c.status)
                 .where(samples.c.run_id == run_id, samples.c.point_id.in_(sorted(known)))
                 .order_by(samples.c.point_id, samples.c.metric, samples.c.repetition))
        if metrics:
            query = query.where(samples.c.metric.in_(sorted(metrics)))
        rows = conn.execute(query).all()
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
