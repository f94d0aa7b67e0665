"""Running one job on a worker: its steps as child processes, watched until they end.

Each step (a `perflab run`, a build, a `perflab bisect`) is a child process in a session
of its own, so cancel and the time limits end its whole process group, and a crash of the
benchmark cannot take the worker with it. A run step records the job's RunRequest document
(`perflab run --request FILE`): no option is passed as a string.
The child gets PR_SET_PDEATHSIG: if the worker's pool process dies (a hard time limit, a
SIGKILL), the kernel kills the step too. The job polls the store for a cancel request
(``perflab jobs cancel``), so a cancel needs no broker round trip and works from anywhere
the store is reachable.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from perflab.model.jobs import Job, JobKind, JobRequest, Side
from perflab.model.run_request import RunRequest

POLL_S = 0.25
CANCEL_POLL_S = 1.0
TERM_GRACE_S = 10.0        # SIGTERM, then SIGKILL after this long
OUTPUT_TAIL_CHARS = 4000
PERFLAB = [sys.executable, "-m", "perflab.cli.main"]
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class WorkerContext:
    """What a job needs to know of the worker that runs it."""

    name: str
    host: str
    machine_class: str | None
    db: str
    workdir: Path


@dataclass(frozen=True)
class Step:
    what: str                 # "run", "build", "checkout", "bisect", ...: said in an error line
    argv: list[str]
    cwd: Path | None = None


@dataclass(frozen=True)
class Outcome:
    kind: str                 # "done", "failed", "cancelled", "timeout", "orphaned"
    error: str | None
    output: str


class StepsFailed(Exception):
    pass


def steps_for(job: Job, ctx: WorkerContext, jobdir: Path) -> list[Step]:
    """The child processes that carry out a job, in order."""
    request = job.request
    if job.kind in (JobKind.RUN, JobKind.AB):
        return [_run_step(job, ctx, jobdir)]
    if job.kind is JobKind.BUILD:
        tree = ctx.workdir / "worktree"
        return [*_build_steps(request, tree, request["commit"]), _run_step(job, ctx, jobdir, tree)]
    if job.kind is JobKind.BISECT:
        return [_bisect_step(job, ctx, jobdir)]
    if job.kind is JobKind.RERUN:
        return _rerun_steps(job, ctx, jobdir)
    raise ValueError(f"unknown job kind {job.kind}")


def _build_steps(request: JobRequest, tree: Path, commit: str, side: str = "") -> list[Step]:
    """Check ``commit`` out in the worker's worktree ``tree`` and build it there."""
    of = f" of the {side} side" if side else ""
    return [Step(f"checkout{of}", [sys.executable, "-c", _CHECKOUT, request["repo"], str(tree), commit]),
            Step(f"build{of}", ["/bin/sh", "-c", request["build"]], tree)]


def _rerun_steps(job: Job, ctx: WorkerContext, jobdir: Path) -> list[Step]:
    """A rerun: both sides built, each in a worktree of its own; then the suite run in the
    request's rounds (each its side's tree, commit and label) and every run attached to the
    alerts that asked, in one process (fleet/rerun_rounds.py; a side that fails to build
    records and attaches nothing)."""
    request = job.request
    sides: tuple[Side, ...] = ("good", "bad")
    trees = {side: ctx.workdir / f"rerun-{side}" for side in sides}
    steps = [step for side in sides for step in _build_steps(request, trees[side], request[side], side)]
    documents = {side: _request_document(job, jobdir, trees[side], side, commit=request[side]) for side in sides}
    sided = [(_side(one["side"]), one["label"]) for one in request["rounds"]]
    rounds = [{"tree": str(trees[side]), "request": str(documents[side]), "label": label} for side, label in sided]
    spec = jobdir / "rounds.json"
    spec.write_text(json.dumps({"db": ctx.db, "rounds": rounds, "alerts": request["alerts"], "who": request["who"],
                                "note": f"rerun job {job.id}"}), encoding="utf-8")
    return [*steps, Step("rounds", [sys.executable, "-m", "perflab.fleet.rerun_rounds", str(spec)])]


def _side(value: object) -> Side:
    if value not in ("good", "bad"):
        raise ValueError(f"a rerun round's side is good or bad, not {value!r}")
    return "good" if value == "good" else "bad"


def _bisect_step(job: Job, ctx: WorkerContext, jobdir: Path) -> Step:
    """The bisect, its runs stored as this job's, its answer attached to the alerts that
    asked (fleet/bisect_job.py)."""
    request = job.request
    spec = jobdir / "bisect.json"
    spec.write_text(json.dumps({"db": ctx.db, "repo": request["repo"], "good": request["good"],
                                "bad": request["bad"], "build": request["build"], "run": request["run"],
                                "job": job.id, "host": ctx.host, "alerts": request.get("alerts", []),
                                "who": request.get("who", "perflab")}), encoding="utf-8")
    return Step("bisect", [sys.executable, "-m", "perflab.fleet.bisect_job", str(spec)])


