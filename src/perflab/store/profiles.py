"""What a sample leaves besides its values: its profile (symbols and call chains) and its
files kept for the user (perf.data, a log), stored by content hash beside the database."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from perflab.store import location
from perflab.store.connection import StoreConnection, among_ids
from perflab.store.samples import decode_params
from perflab.store.schema import artifacts, points, profile_symbols, profile_traces


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


class ProfileRepository:
    """Samples' profiles, one (run, point, repetition, event) at a time."""

    def __init__(self, db: StoreConnection):
        self.db = db

    def add(self, run_id: int, point_id: int, repetition: int, event: str,
            symbols: Iterable[tuple[str, float, float]],
            traces: Iterable[tuple[str, str, float]]) -> None:
        """Replace one sample's profile of ``event``: (symbol, self %, children %) rows and
        (kind, frames, value) rows, in one transaction (a resumed sample overwrites)."""
        conn = self.db.conn
        key = {"run_id": run_id, "point_id": point_id, "repetition": repetition, "event": event}
        for table in (profile_symbols, profile_traces):
            conn.execute(table.delete().where(*(table.c[k] == v for k, v in key.items())))
        symbol_rows = [dict(key, symbol=name, self_pct=float(own), children_pct=float(children))
                       for name, own, children in symbols]
        trace_rows = [dict(key, kind=kind, frames=frames, value=float(value))
                      for kind, frames, value in traces]
        if symbol_rows:
            conn.execute(profile_symbols.insert(), symbol_rows)
        if trace_rows:
            conn.execute(profile_traces.insert(), trace_rows)
        conn.commit()

    def profiled_runs(self, run_ids: Iterable[int]) -> set[int]:
        """Those of ``run_ids`` with profile rows, read through the tables' run index a list
        of ids at a time (connection.among_ids), not each run asked alone (a side of a change
        pools thousands) nor every profiled run of the store listed (a fleet's profiles)."""
        wanted = sorted(set(run_ids))
        found: set[int] = set()
        for table in (profile_symbols, profile_traces):
            query = sa.select(table.c.run_id).distinct()
            for among in among_ids(table.c.run_id, wanted, self.db.dialect):
                found |= {run_id for (run_id,) in self.db.conn.execute(query.where(among))}
        return found

    def symbols(self, run_id: int, benchmarks: set[str] | None = None) -> list[ProfileSymbol]:
        table = profile_symbols
        query = (sa.select(points.c.benchmark, points.c.params, table.c.repetition, table.c.event,
                           table.c.symbol, table.c.self_pct, table.c.children_pct)
                 .select_from(table.join(points, points.c.id == table.c.point_id))
                 .where(table.c.run_id == run_id)
                 .order_by(table.c.point_id, table.c.event, table.c.symbol, table.c.repetition))
        if benchmarks:
            query = query.where(points.c.benchmark.in_(sorted(benchmarks)))
        return [ProfileSymbol(*row) for row in self.db.conn.execute(query)]

    def traces(self, run_id: int, kind: str, benchmarks: set[str] | None = None) -> list[ProfileTrace]:
        table = profile_traces
        query = (sa.select(points.c.benchmark, points.c.params, table.c.repetition, table.c.event,
                           table.c.kind, table.c.frames, table.c.value)
                 .select_from(table.join(points, points.c.id == table.c.point_id))
                 .where(table.c.run_id == run_id, table.c.kind == kind)
                 .order_by(table.c.point_id, table.c.event, table.c.frames, table.c.repetition))
        if benchmarks:
            query = query.where(points.c.benchmark.in_(sorted(benchmarks)))
        return [ProfileTrace(*row) for row in self.db.conn.execute(query)]


class ArtifactRepository:
    """Files kept for the user: same content, one copy."""

    def __init__(self, db: StoreConnection):
        self.db = db

    @property
    def directory(self) -> Path:
        """``<db>.artifacts`` beside an SQLite file; the data directory for a server."""
        if location.is_url(self.db.target):
            return location.default_path().parent / "artifacts"
        path = Path(self.db.target).expanduser()
        return path.parent / (path.name + ".artifacts")

    def add(self, run_id: int, point_id: int | None, repetition: int | None,
            kind: str, source: Path) -> Artifact:
        """Move ``source`` into the content-addressed store and record it (same content, one copy)."""
        digest = hashlib.sha256()
        with open(source, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        sha = digest.hexdigest()
        target = self.directory / sha[:2] / sha
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            Path(source).unlink()
        else:
            shutil.move(source, target.with_suffix(".partial"))
            os.replace(target.with_suffix(".partial"), target)  # whole or absent
        size = target.stat().st_size
        self.db.conn.execute(artifacts.insert().values(
            run_id=run_id, point_id=point_id, repetition=repetition, kind=kind, sha256=sha,
            size=size, created_at=time.time()))
        self.db.conn.commit()
        return self._artifact(None, None, repetition, kind, sha, size)

    def of_run(self, run_id: int) -> list[Artifact]:
        query = (sa.select(points.c.benchmark, points.c.params, artifacts.c.repetition,
                           artifacts.c.kind, artifacts.c.sha256, artifacts.c.size)
                 .select_from(artifacts.outerjoin(points, points.c.id == artifacts.c.point_id))
                 .where(artifacts.c.run_id == run_id).order_by(artifacts.c.id))
        return [self._artifact(*row) for row in self.db.conn.execute(query)]

    def _artifact(self, benchmark: str | None, params: str | None, repetition: int | None,
                  kind: str, sha: str, size: int) -> Artifact:
        return Artifact(benchmark, params, repetition, kind, sha, int(size), self.directory / sha[:2] / sha)
