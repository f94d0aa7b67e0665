"""The store as its callers see it: the connection, and a repository per kind of record."""

from __future__ import annotations

import contextlib
from functools import cached_property
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from perflab.store.connection import StoreConnection
from perflab.store.failures import is_disk_full, translated
from perflab.store.recovery import PendingRepository
from perflab.store.runs import RunRepository
from perflab.store.samples import MetricRepository, SampleRepository
from perflab.store.series import SeriesRepository

if TYPE_CHECKING:   # imported where first reached: a command opens only the repositories it uses
    from perflab.store.alerts import AlertRepository
    from perflab.store.detections import DetectionRepository
    from perflab.store.host_model import HostPriorRepository
    from perflab.store.imports import ImportRepository
    from perflab.store.jobs import BranchRepository, JobRepository, WorkerRepository
    from perflab.store.outbox import OutboxRepository
    from perflab.store.profiles import ArtifactRepository, ProfileRepository


class Store(StoreConnection):
    """A perflab database, opened and checked; what dead perflabs left is finished on
    opening (unless read-only: a reader without write permission cannot finish others' runs)."""

    def __init__(self, target: str | None = None, *, create: bool = False, engine: Engine | None = None):
        super().__init__(target, create=create, engine=engine)
        try:
            if not self.read_only:
                self.pending.recover()
        except Exception as error:
            if create or not is_disk_full(error, self.target):
                self.__exit__(type(error), error, None)
                raise
            self.reopen_read_only()   # a reader on a full disk reads what the database holds

    def __enter__(self) -> Store:
        return self

    def __exit__(self, kind: object, error: BaseException | None, trace: object) -> None:
        """Closes; a damaged file or a full disk met inside the block ends as one line."""
        said = translated(self.target, error) if isinstance(error, Exception) else None
        with contextlib.suppress(sa.exc.SQLAlchemyError) if said else contextlib.nullcontext():
            self.close()
        if said is not None:
            raise said from None

    @cached_property
    def runs(self) -> RunRepository:
        return RunRepository(self, self.series)

    @cached_property
    def samples(self) -> SampleRepository:
        return SampleRepository(self)

    @cached_property
    def metrics(self) -> MetricRepository:
        return MetricRepository(self)

    @cached_property
    def series(self) -> SeriesRepository:
        return SeriesRepository(self)

    @cached_property
    def detections(self) -> DetectionRepository:
        from perflab.store.detections import DetectionRepository
        return DetectionRepository(self)

    @cached_property
    def pending(self) -> PendingRepository:
        return PendingRepository(self, self.runs, self.samples)

    @cached_property
    def imports(self) -> ImportRepository:
        from perflab.store.imports import ImportRepository
        return ImportRepository(self, self.runs, self.samples, self.metrics, self.series)

    @cached_property
    def profiles(self) -> ProfileRepository:
        from perflab.store.profiles import ProfileRepository
        return ProfileRepository(self)

    @cached_property
    def artifacts(self) -> ArtifactRepository:
        from perflab.store.profiles import ArtifactRepository
        return ArtifactRepository(self)

    @cached_property
    def jobs(self) -> JobRepository:
        from perflab.store.jobs import JobRepository
        return JobRepository(self)

    @cached_property
    def workers(self) -> WorkerRepository:
        from perflab.store.jobs import WorkerRepository
        return WorkerRepository(self)

    @cached_property
    def branches(self) -> BranchRepository:
        from perflab.store.jobs import BranchRepository
        return BranchRepository(self)

    @cached_property
    def alerts(self) -> AlertRepository:
        from perflab.store.alerts import AlertRepository
        return AlertRepository(self)

    @cached_property
    def host_priors(self) -> HostPriorRepository:
        from perflab.store.host_model import HostPriorRepository
        return HostPriorRepository(self)

    @cached_property
    def outbox(self) -> OutboxRepository:
        from perflab.store.outbox import OutboxRepository
        return OutboxRepository(self)
