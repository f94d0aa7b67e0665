"""Regression alerts: perflab alerts (list, --update) and perflab alert ID [ACTION]."""

from __future__ import annotations

import subprocess
import time

import click

from perflab.cli.common import NAME, RowId, format_option, open_store
from perflab.model.alerts import ACTIONS, STATES
from perflab.model.errors import UsageError
from perflab.model.methods import AUTO_METHOD, method_choices, method_help
from perflab.render.alerts import ALERT_FORMATS

RERUN = "rerun"


@click.command()
@click.option("--state", type=click.Choice(STATES), help="Only alerts (with --summary: summaries) in this state.")
@click.option("--summary", "summaries", is_flag=True,
              help="Group by summary: the alerts of one commit range, with the state that follows from them.")
@click.option("--update", is_flag=True, help="First detect changes and raise an alert for each new one.")
@click.option("--rerun", "reruns", is_flag=True,
              help="Measure again the commit ranges the robot asked to rerun (each side's recorded "
                   "'perflab run', side by side in rounds) and attach the runs; with --update, judged at once.")
@click.option("--as-recorded", is_flag=True,
              help="With --rerun: the recorded command lines measure their commit as they stand (they are "
                   "rerun without checking out or building the commit).")
@click.option("--label", "labels", multiple=True, help="With --update: only runs with this label; repeatable.")
@click.option("--since", metavar="DATE", help="With --update: only changes measured on or after DATE (ISO).")
@click.option("--method", type=click.Choice(method_choices(auto=True)), default=AUTO_METHOD, show_default=True,
              help="With --update: " + method_help(auto=True))
@format_option(ALERT_FORMATS)
@click.pass_context
def alerts(ctx: click.Context, state: str | None, summaries: bool, update: bool, reruns: bool, as_recorded: bool,
           labels, since: str | None, method: str, fmt: str) -> None:
    """Regression alerts raised from change points, with their triage state.

    \b
      perflab alerts --update               detect changes; one alert per new change
      perflab alerts --update --rerun --as-recorded   ... and measure again what the robot asked to
      perflab alerts --state untriaged      what needs a look
      perflab alerts --summary              grouped by commit range
    """
    from perflab.analysis.alerts import list_alerts, list_summaries, update_alerts
    if (labels or since or method != AUTO_METHOD) and not update:
        raise UsageError("--label, --since and --method go with --update")
    if reruns != as_recorded:
        raise UsageError("--rerun reruns each side's recorded command line without checking out or building the "
                         "commit: confirm it with --as-recorded (a program built per commit: measure each side "
                         "yourself and attach the runs with 'perflab alert ID rerun --run RUN')")
    notify_config = _notify_config() if update else None
    with open_store(ctx, create=update) as store:
        if update:
            created = update_alerts(store, labels=labels, since=since, method=method)
            if reruns and _honour_reruns(store):   # judged by one more update, which also alerts what follows
                created += update_alerts(store, labels=labels, since=since, method=method)
            click.echo(f"perflab: {len(created)} new alert(s)", err=True)
            if notify_config is not None:
                from perflab.notify import send_after_pass
                send_after_pass(store, notify_config, lambda line: click.echo(f"perflab: {line}", err=True))
        elif reruns:
            _honour_reruns(store)
        if summaries:
            found = list_summaries(store, state=state)
            text = ALERT_FORMATS[fmt].render.summaries(found)
        else:
            listed = list_alerts(store, state=state)
            text = ALERT_FORMATS[fmt].render.alerts(listed)
    click.echo(text, nl=False)


@click.command()
@click.argument("alert_id", metavar="ID", type=RowId("alert id"))
@click.argument("action", required=False, type=click.Choice([*ACTIONS, RERUN]))
@click.argument("target", metavar="[N]", required=False, type=RowId("alert id"))
@click.option("--note", default="", help="Why: kept with the transition.")
@click.option("--who", type=NAME, help="Who triages [default: $USER].")
@click.option("--run", "runs", multiple=True, metavar="RUN",
              help="With rerun: attach this recorded run (id, label or commit) instead of running; repeatable.")
