"""Pieces shared by the report formats of ``perflab compare``: pure layout of the
``model.report.compare.CompareReport`` that analysis built (no statistic is computed
here): naming points, collecting warnings with their side, stating the significance
rule in one sentence, parsing ``--rows``.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from perflab.model.errors import UsageError
from perflab.model.params import format_value
from perflab.model.records import RunInfo
from perflab.model.report.compare import Block, CompareReport, Row
from perflab.model.verdicts import StatWarning, WarningSide
from perflab.render.units import metric_scale

MEAN_NAMES = {"amean": "Amean", "hmean": "Hmean", "gmean": "Gmean"}


def finite(value: float | None) -> bool:
    return value is not None and isinstance(value, (int, float)) and math.isfinite(value)


def op_name(params: dict[str, Any], names: Sequence[str]) -> str:
    """mmtests' operation name: the value of a lone parameter, else k=v,k=v."""
    if not params:
        return ""
    if len(names) == 1 and len(params) == 1:
        return format_value(next(iter(params.values())))
    return ",".join(f"{k}={format_value(v)}" for k, v in params.items())


def noise_floors(report: CompareReport) -> str:
    return "/".join(f"{100 * f:g}%" for f in report.noise_floors)


def significance_rule(report: CompareReport) -> str:
    """One sentence: which test, which FDR control, which noise floor decides a mark."""
    if report.is_rule:
        return f"{report.method_name}, no FDR control (the rule decides alone)"
    text = (f"{report.method_name}, Benjamini-Hochberg FDR {100 * report.q:g}% "
            f"over {report.tested} comparisons")
    floor = noise_floors(report)
    return text + (f", change beyond the {floor} noise floor" if floor else "")


#: How many rows a verdict line names before it counts the rest.
VERDICT_NAMES = 8


def verdict_lines(report: CompareReport, indent: str = "  ") -> list[str]:
    """Each row's verdict, one line per verdict: the rows it holds (with the candidate's
    label when there are several), so a row without a mark says whether it is "no change"
    or "undecided" (a test that could not tell)."""
    several = len(report.labels) > 2
    by_verdict: dict[str, list[str]] = {}
    for row, index, change in report.changes():
        name = row.cells[index].title(row) + (f" ({report.labels[index + 1]})" if several else "")
        by_verdict.setdefault(change.verdict.value, []).append(name)
    lines = []
    for verdict, names in by_verdict.items():
        more = f" and {len(names) - VERDICT_NAMES} more" if len(names) > VERDICT_NAMES else ""
        lines.append(f"{indent}{verdict} ({len(names)}): {', '.join(names[:VERDICT_NAMES])}{more}")
    return lines


def side_warnings(warnings: Sequence[StatWarning], side: WarningSide) -> list[str]:
    return [w.message for w in warnings if w.side is side]


def row_warnings(row: Row, labels: Sequence[str]) -> list[str]:
    """Every warning of one row, each naming its side, duplicates removed:
    ``base: ...``, ``patched: ...``, ``patched vs base: ...``."""
    out: list[str] = []

    def add(text: str) -> None:
        if text not in out:
            out.append(text)

    if row.base is not None:
        for w in row.base.warnings:
            add(f"{labels[0]}: {w.message}")
        if row.base.failures:
            add(f"{labels[0]}: {row.base.failures} failed sample(s) left out")
    for label, cell in zip(labels[1:], row.cells):
        if cell.side is not None:
            for w in cell.side.warnings:
                add(f"{label}: {w.message}")
            if cell.side.failures:
                add(f"{label}: {cell.side.failures} failed sample(s) left out")
        for w in cell.warnings:
            add(f"{label} vs {labels[0]}: {w.message}")
    return out


