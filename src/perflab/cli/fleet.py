"""The lab: perflab worker, submit, jobs, watch."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import click

from perflab.cli.common import LABEL, REPETITIONS, SECONDS, Finite, RowId, count, open_store, warn
from perflab.model.errors import EnvironmentProblem, UsageError
from perflab.model.limits import MAX_ID

_BROKER = click.option("--broker", metavar="URL", help="Redis broker, redis://HOST:PORT/DB (default: $PERFLAB_BROKER).")


class _DashDashCommand(click.Command):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["perflab.dashdash"] = "--" in args
        return super().parse_args(ctx, args)


def _db(ctx: click.Context) -> str:
    """The store as the worker's job processes name it: a file by its absolute path (a
    build job runs in the worker's worktree)."""
    from perflab.store.location import is_url, resolve
    target = resolve(ctx.find_root().obj["db"])
    return target if is_url(target) else str(Path(target).expanduser().resolve())


# -- worker -----------------------------------------------------------------------------
@click.command()
@_BROKER
@click.option("--host", metavar="NAME", help="Host name of this worker's queue host.NAME (default: the node name).")
@click.option("--class", "machine_class", metavar="NAME", help="Also take jobs of the queue class.NAME.")
@click.option("--workdir", type=click.Path(file_okay=False), metavar="DIR",
              help="Where jobs keep their logs and builds (default: $XDG_CACHE_HOME/perflab/worker-HOST).")
@click.option("--force-unfit", is_flag=True, help="Start even where 'perflab doctor' finds the machine unfit.")
@click.option("--heartbeat", type=SECONDS, default=3.0, show_default=True, metavar="S",
              help="Heartbeat interval; a worker silent for 10 of them is dead and its job failed.")
@click.option("--loglevel", default="WARNING", show_default=True, help="Celery's log level.")
@click.pass_context
def worker(ctx: click.Context, broker: str | None, host: str | None, machine_class: str | None,
           workdir: str | None, force_unfit: bool, heartbeat: float, loglevel: str) -> None:
    """Take benchmark jobs from the broker, one at a time, into the store.

    \b
      perflab --db postgresql://lab/perflab worker --broker redis://lab:6379/0 --host bm1 --class 2cpu
    """
    from perflab.execute import environment, tuning
    from perflab.fleet.app import check_broker, make_app, resolve_broker
    from perflab.fleet.worker import serve

    if heartbeat <= 0:
        raise UsageError(f"bad --heartbeat {heartbeat:g}: must be more than 0 seconds")
    url = resolve_broker(broker)
    db = _db(ctx)
    host = host or os.uname().nodename
    snapshot = environment.capture()
    unfit = [f for f in tuning.check(snapshot, is_root=os.geteuid() == 0) if f.level == "warning"]
    if unfit and not force_unfit:
        raise EnvironmentProblem("this machine is unfit for benchmarks: "
                                 + "; ".join(f"{f.topic}: {f.message}" for f in unfit),
                                 hint="fix it (see 'perflab doctor') or pass --force-unfit")
    for finding in unfit:
        warn(f"unfit, started anyway (--force-unfit): {finding.topic}: {finding.message}")
    check_broker(make_app(url))
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    directory = Path(workdir) if workdir else Path(cache) / "perflab" / f"worker-{host}"
    click.echo(f"perflab worker {host}: queues host.{host}" + (f", class.{machine_class}" if machine_class else "")
               + f"; store {db}", err=True)
    serve(broker=url, db=db, host=host, machine_class=machine_class, workdir=directory.resolve(),
          environment=dict(snapshot, unfit=[f.topic for f in unfit]), heartbeat_s=heartbeat, loglevel=loglevel)


