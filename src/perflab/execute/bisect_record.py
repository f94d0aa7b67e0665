"""Bisect's measurements as stored runs: one run per measured commit, labelled ``bisect-<id>``.

Not through `execute.record`: the record service runs a whole plan and owns its loop
(repetitions, rounds, stop rules), while a bisect step interleaves two commits in two
built trees, one pair at a time, and its own sequential three-way test decides after each
pair whether to take another. So the samples are stored through the store's API with
`perflab run`'s identity rules: label, full commit hash with ``git describe``, the
repository's absolute path, the host, the environment snapshot, and a RunRequest whose
identity holds a `perflab run` line and the build line that measure the commit again
(``report change``'s "To reproduce"). A run is created at its commit's first sample (a
bisect refused before it measures anything stores nothing); every run is sealed at the
end, complete, or interrupted when the bisect was.
"""

from __future__ import annotations

import os
import secrets
import shlex
from dataclasses import dataclass, field

from perflab.execute import environment
from perflab.model.records import Direction, Measurement, MetricInfo, Point, RunStatus, SampleStatus
from perflab.model.run_request import Identity, RunOptions, RunRequest, Target
from perflab.store import Store, this_host
from perflab.vcs import git_commit

BENCHMARK = "bisect"   # the stored benchmark of every bisect's runs (the label tells bisects apart)
SHELL_WORDS = ("/bin/sh", "-c")   # how bisect runs its --run line (execute.bisect_runs.SHELL)


def new_label() -> str:
    """A fresh ``bisect-<id>`` label (8 hex digits)."""
    return f"bisect-{secrets.token_hex(4)}"


@dataclass(frozen=True)
class StoredMetric:
    name: str                 # the stored metric: time, user, system, cpu, or "metric" (--metric-regex)
    unit: str
    direction: Direction
    description: str = ""


@dataclass
class BisectRecorder:
    """Stores each run of a bisect as a sample of its commit's run (see the module doc)."""

    store: Store
    repo: str
    label: str
    metric: StoredMetric
    run_line: str
    build_line: str
    timeout: float | None = None
    db: str | None = None                     # for the reproduce line's --db
    job_id: int | None = None                 # the fleet job the bisect is (its runs are the job's)
    runs: dict[str, int] = field(default_factory=dict)      # sha -> its run id
    _samples: dict[str, int] = field(default_factory=dict)  # sha -> samples stored
    _environment: dict | None = None

    def sample(self, sha: str, value: float) -> None:
        self._add(sha, Measurement(self.metric.name, value, self.metric.unit))

    def failed(self, sha: str, why: str, *, timed_out: bool = False) -> None:
        status = SampleStatus.TIMEOUT if timed_out else SampleStatus.FAILED
        self._add(sha, Measurement(self.metric.name, None, self.metric.unit, status, why))

    def close(self, *, interrupted: bool = False) -> None:
        """Seal every run: complete, or interrupted."""
        for run_id in self.runs.values():
            self.store.series.seal(run_id)
            self.store.runs.set_status(run_id, RunStatus.INTERRUPTED if interrupted else RunStatus.COMPLETE)

    def _add(self, sha: str, measurement: Measurement) -> None:
        run_id = self.runs.get(sha)
        if run_id is None:
            run_id = self.runs[sha] = self._create(sha)
        repetition = self._samples.get(sha, 0)
        self._samples[sha] = repetition + 1
        self.store.samples.add(run_id, Point(BENCHMARK, {}), repetition, [measurement])

    def _create(self, sha: str) -> int:
        if self._environment is None:
            self._environment = environment.capture()
            self.store.metrics.save(BENCHMARK, [MetricInfo(self.metric.name, self.metric.unit,
                                                           self.metric.direction,
                                                           description=self.metric.description)])
        full, describe = git_commit(self.repo, sha)
        repo = os.path.abspath(self.repo)
        identity = Identity(label=self.label, commit=full, describe=describe, repo=repo, job_id=self.job_id,
                            command_line=tuple(self._command_line(repo, full)), build=self.build_line)
        request = RunRequest(target=Target(words=(*SHELL_WORDS, self.run_line), after_dashdash=True,
                                           name=BENCHMARK),
                             options=RunOptions(timeout=self.timeout), identity=identity)
        return self.store.runs.create(label=self.label, host=this_host(), request=request,
                                      environment=self._environment, commit=full, commit_describe=describe,
                                      repo=repo, job_id=self.job_id)

    def _command_line(self, repo: str, sha: str) -> list[str]:
        """A `perflab run` that measures the commit's built tree again, as this run was named."""
        return ["perflab", *(["--db", self.db] if self.db else []), "run", "--repo", repo, "--commit", sha,
                "--label", self.label, "--name", BENCHMARK,
                *(["--timeout", f"{self.timeout:g}"] if self.timeout else []), "--", *SHELL_WORDS, self.run_line]


def describe_stored(recorder: BisectRecorder) -> str:
    """One line naming where the runs went, for the bisect's output."""
    return (f"stored as {len(recorder.runs)} runs labelled {recorder.label} "
            f"(e.g. 'perflab history --label {shlex.quote(recorder.label)}')")
