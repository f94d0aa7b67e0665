"""perflab calibrate: measure run-to-run variance, the noise a single run cannot see."""

from __future__ import annotations

import click

from perflab.cli.common import open_store
from perflab.model.errors import UsageError


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-k", "--runs", "k", type=int, default=5, show_default=True,
              help="Separate runs to record (2 or more; more runs, a surer estimate).")
@click.option("--label", default="calibrate", show_default=True, help="Label of the runs.")
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
    from perflab.analysis.compare import run_to_run
    from perflab.analysis.host_model import view
    from perflab.cli.record import run
    from perflab.render.calibrate import render_calibration, render_host_model

    if k < 2:
        raise UsageError(f"--runs must be 2 or more to measure variance between runs, got {k}")
    if any(a in ("--label", "--resume") or a.startswith(("--label=", "--resume=")) for a in run_args):
        raise UsageError("calibrate sets the label itself (use its --label) and cannot resume")
    if not run_args:
        raise UsageError("calibrate needs what to run, as 'perflab run' takes it")
    ids = []
    for i in range(k):
        click.echo(f"calibrate: run {i + 1} of {k}", err=True)
        sub = run.make_context("run", ["--label", label, "-q", *run_args], parent=ctx)
        sub.meta["perflab.dashdash"] = "--" in run_args
        with sub:
            run.invoke(sub)
        with open_store(ctx, create=False) as store:
            ids.append(store.resolve_run(label).id)
    with open_store(ctx, create=False) as store:
        click.echo(render_calibration(run_to_run(store, ids)), nl=False)
        click.echo("\n" + render_host_model(view(store, store.resolve_run(str(ids[-1])).host)), nl=False)


COMMANDS: list[click.Command] = [calibrate]