def _run_step(job: Job, ctx: WorkerContext, jobdir: Path, tree: Path | None = None) -> Step:
    """`perflab run --request FILE`: the job's RunRequest (`_request_document`), recorded by
    the record service in a child process."""
    document = _request_document(job, jobdir, tree, "run")
    return Step("run", [*PERFLAB, "--db", ctx.db, "run", "-q", "--request", str(document)], tree)


def _request_document(job: Job, jobdir: Path, tree: Path | None, name: str, **identity: Any) -> Path:
    """The job's RunRequest written to ``jobdir``/NAME.json, tied to the job (and to the
    worktree a build or rerun job built; ``identity``: fields it records otherwise)."""
    asked = job.request["run"]
    if not isinstance(asked, dict):
        raise ValueError(f"job {job.id}: its run is a shell line, not a RunRequest document")
    run = RunRequest.from_json(asked)
    assert run.target is not None
    target = run.target
    suite = job.request.get("suite")
    if suite:   # the suite's text travels with the job: the worker needs no copy of the file
        path = jobdir / Path(suite["name"]).name
        path.write_text(suite["text"], encoding="utf-8")
        target = replace(target, words=(str(path),), after_dashdash=False)
    # the repository the commits come from, when the request names it (the robot's do: a
    # run records no worker's own path); else the worktree it built
    repo = run.identity.repo or (str(tree) if tree else None)
    run = replace(run, target=target, identity=replace(run.identity, job_id=job.id, repo=repo, **identity))
    document = jobdir / f"{name}.json"
    document.write_text(json.dumps(run.to_json()), encoding="utf-8")
    return document


# git: a worktree of the worker's own, detached at the commit (created on first use)
_CHECKOUT = """
import os, subprocess, sys
from perflab.vcs import add_worktree
repo, tree, commit = sys.argv[1:4]
if not os.path.exists(os.path.join(tree, ".git")):
    add_worktree(repo, tree, commit)
else:
    subprocess.run(["git", "-C", tree, "checkout", "--detach", "--force", commit], check=True)
    subprocess.run(["git", "-C", tree, "clean", "-fdx", "-q"], check=True)
"""


def execute(job: Job, ctx: WorkerContext, cancelled: Callable[[], bool]) -> Outcome:
    """Run a job's steps; stop at the first that fails, a cancel, or the worker's death."""
    jobdir = ctx.workdir / f"job-{job.id}"
    jobdir.mkdir(parents=True, exist_ok=True)
    parent = os.getppid()
    output = ""
    for step in steps_for(job, ctx, jobdir):
        log = jobdir / f"{step.what}.log"
        with open(log, "w+", encoding="utf-8", errors="replace") as out, \
                open(jobdir / f"{step.what}.err", "w+", encoding="utf-8", errors="replace") as err:
            process = subprocess.Popen(step.argv, cwd=step.cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                       start_new_session=True, preexec_fn=_die_with_parent,
                                       env=dict(os.environ, PERFLAB_HOST=ctx.host))
            try:
                stop = _watch(process, cancelled, parent)
            except BaseException:   # Celery's soft time limit arrives as an exception here
                _end(process)
                raise
            out.seek(0)
            output = out.read()[-OUTPUT_TAIL_CHARS:]
            err.seek(0)
            error_text = err.read()
        if stop is not None:
            return Outcome(stop, f"{stop} during the {step.what} step", output)
        if process.returncode != 0:
            return Outcome("failed", f"{step.what} exited {_exit_text(process.returncode)}: "
                                     f"{_last_line(error_text) or 'no message'}", output)
    return Outcome("done", None, output)


def _watch(process: subprocess.Popen[bytes], cancelled: Callable[[], bool], parent: int) -> str | None:
    """Wait for a step; end its process group on a cancel or when the worker died."""
    asked_at = time.monotonic()
    while process.poll() is None:
        time.sleep(POLL_S)
        if os.getppid() != parent:
            _end(process)
            return "orphaned"
        if time.monotonic() - asked_at >= CANCEL_POLL_S:
            asked_at = time.monotonic()
            if cancelled():
                _end(process)
                return "cancelled"
    return None


def _end(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the step's process group (perflab run then stops cleanly), SIGKILL it later."""
    for sig, wait_s in ((signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue
        with contextlib.suppress(ProcessLookupError):   # what the leader left in its group
            os.killpg(process.pid, signal.SIGKILL)
        return


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _exit_text(code: int) -> str:
    return f"with signal {signal.Signals(-code).name}" if code < 0 else str(code)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""
