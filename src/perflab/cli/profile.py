"""Profiles: perflab profile RUN, perflab flamegraph RUN [--vs RUN2]."""

from __future__ import annotations

import click

from perflab.cli.common import check_output, open_store, write_output

_FILTER = click.option("--filter", "filters", multiple=True, metavar="KEY=VALUE",
                       help="benchmark=NAME or PARAM=VALUE[,VALUE]; repeatable.")


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option("--children", is_flag=True, help="Sort by children % (the symbol and its callees) instead of self %.")
@click.option("--top", type=click.IntRange(min=0), default=20, show_default=True,
              help="Symbols and call traces per point (0: all).")
@_FILTER
@click.option("--format", "fmt", type=click.Choice(["text", "json", "folded"]), default="text",
              show_default=True, help="folded: root;...;leaf weight lines (flamegraph.pl input).")
@click.option("--event", help="Only this event's profile (folded: default the first recorded; else every event).")
@click.pass_context
def profile(ctx: click.Context, run_ref: str, children: bool, top: int, filters: tuple[str, ...],
            fmt: str, event: str | None) -> None:
    """A run's profile: self and children % per symbol, call traces (mean over repetitions)."""
    from perflab.analysis.compare import Filters
    from perflab.analysis.profile import folded_stacks, run_profile
    from perflab.render.profile import render_folded, render_profile, render_profile_json

    selection = Filters.parse(list(filters), [])
    with open_store(ctx, create=False) as store:
        run = store.runs.resolve(run_ref)
        if fmt == "folded":
            click.echo(render_folded(folded_stacks(store, run, filters=selection, event=event)), nl=False)
            return
        order = "children" if children else "self"
        points = run_profile(store, run, filters=selection, order=order, top=top or None, event=event)
    text = render_profile_json(run, points) if fmt == "json" else render_profile(run, points, order=order)
    click.echo(text, nl=False)


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option("--vs", "vs_ref", metavar="RUN2",
              help="Differential: widths from RUN2, red/blue = self share grew/shrank from RUN to RUN2.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The file to write.")
@click.option("--format", "fmt", type=click.Choice(["svg", "html", "speedscope"]), default="svg", show_default=True,
              help="svg: static; html: interactive (click to zoom, search with % matched, reset); "
                   "speedscope: speedscope.app's JSON file format (with --vs: both profiles).")
@_FILTER
@click.option("--event", help="The event (default: the first recorded).")
@click.option("--title", help="Title of the graph.")
@click.option("--width", type=click.IntRange(min=200), default=1200, show_default=True, help="Pixels (svg).")
@click.pass_context
def flamegraph(ctx: click.Context, run_ref: str, vs_ref: str | None, output: str, fmt: str,
               filters: tuple[str, ...], event: str | None, title: str | None, width: int) -> None:
    """A flame graph of a run's profile (SVG, interactive HTML or a speedscope file), or a
    differential one against RUN2."""
    from perflab.analysis.compare import Filters
    from perflab.analysis.profile import folded_stacks
    from perflab.render.flamegraph import render_flamegraph

    check_output(output)  # before any work
    selection = Filters.parse(list(filters), [])
    with open_store(ctx, create=False) as store:
        run = store.runs.resolve(run_ref)
        stacks = folded_stacks(store, run, filters=selection, event=event)
        other = store.runs.resolve(vs_ref) if vs_ref is not None else None
        after = folded_stacks(store, other, filters=selection, event=event) if other is not None else None
    if fmt != "svg":
        from perflab.render.flamegraph_html import render_flamegraph_html, speedscope_json
        name = f"run {run.id} ({run.label})"
        if fmt == "speedscope":
            profiles = [(name, stacks)]
            if other is not None and after is not None:
                profiles.append((f"run {other.id} ({other.label})", after))
            text = speedscope_json(profiles, title or f"perflab profile: {name}")
        elif other is None or after is None:
            text = render_flamegraph_html(stacks, title=title or f"Flame Graph: {name}",
                                          subtitle="width = share of samples; x order is by name, not time")
        else:
            text = render_flamegraph_html(
                after, base=stacks,
                title=title or f"Differential Flame Graph: {name} -> run {other.id} ({other.label})",
                subtitle=f"width = run {other.id}; red = self share grew, blue = shrank "
                         f"(percentage points, from run {run.id} to run {other.id})")
        write_output(output, text)
        click.echo(f"wrote {output}")
        return
    if other is None or after is None:
        svg = render_flamegraph(stacks, title=title or f"Flame Graph: run {run.id} ({run.label})",
                                subtitle="width = share of samples; x order is by name, not time",
                                width=width)
    else:
        svg = render_flamegraph(
            after, base=stacks, width=width,
            title=title or (f"Differential Flame Graph: run {run.id} ({run.label}) "
                            f"-> run {other.id} ({other.label})"),
            subtitle=f"width = run {other.id}; red = self share grew, blue = shrank "
                     f"(percentage points, from run {run.id} to run {other.id})")
    write_output(output, svg)
    click.echo(f"wrote {output}")


COMMANDS: list[click.Command] = [profile, flamegraph]
