"""This machine as a benchmark host: perflab workloads, perflab doctor."""

from __future__ import annotations

import os

import click


# -- workloads ----------------------------------------------------------------------------
@click.command()
def workloads() -> None:
    """Built-in workloads: what each measures, parameters, metrics, available here or why not."""
    from perflab.render.workloads import render_workloads
    from perflab.workloads.command import CommandWorkload
    from perflab.workloads.registry import all_builtin
    entries = [(w, w.unavailable()) for w in all_builtin()] + [(CommandWorkload, None)]
    click.echo(render_workloads(entries))


# -- doctor -----------------------------------------------------------------------------
@click.command()
@click.pass_context
def doctor(ctx: click.Context) -> None:
    """This machine as a benchmark host: what works, what adds noise, how to fix it, and
    what the store knows of its run-to-run variance (the host model)."""
    from perflab.execute import environment, probe, tuning
    from perflab.render.doctor import render_doctor
    env = environment.capture()
    findings = tuning.check(env, is_root=os.geteuid() == 0)
    model = _host_model(ctx)   # first: a store that cannot be read is one line, not a report and then a line
    click.echo(render_doctor(env, findings, probe.perf_events(), probe.find_tools(), probe.TOOLS))
    click.echo(model)


def _host_model(ctx: click.Context) -> str:
    """The host model of this machine, from the store if there is one."""
    from perflab.analysis.host_model import view
    from perflab.cli.common import open_store, store_exists
    from perflab.render.calibrate import render_host_model
    from perflab.store import this_host
    if not store_exists(ctx):   # no store yet: nothing learned (a --db that names none is refused)
        return render_host_model(view(None, this_host()))
    with open_store(ctx, create=False) as store:
        return render_host_model(view(store, this_host()))


COMMANDS: list[click.Command] = [workloads, doctor]
