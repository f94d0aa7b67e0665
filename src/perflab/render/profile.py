"""``perflab profile RUN``: a run's profile per benchmark, point and event.

Text: per point, the top symbols with their self and children share (mean over the
repetitions, ``±N%`` = population sd / mean as lkp prints it, above 2%), then the top
call traces (lkp's ``calltrace``: at most five frames, callee first). JSON: the same
numbers. Folded: ``root;...;leaf weight`` lines, flamegraph.pl's input.

Input: the run (model.records.RunInfo) and analysis.profile's PointProfile values, typed
here by the `PointProfile` protocol (render cannot import analysis; they belong in the
report model once analysis.profile moves them there).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from perflab.model.output_formats import FormatRegistry, OutputFormat
from perflab.model.records import RunInfo
from perflab.model.report.profile import PointProfile
from perflab.render.compare_data import number
from perflab.render.texttable import format_table


def _share(m: float, spread_pct: float) -> str:
    if not math.isfinite(m):
        return "-"
    return f"{m:.2f}" + (f" ±{round(spread_pct):d}%" if math.isfinite(spread_pct) and spread_pct > 2 else "")


def render_profile(run: RunInfo, points: Sequence[PointProfile], *, order: str = "self") -> str:
    out = [f"run {run.id} ({run.label}): profile, % of samples, mean over the repetitions"]
    for p in points:
        out += ["", f"{p.benchmark} {p.point}  event {p.event}  {p.repetitions} repetition(s)"]
        headers = ["children", "self", "symbol"] if order == "children" else ["self", "children", "symbol"]
        rows = []
        for s in p.symbols:
            own, children = _share(s.self_mean, s.self_spread_pct), _share(s.children_mean, s.children_spread_pct)
            rows.append([children, own, s.name] if order == "children" else [own, children, s.name])
        out.append(format_table(headers, rows, align="rrl", indent="  ") if rows
                   else "  no symbol at or above 0.05%")
        if p.calltraces:
            out += ["", "  call traces (callee first):"]
            out.append(format_table(["share", "frames"], [[_share(t.self_mean, t.self_spread_pct), t.name]
                                                          for t in p.calltraces], align="rl", indent="  "))
    return "\n".join(out) + "\n"


def profile_data(run: RunInfo, points: Sequence[PointProfile]) -> dict[str, Any]:
    return {"run": {"id": run.id, "label": run.label, "commit": run.commit},
            "points": [{"benchmark": p.benchmark, "params": p.params, "event": p.event,
                        "repetitions": p.repetitions,
                        "symbols": [{"symbol": s.name, "self_pct": number(s.self_mean),
                                     "self_stddev": number(s.self_sd), "children_pct": number(s.children_mean),
                                     "children_stddev": number(s.children_sd)} for s in p.symbols],
                        "calltraces": [{"frames": t.name.split(";"), "pct": number(t.self_mean),
                                        "stddev": number(t.self_sd)} for t in p.calltraces]}
                       for p in points]}


def render_profile_json(run: RunInfo, points: Sequence[PointProfile]) -> str:
    return json.dumps(profile_data(run, points), indent=1, ensure_ascii=False) + "\n"


def render_folded(stacks: Mapping[tuple[str, ...], float]) -> str:
    """flamegraph.pl's input, heaviest first; whole weights print as integers."""
    lines = []
    for stack, weight in sorted(stacks.items(), key=lambda kv: (-kv[1], kv[0])):
        count = int(weight) if float(weight).is_integer() else f"{weight:.6g}"
        lines.append(f"{';'.join(stack)} {count}")
    return "\n".join(lines) + ("\n" if lines else "")


@dataclass(frozen=True)
class ProfileView:
    """What ``perflab profile`` lays out: the per-symbol table of each point, or (for a
    format with ``stacks``) the folded call stacks."""

    run: RunInfo
    points: Sequence[PointProfile] = ()
    order: str = "self"          # the table's sort: self or children %
    stacks: Mapping[tuple[str, ...], float] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ProfileFormat(OutputFormat[Callable[[ProfileView], str]]):
    stacks: bool = False         # lays out the folded stacks, not the per-symbol table


PROFILE_FORMATS: FormatRegistry[ProfileFormat] = FormatRegistry(
    ProfileFormat(name="text", help="self and children % per symbol and the heaviest call traces, per point",
                  render=lambda view: render_profile(view.run, view.points, order=view.order)),
    ProfileFormat(name="json", help="the same, every number, stable keys",
                  render=lambda view: render_profile_json(view.run, view.points)),
    ProfileFormat(name="folded", help="root;...;leaf weight lines (flamegraph.pl input)",
                  render=lambda view: render_folded(view.stacks), stacks=True),
)
