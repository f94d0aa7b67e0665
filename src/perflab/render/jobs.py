"""Text for `perflab jobs` and `perflab jobs wait`."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from perflab.model.jobs import Job, JobKind
from perflab.render.runs import when
from perflab.render.texttable import format_table


def describe_request(job: Job) -> str:
    """What a job runs, in one short line."""
    request = job.request
    if job.kind is JobKind.AB:
        return f"ab: {request['base']} | {request['cand']}"
    if job.kind is JobKind.BISECT:
        alerts = ",".join(map(str, request.get("alerts", [])))
        return f"bisect {request['good'][:10]}..{request['bad'][:10]}" + (f" for alert {alerts}" if alerts else "")
    if job.kind is JobKind.RERUN:
        alerts = ",".join(map(str, request["alerts"]))
        return f"rerun {request['good'][:10]}..{request['bad'][:10]} for alert {alerts}"
    what = Path(request["suite"]["name"]).name if request.get("suite") else shlex.join(request.get("target", []))
    if job.kind is JobKind.BUILD:
        return f"build {request['commit'][:10]} + {what}"
    return what


def render_jobs(jobs: Sequence[Job]) -> str:
    if not jobs:
        return "no jobs: queue one with 'perflab submit --host NAME -- COMMAND'"
    rows = [[str(j.id), j.state.value + (" (cancel asked)" if j.cancel_requested and not j.state.finished else ""),
             j.queue, j.host or "-", describe_request(j)[:48], when(j.submitted_at), when(j.started_at),
             when(j.finished_at), ",".join(map(str, j.run_ids)) or "-", j.error or ""] for j in jobs]
    return format_table(["id", "state", "queue", "host", "request", "submitted", "started", "finished",
                         "runs", "error"], rows, align="rlllllllrl")


def render_job_end(job: Job) -> str:
    """The line `jobs wait` ends with."""
    runs = ", ".join(map(str, job.run_ids)) or "none"
    text = f"job {job.id} {job.state.value} on {job.host or '-'}; runs: {runs}"
    return text + (f"; {job.error}" if job.error else "")


def render_job(job: Job) -> str:
    """`perflab jobs show ID`: the request, what became of it, and its output's tail."""
    lines = [f"job {job.id} ({job.kind.value}) {job.state.value}" + (" (cancel asked)" if job.cancel_requested else ""),
             f"  queue {job.queue}, host {job.host or '-'}, worker {job.worker or '-'}",
             f"  submitted {when(job.submitted_at)}, started {when(job.started_at)}, finished {when(job.finished_at)}",
             f"  request: {describe_request(job)} (timeout {job.timeout:g} s)",
             f"  runs: {', '.join(map(str, job.run_ids)) or 'none'}"]
    if job.error:
        lines.append(f"  error: {job.error}")
    if job.output and job.output.strip():
        lines += ["", job.output.rstrip()]
    return "\n".join(lines)
