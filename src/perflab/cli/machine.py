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
def doctor() -> None:
    """This machine as a benchmark host: what works, what adds noise, how to fix it."""
    from perflab.execute import environment, probe, tuning
    from perflab.render.doctor import render_doctor
    env = environment.capture()
    findings = tuning.check(env, is_root=os.geteuid() == 0)
    click.echo(render_doctor(env, findings, probe.perf_events(), probe.find_tools(), probe.TOOLS))


COMMANDS: list[click.Command] = [workloads, doctor]
