"""Samples and what their metrics mean: the points a benchmark was measured at, one
transaction per sample, the rows of a run read back as columns."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from functools import cached_property
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

if TYPE_CHECKING:  # numpy is imported where samples are read: `perflab runs` needs none
    import numpy as np

from perflab.model.records import Measurement, MetricInfo, Point, is_monitor_metric
from perflab.store.connection import StoreConnection, inserted_id
from perflab.store.database import insert_or_ignore, upsert
from perflab.store.schema import metrics, points, samples


def decode_params(point: str) -> dict[str, Any]:
    """A point's parameters from their stored, normalised JSON: the one place they are decoded."""
    value = json.loads(point)
    return value if isinstance(value, dict) else {}


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


def sample_row(run_id: int, point_id: int, repetition: int, measurement: Measurement,
               measured_at: float) -> dict[str, Any]:
    """The row of one value of a sample (a table row of ``samples``)."""
    m = measurement
    return {"run_id": run_id, "point_id": point_id, "repetition": repetition, "metric": m.metric,
            "value": m.value, "unit": m.unit, "status": m.status.value, "note": m.note,
            "measured_at": measured_at}


class SampleRepository:
    """The points and samples of runs; every sample is its own transaction."""

    def __init__(self, db: StoreConnection):
        self.db = db
        self.point_ids: dict[tuple[str, str], int] = {}   # (benchmark, params) -> id, once known
        self.insert = samples.insert()

    def point_id(self, point: Point) -> int:
        """The id of a benchmark's parameter point, created on first use."""
        key = (point.benchmark, point.key)
        cached = self.point_ids.get(key)
        if cached is not None:
            return cached
        conn = self.db.conn
        select = sa.select(points.c.id).where(points.c.benchmark == key[0], points.c.params == key[1])
        found = conn.execute(select).scalar()
        if found is None:
            try:
                found = inserted_id(conn.execute(points.insert().values(benchmark=key[0], params=key[1])))
                conn.commit()
            except sa.exc.IntegrityError:  # another perflab inserted it meanwhile
                conn.rollback()
                found = conn.execute(select).scalar_one()
        self.point_ids[key] = int(found)
        return int(found)

    def point_in_transaction(self, benchmark: str, params: str) -> int:
        """A point's id, inserting it without committing; a concurrent twin is no error."""
        conn = self.db.conn
        statement = insert_or_ignore(self.db.dialect, points, ["benchmark", "params"])
        if statement is not None:
            conn.execute(statement.values(benchmark=benchmark, params=params))
        select = sa.select(points.c.id).where(points.c.benchmark == benchmark, points.c.params == params)
        found = conn.execute(select).scalar()
        if found is None:  # another dialect: plain insert
            found = inserted_id(conn.execute(points.insert().values(benchmark=benchmark, params=params)))
        return int(found)

    def add(self, run_id: int, point: Point, repetition: int,
            measurements: Sequence[Measurement], measured_at: float | None = None) -> None:
        """Commit every value of one repetition at once: a sample is whole or absent."""
        point_id = self.point_id(point)
        stamp = time.time() if measured_at is None else measured_at
        self.db.conn.execute(self.insert, [sample_row(run_id, point_id, repetition, m, stamp)
                                           for m in measurements])
        self.db.conn.commit()

    def insert_ignoring_duplicates(self, rows: list[dict[str, Any]]) -> None:
        """Insert sample rows, keeping the first of a (run, point, metric, repetition) twice
        written (a crash between a commit and a pending file's truncation replays lines)."""
        statement = insert_or_ignore(self.db.dialect, samples, ["run_id", "point_id", "metric", "repetition"])
        self.db.conn.execute(samples.insert() if statement is None else statement, rows)

    def rows(self, run_id: int) -> SampleRows:
        """Every value of a run, in the order it was recorded."""
        import numpy as np
        query = (sa.select(points.c.benchmark, points.c.params, samples.c.repetition,
                           samples.c.metric, samples.c.value, samples.c.unit, samples.c.status,
                           samples.c.note, samples.c.measured_at)
                 .select_from(samples.join(points, points.c.id == samples.c.point_id))
                 .where(samples.c.run_id == run_id)
                 .order_by(samples.c.id))
        rows = self.db.conn.execute(query).all()
        columns = list(zip(*rows)) if rows else [()] * 9
        return SampleRows(
            benchmark=list(columns[0]), points=list(columns[1]),
            repetition=np.asarray(columns[2], dtype=np.int64),
            metric=list(columns[3]),
            value=np.asarray([np.nan if v is None else v for v in columns[4]], dtype=float),
            unit=list(columns[5]), status=list(columns[6]), note=list(columns[7]),
            measured_at=np.asarray(columns[8], dtype=float))

    def done_repetitions(self, run_id: int) -> set[tuple[str, str, int]]:
        """(benchmark, params, repetition) already recorded, for --resume."""
        query = (sa.select(points.c.benchmark, points.c.params, samples.c.repetition).distinct()
                 .select_from(samples.join(points, points.c.id == samples.c.point_id))
                 .where(samples.c.run_id == run_id))
        return {(b, p, int(r)) for b, p, r in self.db.conn.execute(query)}


_METRIC_COLUMNS = ["unit", "direction", "noise_floor", "description"]


class MetricRepository:
    """What each metric of a benchmark means (unit, direction, noise floor)."""

    def __init__(self, db: StoreConnection):
        self.db = db

    def save(self, benchmark: str, infos: Iterable[MetricInfo]) -> None:
        """Record what each metric means, so later readers know its direction.

        One upsert per metric: several perflabs registering the same new benchmark at
        once all succeed (the last description wins)."""
        self.save_uncommitted(benchmark, infos)
        self.db.conn.commit()

    def save_uncommitted(self, benchmark: str, infos: Iterable[MetricInfo]) -> None:
        """Insert or update metric metadata without a read first (no window for a twin)."""
        conn = self.db.conn
        rows = [{"benchmark": benchmark, "metric": info.name, "unit": info.unit,
                 "direction": info.direction.value, "noise_floor": info.noise_floor,
                 "description": info.description} for info in infos]
        if not rows:
            return
        statement = upsert(self.db.dialect, metrics, ["benchmark", "metric"], _METRIC_COLUMNS)
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

    def infos(self, benchmark: str) -> dict[str, MetricInfo]:
        return {metric: info for (_, metric), info in self.infos_of([benchmark]).items()}

    def infos_of(self, benchmarks: Iterable[str]) -> dict[tuple[str, str], MetricInfo]:
        """Every metric's meaning of these benchmarks, by (benchmark, metric), a few queries
        for any number of them (a 1,000-row comparison names hundreds)."""
        from perflab.model.records import Direction
        names = sorted(set(benchmarks))
        found: dict[tuple[str, str], MetricInfo] = {}
        for start in range(0, len(names), 500):   # within any SQLite's limit of bound parameters
            query = (sa.select(metrics).where(metrics.c.benchmark.in_(names[start:start + 500]))
                     .order_by(metrics.c.benchmark, metrics.c.metric))   # SQLite's own (its key's) order
            for row in self.db.conn.execute(query):
                found[(row.benchmark, row.metric)] = MetricInfo(
                    name=row.metric, unit=row.unit, direction=Direction(row.direction),
                    noise_floor=row.noise_floor, description=row.description)
        return found
