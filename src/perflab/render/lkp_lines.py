"""The kernel test robot's stat lines (lkp-tests), shared by ``compare --format lkp`` and the
profile and counter table under the other formats.

    183535            -2.9%     178269        will-it-scale.per_thread_ops

lkp's columns: value 10, ``±N%`` 6, %change 10 + ``%``, value 11, ``±N%`` 6, two spaces, the
stat's name. One number format per line, chosen by its largest value, so ``169473`` never
stands beside ``77068.33``: whole numbers from 100000 (as lkp prints them), else two
decimals, or four significant digits for a line of values all below 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perflab.model.params import format_value
from perflab.model.records import RunInfo
from perflab.model.report.compare import Row
from perflab.model.report.profile import ProfileRow
from perflab.render.compare_common import finite

RULE = "=" * 89
BASE_WIDTH = 16
CANDIDATE_WIDTH = 27


def lkp_format(values: Sequence[float]) -> str:
    """The one format of a line's values: lkp's %.2f, whole numbers from 100000, four
    significant digits when every value is below 1."""
    shown = [abs(v) for v in values if finite(v)]
    largest = max(shown, default=0.0)
    if largest >= 1e5:
        return ".0f"
    if largest >= 1 or largest == 0:
        return ".2f"
    return ".4g"


def lkp_number(value: float, fmt: str | None = None) -> str:
    """``value`` in ``fmt`` (by default the format it would have alone)."""
    if not finite(value):
        return "-"
    return format(value, fmt or lkp_format([value]))


def _stddev(pct: float) -> str:
    return f" ±{round(pct):3d}%" if finite(pct) and pct > 2 else ""


def stat_line(name: str, sides: Sequence[tuple[float, float] | None], changes: Sequence[str]) -> str:
    """``base ±N%  %change  new ±N% ...  name``: each side's (value, stddev %) or None, and
    each candidate's change already written (``-2.9%``, ``+1.5`` points, or "")."""
    base = sides[0]
    fmt = lkp_format([side[0] for side in sides if side is not None])
    parts = [f"{lkp_number(base[0], fmt) if base is not None else '':>10}{_stddev(base[1]) if base else '':<6}"]
    for side, change in zip(sides[1:], changes):
        unit = "%" if change.endswith("%") else " "
        shown = lkp_number(side[0], fmt) if side is not None else ""
        parts.append(f"{change.removesuffix('%'):>10}{unit}{shown:>11}{_stddev(side[1]) if side else '':<6}")
    return "".join(parts) + f"  {name}"


def row_line(row: Row, name: str) -> str:
    """A metric row: centres, lkp's ±N%, and each candidate's unoriented %change."""
    sides = [None if s is None else (s.centre, s.population_cov) for s in row.sides]
    changes = ["" if c.change is None or not finite(c.change.raw_pct) else f"{c.change.raw_pct:+.1f}%"
               for c in row.cells]
    return stat_line(name, sides, changes)


def profile_line(item: ProfileRow) -> str:
    """A profile row: mean shares, ±N% of each mean, and the change in percentage points."""
    sides = [None if s is None else (s.mean, 100.0 * s.stddev / s.mean if s.mean > 0 else float("nan"))
             for s in item.sides]
    changes = ["" if d is None or not finite(d.change_points) else f"{d.change_points:+.1f}" for d in item.deltas]
    return stat_line(item.name, sides, changes)


def header_lines(runs: Sequence[RunInfo]) -> list[str]:
    names = [((r.commit or r.label)[:BASE_WIDTH if i == 0 else CANDIDATE_WIDTH]) for i, r in enumerate(runs)]
    widths = [BASE_WIDTH] + [CANDIDATE_WIDTH] * (len(runs) - 1)
    return [
        " ".join(n.ljust(w) for n, w in zip(names, widths)),
        " ".join("-" * w for w in widths),
        "         %stddev" + "     %change         %stddev" * (len(runs) - 1),
        "             \\  " + "        |                \\  " * (len(runs) - 1),
    ]


def job_lines(benchmark: str, params: dict[str, Any]) -> list[str]:
    keys = sorted(params)
    return [RULE, "/".join([*keys, "testcase"]) + ":",
            "  " + "/".join([*(format_value(params[k]) for k in keys), benchmark])]