def warning_lines(report: CompareReport, indent: str = "  ", rows: Sequence[Row] | None = None,
                  verbose: bool = True) -> list[str]:
    """The report's warnings, then every row's (or those of ``rows``): one line per row
    when ``verbose``, else one line per kind with the number of rows it concerns."""
    lines = [wrapped for w in report.warnings for wrapped in _wrap(str(w), indent)]
    chosen = report.rows if rows is None else rows
    if verbose:
        for row in chosen:
            found = row_warnings(row, report.labels)
            if found:
                lines += _wrap(f"{row.title}: " + "; ".join(found), indent)
        return lines
    steps = [(row, w.message) for row in chosen for cell in row.cells for w in cell.warnings
             if w.kind == NEXT_STEP]
    counts: dict[str, int] = {}
    for row in chosen:
        for kind in row_kinds(row):
            if kind != NEXT_STEP or len(steps) > NEXT_STEPS:
                counts[kind] = counts.get(kind, 0) + 1
    for kind, count in counts.items():
        lines.append(f"{indent}{KIND_TITLES.get(kind, kind)}: {count} row{'s' if count > 1 else ''}")
    if len(steps) <= NEXT_STEPS:   # what would decide a row is said in full
        lines += [line for row, message in steps for line in _wrap(f"{row.title}: {message}", indent)]
    if counts or steps:
        lines.append(f"{indent}(-v names the rows and their numbers)")
    return lines


def note_lines(report: CompareReport) -> list[str]:
    """What the report left out and how to see it, wrapped as the warnings are."""
    return [line for note in report.notes for line in _wrap(note, "")]


WRAP = 120   # a text report's warnings wrap here, continued under their first word


def _wrap(text: str, indent: str) -> list[str]:
    """A warning in lines of WRAP columns; markdown's list items ("- ") stay one line."""
    if indent.strip():
        return [indent + text]
    return textwrap.wrap(text, WRAP, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_long_words=False, break_on_hyphens=False) or [indent]


#: A row's next step is said in full for up to this many rows (else counted)
NEXT_STEP, NEXT_STEPS = "runs-to-decide", 3

KIND_TITLES = {
    "too-few-samples": "fewer samples than advised (5, 10 to see small changes) or than the test needs",
    "single-sample": "a single sample: no spread, no test",
    "unequal-n": "base and candidate of different sizes",
    "non-finite": "non-finite values left out",
    "nonpositive-hmean": "a value <= 0 under a harmonic mean",
    "nonpositive-gmean": "a value <= 0 under a geometric mean",
    "nonpositive-log": "a value <= 0: no test on log values",
    "nonpositive-centre": "a centre <= 0: no change in %",
    "zero-spread": "all values identical (timer resolution? a cached result?)",
    "high-cov": "CoV above 10%: the machine or the benchmark is noisy",
    "outliers": "values with a modified z-score above 3.5",
    "bimodal": "values in two groups",
    "trend": "values drifting along the repetitions",
    "opposite-estimate": "the change and the test's interval point opposite ways",
    "coarse-resolution": "values in steps coarser than the change: not judged",
    "unstable-run": "a side drifts or splits in two, enough to move the row across its verdict: not judged",
    "failed": "failed samples left out",
    "two-groups": "separate runs with values in two groups, enough to move the row across its verdict: not judged",
    "unequal-load": "separate runs beside another load not shown equal on both sides: not judged",
    "beyond-host-prior": "separate runs whose own replicates vary beyond the host prior: not judged",
    "run-variance": "separate runs whose run-to-run variance is unknown: not judged",
    NEXT_STEP: "undecided separate runs, each with the next step that would decide it",
}
# a kind that blocks a row says what its sides' own warnings of these kinds said, once
_SAID_BY = {"two-groups": ("bimodal",), "unstable-run": ("bimodal", "trend")}


def row_kinds(row: Row) -> list[str]:
    """The kinds of warning a row carries, on any side, each once."""
    kinds: list[str] = []
    sides = [row.base, *(cell.side for cell in row.cells)]
    found = [w.kind for side in sides if side is not None for w in side.warnings]
    found += [w.kind for cell in row.cells for w in cell.warnings]
    found += ["failed" for side in sides if side is not None and side.failures]
    said = {other for kind in found for other in _SAID_BY.get(kind, ())}
    for kind in found:
        if kind not in kinds and kind not in said:
            kinds.append(kind)
    return kinds