# -- submit -----------------------------------------------------------------------------
@click.command(cls=_DashDashCommand)
@_BROKER
@click.option("--host", metavar="NAME", help="Run on this host (queue host.NAME).")
@click.option("--class", "machine_class", metavar="NAME", help="Run on any machine of this class (queue class.NAME).")
@click.option("-n", "--runs", "repetitions", type=REPETITIONS, help="Measured repetitions per point.")
@click.option("--label", type=LABEL, help="Label of the run.")
@click.option("--commit", help="Commit being measured.")
@click.option("-p", "--param", "params", multiple=True, metavar="NAME=VALUES", help="A sweep, as in 'perflab run'.")
@click.option("--monitor", metavar="LIST", help="Monitors, as in 'perflab run'.")
@click.option("--shuffle", is_flag=True, help="Randomise the order inside each round.")
@click.option("--job-timeout", type=SECONDS, metavar="S", help="The job's time limit (default: 3600 s).")
@click.option("--ab", is_flag=True, help="An A/B job: --base and --cand interleaved in random order in one run.")
@click.option("--base", metavar="CMD", help="--ab: the baseline's shell line.")
@click.option("--cand", metavar="CMD", help="--ab: the candidate's shell line.")
@click.argument("target", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def submit(ctx: click.Context, broker: str | None, host: str | None, machine_class: str | None,
           repetitions: int | None, label: str | None, commit: str | None, params: tuple[str, ...],
           monitor: str | None, shuffle: bool, job_timeout: float | None, ab: bool, base: str | None,
           cand: str | None, target: tuple[str, ...]) -> None:
    """Queue a run on a host or a class of machines; prints the job's id.

    \b
      perflab submit --host bm1 suites/sis.toml --label nightly --commit SHA
      perflab submit --class 2cpu -n 20 -- ./tool in.dat
      perflab submit --host bm1 --ab --base './old in.dat' --cand './new in.dat' -n 20
    """
    from perflab.execute import monitors
    from perflab.fleet.app import DEFAULT_JOB_TIMEOUT_S, class_queue, host_queue, make_app, resolve_broker
    from perflab.fleet.submit import submit as queue_job
    from perflab.fleet.submit import suite_request, with_run
    from perflab.model import params as sweeps
    from perflab.model.jobs import JobKind, JobRequest
    from perflab.model.run_request import Identity, RunOptions, RunRequest, SweepText, Target
    from perflab.workloads.suite import machine_variables

    if bool(host) == bool(machine_class):
        raise UsageError("say where the job runs: --host NAME or --class NAME (one of them)")
    url = resolve_broker(broker)
    queue = host_queue(host) if host else class_queue(machine_class or "")
    variables = machine_variables()   # this machine's: the sweeps are only checked here
    for param in params:
        sweeps.parse_assignment(param, variables)
    request: JobRequest = {"timeout": job_timeout or DEFAULT_JOB_TIMEOUT_S}
    run = RunRequest(sweep=SweepText(params=params), repetitions=repetitions,
                     options=RunOptions(shuffle=shuffle or ab,
                                        monitors=list(monitors.parse_names(monitor)) if monitor else None),
                     identity=Identity(label=label, commit=commit))
    if ab:
        if not (base and cand) or target:
            raise UsageError("--ab takes --base CMD and --cand CMD, and no other command")
        # both arms: two commands of one run, in random order inside every round
        kind, request = JobKind.AB, {**request, "base": base, "cand": cand}
        run = replace(run, target=Target(commands=(base, cand), command_names=("base", "cand"), shell=True))
    else:
        if base or cand:
            raise UsageError("--base and --cand go with --ab")
        if not target:
            raise UsageError("nothing to run: give a suite file, a workload or '-- COMMAND'")
        dashdash = ctx.meta.get("perflab.dashdash", False)
        kind = JobKind.RUN
        if not dashdash and len(target) == 1 and target[0].endswith(".toml"):
            if not Path(target[0]).is_file():
                raise UsageError(f"no suite file {target[0]}")
            request["suite"] = suite_request(target[0])
        else:
            request["target"] = list(target)
        run = replace(run, target=Target(words=tuple(target), after_dashdash=dashdash))
    with open_store(ctx, create=True) as store:
        job_id, warning = queue_job(store, make_app(url), kind, queue, with_run(request, run))
    if warning:
        warn(warning)
    click.echo(job_id)


# -- jobs -------------------------------------------------------------------------------
@click.group(invoke_without_command=True)
@click.option("--state", "states", metavar="LIST",
              help="Only jobs in these states: queued,running,done,failed,cancelled.")
@click.option("--last", type=count(MAX_ID), metavar="N", help="Only the N latest jobs.")
@click.pass_context
def jobs(ctx: click.Context, states: str | None, last: int | None) -> None:
    """The fleet's jobs: one line each (or 'jobs show ID', 'jobs cancel ID', 'jobs wait ID')."""
    if ctx.invoked_subcommand is not None:
        return
    from perflab.model.jobs import parse_states
    from perflab.render.jobs import render_jobs
    wanted = parse_states(states)
    with open_store(ctx, create=False) as store:
        store.jobs.fail_orphaned()
        click.echo(render_jobs(store.jobs.all(wanted, last)))


@jobs.command("cancel", short_help="Cancel a job (a running one is killed by its worker).")
@click.argument("job_id", type=RowId("job id"), metavar="ID")
@click.option("--no-wait", is_flag=True, help="Do not wait for the worker to confirm.")
@click.pass_context
def jobs_cancel(ctx: click.Context, job_id: int, no_wait: bool) -> None:
    """Cancel a job: a queued one is dropped; a running one's process group is killed
    by its worker, which polls the store for cancel requests (within a second or two)."""
    from perflab.fleet.submit import wait_for
    from perflab.render.jobs import render_job_end
    with open_store(ctx, create=False) as store:
        job = store.jobs.request_cancel(job_id)
        if job.state.finished and job.state.value != "cancelled":
            raise UsageError(f"job {job_id} already ended: {job.state.value}")
        if not no_wait and not job.state.finished:
            job = wait_for(store, job_id, timeout_s=60)
    click.echo(render_job_end(job) if job.state.finished else f"job {job_id}: cancel asked; its worker stops it")


@jobs.command("show", short_help="One job: request, state, times, runs, error, output.")
@click.argument("job_id", type=RowId("job id"), metavar="ID")
@click.pass_context
def jobs_show(ctx: click.Context, job_id: int) -> None:
    """One job: its request, state, times, runs, error and the tail of its output
    (a bisect job's result)."""
    from perflab.render.jobs import render_job
    with open_store(ctx, create=False) as store:
        click.echo(render_job(store.jobs.get(job_id)))


@jobs.command("wait", short_help="Wait for a job to end; exit 0 done, 1 failed, 3 timeout.")
@click.argument("job_id", type=RowId("job id"), metavar="ID")
@click.option("--timeout", type=Finite(min=0), metavar="S", help="Give up after S seconds (exit 3).")
@click.pass_context
def jobs_wait(ctx: click.Context, job_id: int, timeout: float | None) -> None:
    """Wait for a job to end. Exit 0 done, 1 failed or cancelled, 3 still going at --timeout."""
    from perflab.fleet.submit import wait_for
    from perflab.model.errors import EXIT_ENVIRONMENT, EXIT_VERDICT
    from perflab.model.jobs import JobState
    from perflab.render.jobs import render_job_end
    with open_store(ctx, create=False) as store:
        job = wait_for(store, job_id, timeout)
    click.echo(render_job_end(job))
    if not job.state.finished:
        click.echo(f"perflab: job {job_id} still {job.state.value} after {timeout:g} s", err=True)
        sys.exit(EXIT_ENVIRONMENT)
    if job.state is not JobState.DONE:
        sys.exit(EXIT_VERDICT)


# -- watch ------------------------------------------------------------------------------
@click.command()
@_BROKER
@click.option("--repo", required=True, type=click.Path(file_okay=False), help="The git repository to follow.")
@click.option("--branch", default="main", show_default=True, help="The branch to follow.")
@click.option("--build", required=True, metavar="CMD", help="Shell line that builds a commit (cwd: the worktree).")
@click.option("--suite", required=True, type=click.Path(dir_okay=False), help="The suite run on each commit.")
@click.option("--hosts", required=True, metavar="LIST", help="Hosts that run every commit: bm1,bm2.")
@click.option("--label", type=LABEL, help="Label of the robot's runs (default: robot-BRANCH).")
@click.option("--bisect-run", metavar="CMD",
              help="Shell line a bisect measures; without it, multi-commit changes are only reported.")
@click.option("--tip-only", is_flag=True, help="Queue only the newest of the new commits (bisect fills the gaps).")
@click.option("--since", metavar="COMMIT", help="On the first pass, start at this commit (default: the tip only).")
@click.option("--job-timeout", type=SECONDS, default=3600.0, show_default=True, metavar="S", help="Each job's limit.")
@click.option("--once", is_flag=True, help="One pass: queue, wait for the jobs, detect, exit.")
@click.option("--interval", type=SECONDS, default=60.0, show_default=True, metavar="S", help="Seconds between polls.")
@click.pass_context
def watch(ctx: click.Context, broker: str | None, repo: str, branch: str, build: str, suite: str, hosts: str,
          label: str | None, bisect_run: str | None, tip_only: bool, since: str | None, job_timeout: float,
          once: bool, interval: float) -> None:
    """The regression robot: build and benchmark each new commit of a branch on the fleet.

    Each change it finds at the tip (a suspect or a confirmed level) is rerun on its host (both
    commits built and measured again, side by side in rounds) and judged by the next detection;
    with --once, in the same pass.

    \b
      perflab watch --repo ~/src/tool --branch main --build 'make -j8' --suite suites/fget.toml --hosts bm1,bm2
    """
    from perflab.fleet.app import make_app, resolve_broker
    from perflab.fleet.submit import check_timeout
    from perflab.fleet.watch import AlertLog, Round, WatchOptions, absolute, check_options, loop, run_round
    from perflab.notify import send_after_pass
    from perflab.notify.config import load_config
    from perflab.render.watch_log import log_line

    if interval <= 0:
        raise UsageError(f"bad --interval {interval:g}: must be more than 0 seconds")
    check_timeout(job_timeout)
    options = WatchOptions(repo=absolute(repo), branch=branch, build=build, suite=suite,
                           hosts=tuple(h.strip() for h in hosts.split(",") if h.strip()),
                           label=label or f"robot-{branch}", timeout_s=job_timeout, bisect_run=bisect_run,
                           tip_only=tip_only, since=since)
    check_options(options)
    notify_config = load_config()   # bad notification settings: one line now, not at the first alert
    app = make_app(resolve_broker(broker))

    def report(done: Round) -> None:
        for line in done.log:
            click.echo(log_line(line.at, line.text))
        if done.alerts is not None:   # a detection ran: tell people what it raised
            send_after_pass(store, notify_config, warn, lambda text: click.echo(log_line(time.time(), text)))

    with open_store(ctx, create=True) as store:
        if once:
            report(run_round(store, app, options, warn, wait_s=2 * job_timeout, log=AlertLog(store)))
        else:
            loop(store, app, options, interval, warn, report)


COMMANDS: list[click.Command] = [worker, submit, jobs, watch]
