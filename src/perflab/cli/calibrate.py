"""perflab calibrate: measure run-to-run variance, the noise a single run cannot see."""

from __future__ import annotations

import click

from perflab.cli.common import LABEL, count, open_store, warn
from perflab.model.errors import UsageError
from perflab.model.limits import MAX_SEPARATE_RUNS


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-k", "--runs", "k", type=count(MAX_SEPARATE_RUNS, least=2), default=5, show_default=True,
              help="Separate runs to record (2 or more; more runs, a surer estimate).")
@click.option("--label", type=LABEL, default="calibrate", show_default=True, help="Label of the runs.")
@click.argument("run_args", nargs=-1, type=click.UNPROCESSED, metavar="[RUN OPTIONS] TARGET...")
@click.pass_context
def calibrate(ctx: click.Context, k: int, label: str, run_args: tuple[str, ...]) -> None:
    """Record K separate runs of every entry and teach this host its run-to-run variance.

    Samples inside one run share its circumstances (process placement, caches, the
    machine's state), so separate runs differ by more than their samples suggest
    (Kalibera and Jones, 2013). Takes the options and target of 'perflab run' (not
    --label or --resume): a suite, a workload or '-- CMD'. Each of the K runs holds every
    entry of the target, so the entries' runs interleave and drift hits all alike. The
    runs are replicates (the same thing on the same host, kernel and commit, under one
    label; runs of it each under a label of their own count as well). Then the host model
    is refitted and shown: per kind of metric, the prior of run-to-run variance that
    'perflab compare' of separate runs on this host borrows (moderated by a benchmark's
    own replicates where it has some).

    \b
      perflab calibrate -k 5 -n 20 -- ./mytool input.dat
      perflab calibrate hackbench -p groups=1,4 -n 10
      perflab calibrate -k 5 suites/quick.toml
    """
    from dataclasses import replace

    from perflab.analysis.compare import run_to_run
    from perflab.analysis.host_model import view
    from perflab.cli.record import progress_for, run, run_request
    from perflab.execute import record
    from perflab.render.calibrate import render_calibration, render_host_model

    if k < 2:
        raise UsageError(f"--runs must be 2 or more to measure variance between runs, got {k}")
    if any(a in ("--label", "--resume") or a.startswith(("--label=", "--resume=")) for a in run_args):
        raise UsageError("calibrate sets the label itself (use its --label) and cannot resume")
    if not run_args:
        raise UsageError("calibrate needs what to run, as 'perflab run' takes it")
    with run.make_context("run", ["--label", label, *run_args], parent=ctx) as sub:
        request = run_request(sub.params, after_dashdash="--" in run_args)
    record.prepare(request)   # refused before anything is stored
    ids = []
    with open_store(ctx, create=True) as store:
        for i in range(k):
            click.echo(f"calibrate: run {i + 1} of {k}", err=True)
            # each replicate draws its own shuffle order, as separate `perflab run`s would
            again = replace(request, options=replace(request.options, seed=None)) \
                if request.options.shuffle and sub.params["seed"] is None else request
            ids.append(record.record(store, again, progress_for(True), warn))
            if store.runs.resolve(str(ids[-1])).status.value == "failed":
                raise UsageError(f"every sample of run {ids[-1]} failed; see 'perflab show {ids[-1]}'")
        click.echo(render_calibration(run_to_run(store, ids)), nl=False)
        click.echo("\n" + render_host_model(view(store, store.runs.resolve(str(ids[-1])).host)), nl=False)


COMMANDS: list[click.Command] = [calibrate]
