"""The change points kept by series (schema 12's ``detections``): read by any history, written
by the robot's pass. The rows are opaque here (a digest and a JSON text): what they mean and
when they hold is analysis.series' to say."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

import sqlalchemy as sa

from perflab.store.connection import StoreConnection, among_ids
from perflab.store.database import upsert
from perflab.store.schema import detections


class DetectionRepository:
    """Series key -> (digest, found): read many at once, replaced a batch at a time."""

    def __init__(self, db: StoreConnection):
        self.db = db

    def of(self, keys: Iterable[str]) -> dict[str, tuple[str, str]]:
        """The rows kept for those of ``keys`` the table holds."""
        query = sa.select(detections.c.series_key, detections.c.digest, detections.c.found)
        return {key: (digest, text)
                for among in among_ids(detections.c.series_key, sorted(set(keys)), self.db.dialect, sa.Text)
                for key, digest, text in self.db.conn.execute(query.where(among))}

    def keep(self, rows: Mapping[str, tuple[str, str]]) -> None:
        """Keep ``rows`` (series key -> (digest, found)), replacing what their keys held, in
        one transaction (in key order: two robots writing the same keys never deadlock)."""
        if not rows:
            return
        conn = self.db.conn
        self.db.commit_reads()
        statement = upsert(conn.dialect.name, detections, ["series_key"], ["digest", "found", "made_at"])
        now = time.time()
        try:
            conn.execute(statement, [{"series_key": key, "digest": digest, "found": text, "made_at": now}
                                     for key, (digest, text) in sorted(rows.items())])
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
