"""The formats of ``perflab flamegraph``: one registry, and the graphs' titles.

Each format lays out a ``FlameGraph`` (a run's folded stacks, and with ``--vs`` the
second run's) as the text of the file to write: ``svg`` (render.flamegraph), ``html``
and ``speedscope`` (render.flamegraph_html, imported only when asked for).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from perflab.model.output_formats import FormatRegistry, OutputFormat
from perflab.model.records import RunInfo

Stacks = Mapping[tuple[str, ...], float]
_SINGLE = "width = share of samples; x order is by name, not time"


@dataclass(frozen=True)
class FlameGraph:
    run: RunInfo
    stacks: Stacks
    other: RunInfo | None = None     # --vs RUN2: a differential graph, widths from RUN2
    after: Stacks | None = None      # RUN2's stacks
    title: str | None = None         # --title, else one naming the run(s)
    width: int = 1200                # pixels (svg)

    @property
    def name(self) -> str:
        return _name(self.run)

    def titles(self) -> tuple[str, str]:
        """The graph's title and subtitle: the run, or the two runs and what the colours mean."""
        if self.other is None or self.after is None:
            return self.title or f"Flame Graph: {self.name}", _SINGLE
        return (self.title or f"Differential Flame Graph: {self.name} -> {_name(self.other)}",
                f"width = run {self.other.id}; red = self share grew, blue = shrank "
                f"(percentage points, from run {self.run.id} to run {self.other.id})")


def _name(run: RunInfo) -> str:
    return f"run {run.id} ({run.label})"


def _svg(graph: FlameGraph) -> str:
    from perflab.render.flamegraph import render_flamegraph
    title, subtitle = graph.titles()
    if graph.after is None:
        return render_flamegraph(graph.stacks, title=title, subtitle=subtitle, width=graph.width)
    return render_flamegraph(graph.after, base=graph.stacks, title=title, subtitle=subtitle, width=graph.width)


def _html(graph: FlameGraph) -> str:
    from perflab.render.flamegraph_html import render_flamegraph_html
    title, subtitle = graph.titles()
    if graph.after is None:
        return render_flamegraph_html(graph.stacks, title=title, subtitle=subtitle)
    return render_flamegraph_html(graph.after, base=graph.stacks, title=title, subtitle=subtitle)


def _speedscope(graph: FlameGraph) -> str:
    from perflab.render.flamegraph_html import speedscope_json
    profiles = [(graph.name, graph.stacks)]
    if graph.other is not None and graph.after is not None:
        profiles.append((_name(graph.other), graph.after))
    return speedscope_json(profiles, graph.title or f"perflab profile: {graph.name}")


FLAMEGRAPH_FORMATS: FormatRegistry[OutputFormat[Callable[[FlameGraph], str]]] = FormatRegistry(
    OutputFormat(name="svg", help="static", render=_svg),
    OutputFormat(name="html", help="interactive (click to zoom, search with % matched, reset)", render=_html),
    OutputFormat(name="speedscope", help="speedscope.app's JSON file format (with --vs: both profiles)",
                 render=_speedscope),
)
