"""The fleet's records: a job (a run request queued for a host or a class of machines) and
the workers that take jobs."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Literal, Required, TypedDict

from perflab.model.errors import UsageError
from perflab.model.json_types import JsonObject


class JobState(str, enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (JobState.DONE, JobState.FAILED, JobState.CANCELLED)


def parse_states(text: str | None) -> set[JobState] | None:
    """``queued,running`` -> those states; None (every state) for an empty selection."""
    if not text:
        return None
    states = set()
    for word in text.split(","):
        try:
            states.add(JobState(word.strip()))
        except ValueError:
            known = ", ".join(s.value for s in JobState)
            raise UsageError(f"unknown job state {word.strip()!r}: expected one of {known}") from None
    return states


class JobKind(str, enum.Enum):
    RUN = "run"        # a `perflab run` of a command, workload or suite
    AB = "ab"          # two commands interleaved in random order in one run on one host
    BUILD = "build"    # check out a commit in the worker's worktree, build it, run a suite
    BISECT = "bisect"  # a `perflab bisect` of a commit range
    RERUN = "rerun"    # build an alert's last good and first bad commit, run a suite on each in rounds


class SuiteText(TypedDict):
    """A suite as it travels to a worker: its file name and text (the worker needs no copy)."""

    name: str
    text: str


Side = Literal["good", "bad"]


class JobRequest(TypedDict, total=False):
    """What a job asks its worker, as the store keeps it (JSON). Each kind fills its keys:
    run: ``run`` and ``target`` or ``suite``; ab: ``run``, ``base``, ``cand``; build: ``repo``,
    ``commit``, ``build``, ``suite``, ``run``; bisect: ``repo``, ``good``, ``bad``, ``build``,
    ``run`` (the shell line each step measures), ``alerts``, ``who``; rerun: a build's keys with
    ``good`` and ``bad``, ``rounds``, ``alerts``, ``who``, ``requests``."""

    timeout: Required[float]
    run: JsonObject | str        # a RunRequest document (RunRequest.to_json); bisect's: a shell line
    target: list[str]
    suite: SuiteText
    base: str
    cand: str
    repo: str
    commit: str
    build: str
    good: str
    bad: str
    alerts: list[int]
    who: str
    rounds: list[JsonObject]     # asdict of stats.rerun's rounds: side, label
    requests: list[int]          # the "rerun requested" events a rerun job answers


@dataclass(frozen=True)
class Job:
    """One request and what became of it. ``queue`` is ``host.NAME`` or ``class.NAME``;
    ``host`` is the worker's host that took it (None while queued)."""

    id: int
    kind: JobKind
    queue: str
    request: JobRequest
    state: JobState
    submitted_at: float
    started_at: float | None = None
    finished_at: float | None = None
    host: str | None = None
    worker: str | None = None
    cancel_requested: bool = False
    error: str | None = None
    output: str | None = None
    run_ids: tuple[int, ...] = field(default=())

    @property
    def timeout(self) -> float:
        return float(self.request["timeout"])


@dataclass(frozen=True)
class WorkerInfo:
    """A worker process as it last reported itself."""

    name: str
    host: str
    machine_class: str | None
    pid: int
    nodename: str
    started_at: float
    heartbeat_at: float
    heartbeat_s: float
    stopped_at: float | None
    environment: JsonObject
