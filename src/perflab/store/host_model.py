"""Reading and writing the host model: a host's priors of run-to-run variance, per kind of metric.

The rows are derived (``analysis.host_model`` fits them from the host's replicate runs)
and replaced as a whole, in one transaction, when the replicates they were fitted on change.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import sqlalchemy as sa

from perflab.stats.host_prior import Prior
from perflab.store.connection import StoreConnection
from perflab.store.schema import host_priors


@dataclass(frozen=True)
class HostPrior:
    """One kind of metric's prior on a host, and how many benchmarks it learned from."""

    host: str
    kind: str
    prior: Prior
    benchmarks: int
    stamp: str
    updated_at: float


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


class HostPriorRepository:
    """The host model's rows, replaced a host at a time."""

    def __init__(self, db: StoreConnection):
        self.db = db

    def load(self, host: str) -> list[HostPrior]:
        query = sa.select(host_priors).where(host_priors.c.host == host).order_by(host_priors.c.kind)
        out = []
        for row in self.db.conn.execute(query).mappings():
            prior = Prior(row["s0_squared"], row["d0"], row["groups"], row["data_df"], row["slope"], row["centre"],
                          -math.inf if row["low"] is None else row["low"],
                          math.inf if row["high"] is None else row["high"])
            out.append(HostPrior(row["host"], row["kind"], prior, row["benchmarks"], row["stamp"], row["updated_at"]))
        return out

    def save(self, host: str, stamp: str, priors: dict[str, tuple[Prior, int]]) -> None:
        """Replace the host's priors (kind -> (prior, benchmarks)) with these, all at once."""
        conn = self.db.conn
        self.db.commit_reads()
        now = time.time()
        try:
            conn.execute(host_priors.delete().where(host_priors.c.host == host))
            rows = [{"host": host, "kind": kind, "s0_squared": p.s0_squared, "d0": p.d0, "groups": p.groups,
                     "benchmarks": benchmarks, "data_df": p.data_df, "slope": p.slope, "centre": p.centre,
                     "low": _finite(p.low), "high": _finite(p.high), "stamp": stamp, "updated_at": now}
                    for kind, (p, benchmarks) in priors.items()]
            if rows:
                conn.execute(host_priors.insert(), rows)
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
