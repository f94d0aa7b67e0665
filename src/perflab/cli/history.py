"""History across commits: perflab history, changes, report change ID."""

from __future__ import annotations

import click

from perflab.cli.common import RATE, check_output, count, format_option, open_store, warn, write_output
from perflab.model.errors import UsageError
from perflab.model.limits import MAX_ID
from perflab.model.methods import AUTO_METHOD, method_choices, method_help
from perflab.model.verdicts import Verdict
from perflab.render.history_formats import CHANGES_FORMATS, HISTORY_FORMATS

_METHODS = method_choices(auto=True)


def _selection(function):
    """The options that pick series: --metric, --filter, --benchmark, --label, --host, --method."""
    for decorator in reversed([
        click.option("--metric", "metrics", multiple=True, help="Only these metrics; repeatable."),
        click.option("--filter", "filters", multiple=True, metavar="KEY=VALUE",
                     help="benchmark=NAME or PARAM=VALUE[,VALUE]; repeatable."),
        click.option("--benchmark", "benchmarks", multiple=True, help="Only these benchmarks; repeatable."),
        click.option("--label", "labels", multiple=True, help="Only runs with this label; repeatable."),
        click.option("--host", "hosts", multiple=True, help="Only the series of this machine; repeatable."),
        click.option("--method", type=click.Choice(_METHODS), default=AUTO_METHOD, show_default=True,
                     help=method_help(auto=True)),
    ]):
        function = decorator(function)
    return function


def _build(ctx: click.Context, metrics, filters, benchmarks, labels, hosts, method, *, reports: bool = False):
    """The history; with ``reports`` also each change's report text, by change id."""
    from perflab.analysis.compare import Filters
    from perflab.analysis.history import build_history, report_of_change
    from perflab.render.change_report import render_change_report
    selection = Filters.parse([*filters, *(f"benchmark={b}" for b in benchmarks)], list(metrics))
    with open_store(ctx, create=False) as store:
        history = build_history(store, filters=selection, labels=labels, method=method, hosts=frozenset(hosts))
        texts = {c.id: render_change_report(report_of_change(store, history, s, c))
                 for s in history.series for c in s.changes} if reports else {}
    for warning in history.warnings:
        warn(warning.message)
    return history, texts


@click.command()
@_selection
@format_option(HISTORY_FORMATS)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file instead of stdout.")
@click.option("--samples", type=click.Choice(["budget", "all"]), default="budget", show_default=True,
              help="html: 'all' draws every sample, however many; 'budget' draws each commit's median and "
                   "range instead when the page's samples are over its budget (the page says so).")
@click.pass_context
def history(ctx: click.Context, metrics, filters, benchmarks, labels, hosts, method, fmt: str, output: str | None,
            samples: str) -> None:
    """A metric's series in commit order (first-parent of the runs' --repo), with change points.

    \b
      perflab history --metric per_thread_ops --filter test=poll2
    """
    layout = HISTORY_FORMATS[fmt]
    if samples == "all" and not layout.linked:
        raise UsageError(f"--samples all is for --format html (the page's sample dots), not --format {fmt}")
    if output:
        check_output(output)  # before any work
    found, reports = _build(ctx, metrics, filters, benchmarks, labels, hosts, method, reports=layout.linked)
    subjects: dict[str, str] = {}
    if layout.linked:
        from perflab.vcs import commit_subjects
        commits = [p.point.commit for s in found.series for p in s.points if p.point.commit]
        subjects = commit_subjects(found.repo, dict.fromkeys(commits))
    text = layout.render(found, subjects, reports, samples == "all")
    if output:
        write_output(output, text)
    else:
        click.echo(text, nl=False)


HOW_DECIDED = """

    How a change is decided: the detector (--method; auto = mosum, with a stated
    false-alarm rate of 0.2 per 1,000 points) runs on each commit's median; a change
    smaller than the metric's noise
    floor is dropped. Its % and verdict (improvement or regression, by the metric's
    direction) come from the centres of those medians before and after; p is Welch's
    t-test on the two segments' medians, the raw samples' test shown beside it."""  # indented as a docstring


def _decided(command: click.Command) -> click.Command:
    """Append how a change is decided to a command's help."""
    command.help = (command.help or "") + HOW_DECIDED
    return command


@_decided
@click.command()
@_selection
@click.option("--since", metavar="DATE", help="Only changes whose commit was measured on or after DATE (ISO).")
@click.option("--direction", type=click.Choice([Verdict.REGRESSION.value, Verdict.IMPROVEMENT.value]),
              help="Only changes with this verdict.")
@format_option(CHANGES_FORMATS)
@click.pass_context
def changes(ctx: click.Context, metrics, filters, benchmarks, labels, hosts, method, since: str | None,
            direction: str | None, fmt: str) -> None:
    """Every detected change of every series, largest first."""
    from perflab.analysis.alerts import mark_alerts, with_alerted
    from perflab.analysis.history import list_changes, parse_since
    moment = parse_since(since) if since else None
    found, _ = _build(ctx, metrics, filters, benchmarks, labels, hosts, method)
    with open_store(ctx, create=False) as store:
        listing = mark_alerts(store, list_changes(with_alerted(store, found), since=moment, direction=direction))
    click.echo(CHANGES_FORMATS[fmt].render(listing), nl=False)


@click.group()
def report() -> None:
    """Reports written for people: 'perflab report change ID'."""


@_decided
@report.command(name="change", short_help="A change as a robot-style regression report.")
@click.argument("change_id", metavar="ID")
@click.option("--label", "labels", multiple=True, help="Look among runs with this label; repeatable.")
@click.option("--method", type=click.Choice(_METHODS), default=AUTO_METHOD, show_default=True,
              help="The detector the change was listed with.")
@click.option("--points", type=count(MAX_ID), default=None,
              help="Pool only the N measured commits nearest the change on each side in the detailed "
                   "comparison [default: the whole segments the change point defines, as 'history' shows].")
@click.option("--fdr", type=RATE, default=0.05, show_default=True,
              help="False discovery rate across the stats of the detailed comparison.")
@click.option("--rows", type=click.Choice(["changed", "all"]), default="changed", show_default=True,
              help="Stats of the detailed comparison: only those that changed, or all.")
@click.pass_context
def report_change(ctx: click.Context, change_id: str, labels, method: str, points: int | None, fdr: float,
                  rows: str) -> None:
    """A change point as a robot-style regression report (see 'perflab changes' for IDs).

    The detailed table tests every stat of the two segments' runs (Welch's t-test on log
    values, Benjamini-Hochberg FDR 5% across the table).
    """
    from perflab.analysis.history import change_report
    from perflab.model.errors import UsageError
    from perflab.render.change_report import render_change_report
    if not 0 < fdr < 1:
        raise UsageError(f"--fdr must be between 0 and 1, got {fdr}")
    with open_store(ctx, create=False) as store:
        found = change_report(store, change_id, labels=labels, method=method, points=points, q=fdr)
    click.echo(render_change_report(found, show_all=rows == "all"), nl=False)


COMMANDS: list[click.Command] = [history, changes, report]
