"""Samples on their way into the database (see pending.py), and finishing what a dead
perflab left: its pending samples ingested, its run written 'interrupted'."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from perflab.store import pending
from perflab.store.connection import StoreConnection
from perflab.store.runs import RunRepository
from perflab.store.samples import SampleRepository


class PendingRepository:
    """The pending files of running runs, flushed into the database a transaction at a time."""

    def __init__(self, db: StoreConnection, runs: RunRepository, samples: SampleRepository):
        self.db = db
        self.runs = runs
        self.samples = samples

    def open(self, run_id: int) -> pending.PendingFile:
        return pending.PendingFile(pending.path_for(self.db.target, run_id))

    def flush(self, run_id: int, file: pending.PendingFile) -> None:
        """Move a running run's pending samples into the database in one transaction."""
        self._ingest(run_id, file.path)
        file.truncate()

    def flush_if_reachable(self, run_id: int, file: pending.PendingFile) -> bool:
        """``flush``; False (the samples stay in the file) while a PostgreSQL server does
        not answer."""
        try:
            self.flush(run_id, file)
            return True
        except (sa.exc.OperationalError, sa.exc.InterfaceError, sa.exc.PendingRollbackError):
            if not self.db.is_server:
                raise
            self.db.reconnect()
            return False

    def recover(self) -> None:
        """Finish what dead perflabs left: their pending samples are ingested (each file
        claimed once, see pending.py) and their runs written 'interrupted'."""
        for run_id, path, claimer in pending.existing(self.db.target):
            if claimer is not None and pending.process_alive(claimer):
                continue  # another perflab is recovering it right now
            if self.runs.is_running(run_id):
                continue  # its perflab is alive and will flush them itself
            claimed = pending.claim(path)
            if claimed is None:
                continue  # another perflab claimed it first
            if self.runs.is_running(run_id):  # a --resume began between our look and the claim
                pending.unclaim(claimed)
                continue
            try:
                if self.runs.exists(run_id):
                    self._ingest(run_id, claimed)
            except BaseException:   # a full disk: the file keeps its name for `run --resume`
                pending.unclaim(claimed)
                raise
            claimed.unlink(missing_ok=True)
        self.runs.mark_dead()

    def _ingest(self, run_id: int, path: Path) -> None:
        rows = pending.read_rows(path, run_id)
        if rows:
            # a crash between this commit and the truncation replays lines: keep the first
            self.samples.insert_ignoring_duplicates(rows)
            self.db.conn.commit()
