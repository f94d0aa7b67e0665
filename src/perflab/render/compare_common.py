"""Pieces shared by the report formats of ``perflab compare``.

Render sits below analysis, so the comparison is taken duck-typed (see
``perflab.render.compare`` for the attributes read). Everything here is plain text
work: grouping rows into blocks, naming points, collecting warnings and stating the
significance rule in one sentence.
"""

from __future__ import annotations

from perflab.model.verdicts import WarningSide

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from perflab.model.errors import UsageError
from perflab.model.params import format_value
from perflab.model.records import Direction
from perflab.stats import summarize

MEAN_NAMES = {"amean": "Amean", "hmean": "Hmean", "gmean": "Gmean"}


def finite(value: float | None) -> bool:
    return value is not None and isinstance(value, (int, float)) and math.isfinite(value)


def kind(value: Any) -> str:
    """An enum's text value, or the text itself."""
    return getattr(value, "value", value)


@dataclass
class Block:
    """The rows of one benchmark and metric, in report order."""

    benchmark: str
    metric: str
    unit: str
    rows: list[Any]

    @property
    def direction(self) -> Direction:
        return self.rows[0].info.direction

    @property
    def param_names(self) -> list[str]:
        return list(dict.fromkeys(name for row in self.rows for name in row.params))

    def op(self, row: Any) -> str:
        """mmtests' operation name: the value of a lone parameter, else k=v,k=v."""
        return op_name(row.params, self.param_names)


def op_name(params: dict[str, Any], names: Sequence[str]) -> str:
    if not params:
        return ""
    if len(names) == 1 and len(params) == 1:
        return format_value(next(iter(params.values())))
    return ",".join(f"{k}={format_value(v)}" for k, v in params.items())


def blocks(comparison: Any) -> list[Block]:
    """Rows grouped by (benchmark, metric), in the order they first appear."""
    found: dict[tuple[str, str], Block] = {}
    for row in comparison.rows:
        key = (row.benchmark, row.metric)
        if key not in found:
            found[key] = Block(row.benchmark, row.metric, row.unit, [])
        found[key].rows.append(row)
    return list(found.values())


def summaries(row: Any) -> list[Any]:
    """The Summary of every side of a row, baseline first; None where a side has no data."""
    out = [row.base]
    for cell in row.cells:
        if cell.difference is not None:
            out.append(cell.difference.new)
        elif cell.values is not None:
            out.append(summarize(cell.values, row.info.mean))
        else:
            out.append(None)
    return out


def values(row: Any) -> list[Any]:
    """The raw values of every side, baseline first; None where a side has no data."""
    return [row.base_values, *(cell.values for cell in row.cells)]


def differences(comparison: Any) -> list[Any]:
    return [cell.difference for row in comparison.rows for cell in row.cells
            if cell.difference is not None]


def tested(comparison: Any) -> int:
    """How many comparisons share the FDR budget (those decided by a test, not a rule)."""
    return sum(1 for d in differences(comparison) if getattr(d, "rule", None) is None)


def is_rule(comparison: Any) -> bool:
    return comparison.method in ("mmtests", "lkp")


def noise_floors(comparison: Any) -> str:
    floors = sorted({d.noise_floor for d in differences(comparison)})
    if not floors:
        return ""
    return "/".join(f"{100 * f:g}%" for f in floors)


def significance_rule(comparison: Any) -> str:
    """One sentence: which test, which FDR control, which noise floor decides a mark."""
    if is_rule(comparison):
        return f"{comparison.method_name}, no FDR control (the rule decides alone)"
    text = (f"{comparison.method_name}, Benjamini-Hochberg FDR {100 * comparison.q:g}% "
            f"over {tested(comparison)} comparisons")
    floor = noise_floors(comparison)
    return text + (f", change beyond the {floor} noise floor" if floor else "")


def row_warnings(row: Any, labels: Sequence[str]) -> list[str]:
    """Every warning of one row, each naming its side, duplicates (the base, once per
    candidate) removed: ``base: ...``, ``patched: ...``, ``patched vs base: ...``."""
    out: list[str] = []

    def add(text: str) -> None:
        if text not in out:
            out.append(text)

    if row.base is not None:
        for w in row.base.warnings:
            add(f"{labels[0]}: {w.message}")
    if row.base_failures:
        add(f"{labels[0]}: {row.base_failures} failed sample(s) left out")
    for label, cell, summary in zip(labels[1:], row.cells, summaries(row)[1:]):
        if summary is not None:
            for w in summary.warnings:
                add(f"{label}: {w.message}")
        if cell.failures:
            add(f"{label}: {cell.failures} failed sample(s) left out")
        if cell.difference is not None:
            for w in cell.difference.warnings:
                if w.side is WarningSide.PAIR:
                    add(f"{label} vs {labels[0]}: {w.message}")
    return out


def row_title(row: Any) -> str:
    return f"{row.benchmark} {row.point} {row.metric}" if row.params else f"{row.benchmark} {row.metric}"


def warning_lines(comparison: Any, indent: str = "  ", rows: Sequence[Any] | None = None) -> list[str]:
    """The report's warnings, then every row's (or those of ``rows``), one line each."""
    lines = [f"{indent}{w}" for w in comparison.warnings]
    for row in comparison.rows if rows is None else rows:
        found = row_warnings(row, comparison.labels)
        if found:
            lines.append(f"{indent}{row_title(row)}: " + "; ".join(found))
    return lines


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
            if prefix not in ("bamean", "bhmean", "bgmean", "bmean") or not pct.isdigit() or not 0 < int(pct) <= 100:
                raise UsageError(f"unknown row {raw!r}: choose from amean (or hmean: the metric's mean), "
                                 "min, max, stddev, coeffvar, median, bamean-N (best N%), all")
            stat = Stat("best", int(pct))
        if stat not in stats:
            stats.append(stat)
    stats.sort(key=lambda s: (STAT_ORDER.index(s.key), s.pct))
    return stats, show_all


def short_commit(run: Any, width: int = 12) -> str:
    return (run.commit or "")[:width]


def describe_run(run: Any) -> str:
    """``label (commit, describe)``, the parts that are known."""
    extra = [x for x in (short_commit(run), run.commit_describe) if x]
    return run.label + (f" ({', '.join(extra)})" if extra else "")
