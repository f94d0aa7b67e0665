"""Profiles: perflab profile RUN, perflab flamegraph RUN [--vs RUN2]."""

from __future__ import annotations

import click

from perflab.cli.common import check_output, format_option, open_store, write_output
from perflab.render.flamegraph_formats import FLAMEGRAPH_FORMATS
from perflab.render.profile import PROFILE_FORMATS, ProfileView

_FILTER = click.option("--filter", "filters", multiple=True, metavar="KEY=VALUE",
                       help="benchmark=NAME or PARAM=VALUE[,VALUE]; repeatable.")


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option("--children", is_flag=True, help="Sort by children % (the symbol and its callees) instead of self %.")
@click.option("--top", type=click.IntRange(min=0), default=20, show_default=True,
              help="Symbols and call traces per point (0: all).")
@_FILTER
@format_option(PROFILE_FORMATS)
@click.option("--event", help="Only this event's profile (folded: default the first recorded; else every event).")
@click.pass_context
def profile(ctx: click.Context, run_ref: str, children: bool, top: int, filters: tuple[str, ...],
            fmt: str, event: str | None) -> None:
    """A run's profile: self and children % per symbol, call traces (mean over repetitions)."""
    from perflab.analysis.compare import Filters
    from perflab.analysis.profile import folded_stacks, run_profile

    layout = PROFILE_FORMATS[fmt]
    selection = Filters.parse(list(filters), [])
    order = "children" if children else "self"
    with open_store(ctx, create=False) as store:
        run = store.runs.resolve(run_ref)
        if layout.stacks:
            view = ProfileView(run=run, stacks=folded_stacks(store, run, filters=selection, event=event))
        else:
            view = ProfileView(run=run, points=run_profile(store, run, filters=selection, order=order, top=top or None,
                                                event=event), order=order)
    click.echo(layout.render(view), nl=False)


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option("--vs", "vs_ref", metavar="RUN2",
              help="Differential: widths from RUN2, red/blue = self share grew/shrank from RUN to RUN2.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The file to write.")
@format_option(FLAMEGRAPH_FORMATS)
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
    from perflab.render.flamegraph_formats import FlameGraph

    check_output(output)  # before any work
    selection = Filters.parse(list(filters), [])
    with open_store(ctx, create=False) as store:
        run = store.runs.resolve(run_ref)
        stacks = folded_stacks(store, run, filters=selection, event=event)
        other = store.runs.resolve(vs_ref) if vs_ref is not None else None
        after = folded_stacks(store, other, filters=selection, event=event) if other is not None else None
    graph = FlameGraph(run, stacks, other, after, title=title, width=width)
    write_output(output, FLAMEGRAPH_FORMATS[fmt].render(graph))
    click.echo(f"wrote {output}")


COMMANDS: list[click.Command] = [profile, flamegraph]