def block_op(block: Block, row: Row) -> str:
    """A row's label inside its block: the row parameter's value, or the parameters the
    block does not hoist."""
    return op_name(block.row_params(row), block.param_names)


def block_title(block: Block, labels: Sequence[str] = ()) -> str:
    """The block's name: its layout's title, else the benchmark and the hoisted parameters;
    the benchmark is left out when it is a side's own label (the commands of one run
    compared with each other: their names head the columns, not the baseline's every row)."""
    if block.title:
        return block.title
    name = [] if block.benchmark in labels else [block.benchmark]
    return " ".join([*name, *(f"{k}={format_value(v)}" for k, v in block.hoisted)])


def metric_centres(blocks: Sequence[Block]) -> dict[tuple[str, str], list[float]]:
    """Every side's centre of each (metric, unit) across the report's blocks, so that every
    block of one metric is scaled alike (one unit per metric: hackbench's blocks all in s)."""
    out: dict[tuple[str, str], list[float]] = {}
    for block in blocks:
        out.setdefault((block.metric, block.unit), []).extend(
            abs(s.centre) for row in block.rows for s in row.sides if s is not None and finite(s.centre))
    return out


def metric_scales(blocks: Sequence[Block]) -> dict[tuple[str, str], tuple[float, str]]:
    """The divisor and unit of each (metric, unit) of a report (`units.metric_scale` of its
    centres across every block): every cell and chart of one metric, in every format, alike."""
    return {key: metric_scale(centres, key[1]) for key, centres in metric_centres(blocks).items()}


def titled(title: str, metric: str) -> str:
    """``title: metric``, or the metric alone when there is no title."""
    return f"{title}: {metric}" if title else metric


@dataclass(frozen=True)
class Stat:
    """One summary row kind of the mmtests table: ``mean``, ``min``, ``best`` (with pct) ..."""

    key: str
    pct: int = 0


STAT_ORDER = ("min", "mean", "median", "stddev", "coeffvar", "max", "best")
_MEAN_ALIASES = {"amean", "hmean", "gmean", "mean"}


def parse_rows(rows: Sequence[str]) -> tuple[list[Stat], bool]:
    """``--rows`` names (mmtests' Min, Amean, Stddev, CoeffVar, Max, BAmean-95 ...) in
    mmtests' order, and whether ``all`` was asked (list unchanged rows too)."""
    stats: list[Stat] = []
    show_all = False
    for raw in rows:
        name = raw.strip().lower()
        if not name:
            continue
        if name == "all":
            show_all = True
            continue
        if name in _MEAN_ALIASES:
            stat = Stat("mean")
        elif name in ("min", "max", "stddev", "coeffvar", "median"):
            stat = Stat(name)
        else:
            prefix, _, pct = name.partition("-")
            best = prefix in ("bamean", "bhmean", "bgmean", "bmean") and pct.isascii() and pct.isdigit()
            if not best or not 0 < int(pct) <= 100:
                raise UsageError(f"unknown row {raw!r}: choose from amean (or hmean: the metric's mean), "
                                 "min, max, stddev, coeffvar, median, bamean-N (best N%), all")
            stat = Stat("best", int(pct))
        if stat not in stats:
            stats.append(stat)
    stats.sort(key=lambda s: (STAT_ORDER.index(s.key), s.pct))
    return stats, show_all


def short_commit(run: RunInfo, width: int = 12) -> str:
    return (run.commit or "")[:width]


def describe_run(run: RunInfo) -> str:
    """``label (commit, describe)``, the parts that are known."""
    extra = [x for x in (short_commit(run), run.commit_describe) if x]
    return run.label + (f" ({', '.join(extra)})" if extra else "")
