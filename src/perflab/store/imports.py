"""Writing a whole finished run read from another tool's file, in one transaction."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from perflab.model.records import Measurement, MetricInfo, Point, RunStatus
from perflab.model.run_request import RunRequest
from perflab.store.connection import StoreConnection
from perflab.store.runs import RunRepository
from perflab.store.samples import MetricRepository, SampleRepository, sample_row
from perflab.store.series import SeriesRepository

_IMPORT_BATCH = 10_000    # sample rows inserted at once by an import


class ImportRepository:
    """Imported runs: all of one, or nothing."""

    def __init__(self, db: StoreConnection, runs: RunRepository, samples: SampleRepository,
                 metrics: MetricRepository, series: SeriesRepository):
        self.db = db
        self.runs = runs
        self.samples = samples
        self.metrics = metrics
        self.series = series

    def add_run(self, *, label: str, host: str, request: RunRequest, environment: dict[str, Any],
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
        self.db.commit_reads()
        now = time.time()
        new_ids: dict[tuple[str, str], int] = {}
        try:
            run_id = self.runs.insert_finished(label=label, host=host, request=request,
                                               environment=environment, status=status, at=now)
            self._insert_samples(run_id, samples, now, new_ids, progress)
            for benchmark, infos in metric_infos.items():
                self.metrics.save_uncommitted(benchmark, infos)
            self.series.seal(run_id)  # writes the series blobs and commits: the one commit
        except BaseException:
            self.db.conn.rollback()
            raise
        self.samples.point_ids.update(new_ids)  # cached only once they surely exist
        return run_id

    def _insert_samples(self, run_id: int,
                        samples: Iterable[tuple[Point, int, Sequence[Measurement], float | None]],
                        now: float, new_ids: dict[tuple[str, str], int],
                        progress: Callable[[int], None] | None) -> None:
        """Insert the samples a batch at a time, without committing; ``new_ids`` learns the
        points this import created."""
        rows: list[dict[str, Any]] = []
        written = 0
        for point, repetition, measurements, measured_at in samples:
            key = (point.benchmark, point.key)
            point_id = self.samples.point_ids.get(key) or new_ids.get(key)
            if point_id is None:
                point_id = new_ids[key] = self.samples.point_in_transaction(*key)
            stamp = now if measured_at is None else measured_at
            rows.extend(sample_row(run_id, point_id, repetition, m, stamp) for m in measurements)
            written += 1
            if len(rows) >= _IMPORT_BATCH:
                self.db.conn.execute(self.samples.insert, rows)
                rows = []
                if progress is not None:
                    progress(written)
        if rows:
            self.db.conn.execute(self.samples.insert, rows)
        if progress is not None:
            progress(written)