@format_option(ALERT_FORMATS, "Of the alert shown (without ACTION).")
@click.pass_context
def alert(ctx: click.Context, alert_id: int, action: str | None, target: int | None, note: str, who: str | None,
          runs, fmt: str) -> None:
    """Show an alert (its history and its 'report change'), or triage it.

    \b
      perflab alert 3                                  the alert, its events, the report
      perflab alert 3 ack --note 'bisecting'           untriaged -> acknowledged
      perflab alert 3 fixed|wontfix                    acknowledged -> fixed / wontfix
      perflab alert 3 invalid|improvement              untriaged -> invalid (noise) / improvement
      perflab alert 4 duplicate-of 3                   untriaged -> duplicate of alert 3
      perflab alert 3 reopen                           any -> untriaged
      perflab alert 3 rerun                            run both commits' recorded commands again, attach the runs
      perflab alert 3 rerun --run 41 --run 42          attach runs measured otherwise
    """
    from perflab.analysis.alerts import alert_detail, triage, who_default
    from perflab.render.alerts import render_alerts
    if target is not None and action != "duplicate-of":
        raise UsageError(f"unexpected argument {target}: only 'duplicate-of N' takes an alert id")
    if runs and action != RERUN:
        raise UsageError("--run goes with 'rerun'")
    who = who or who_default()
    with open_store(ctx, create=action is not None) as store:
        if action is None:
            detail = alert_detail(store, alert_id)
            click.echo(ALERT_FORMATS[fmt].render.detail(detail), nl=False)
            return
        if action == RERUN:
            _rerun(store, alert_id, list(runs), who=who, note=note)
            return
        moved = triage(store, alert_id, action, who=who, note=note, duplicate_of=target)
    click.echo(render_alerts([moved]), nl=False)


def _notify_config():
    """The notification settings of the environment (docs/notify.md): bad ones are one line."""
    from perflab.notify.config import load_config
    return load_config()


def _honour_reruns(store) -> int:
    """Measure each pending rerun request's runs in order and attach them to its alerts; how many
    ranges were measured. A range whose runs cannot be rerun is named and left pending."""
    from perflab.analysis.alert_reruns import pending_reruns, rounds_plan
    from perflab.analysis.alerts import ROBOT, attach_evidence
    done = 0
    for pending in pending_reruns(store):
        try:
            plan = rounds_plan(store, pending, time.strftime("%Y%m%d%H%M%S"))
            _run_sides(plan)
        except UsageError as error:
            click.echo(f"perflab: rerun of {pending.last_good[:12]}..{pending.first_bad[:12]} skipped: {error}",
                       err=True)
            continue
        for side in plan:
            for a in pending.alerts:
                attach_evidence(store, a.id, side.label, who=ROBOT, note=f"rerun requested: {side.side} side")
        done += 1
        click.echo(f"perflab: measured {pending.last_good[:12]}..{pending.first_bad[:12]} again "
                   f"({len(plan)} runs) for alert(s) {', '.join(str(a.id) for a in pending.alerts)}", err=True)
    return done


def _run_sides(plan, *, announce: bool = False) -> None:
    """Run each side's command in order (``announce``: saying which, as it starts); the first
    that fails stops the rest."""
    for side in plan:
        if announce:
            click.echo(f"perflab: rerun of the {side.side} side ({(side.commit or '')[:12]}): "
                       f"{' '.join(side.argv[3:])}", err=True)
        done = subprocess.run(side.argv, cwd=side.cwd, stdin=subprocess.DEVNULL, check=False)
        if done.returncode != 0:
            raise UsageError(f"the rerun of the {side.side} side exited {done.returncode}; nothing attached")


def _rerun(store, alert_id: int, runs: list[str], *, who: str, note: str) -> None:
    """Attach runs as evidence: those given, or a fresh run of each side's recorded command."""
    from perflab.analysis.alert_reruns import rerun_plan
    from perflab.analysis.alerts import attach_evidence
    if runs:
        for ref in runs:
            attach_evidence(store, alert_id, ref, who=who, note=note)
        click.echo(f"perflab: attached {len(runs)} run(s) to alert {alert_id}", err=True)
        return
    plan = rerun_plan(store, alert_id, time.strftime("%Y%m%d%H%M%S"))
    _run_sides(plan, announce=True)   # good first, then bad: each a complete `perflab run` on this store
    for side in plan:
        attach_evidence(store, alert_id, side.label, who=who,
                        note=" ".join(x for x in (f"rerun of the {side.side} side", note) if x))
    labels = " ".join(side.label for side in plan)
    click.echo(f"perflab: attached the runs {labels} to alert {alert_id}; 'perflab compare {labels}' "
               "compares them", err=True)


COMMANDS: list[click.Command] = [alerts, alert]
