"""`perflab compare --fail-on regression`: the gate's three answers on a comparison report.

With T the smallest regression that fails the gate (``--threshold``, never below a row's
noise floor, where regressions start being called):

  failed     a row's regression is significant (Benjamini-Hochberg across the report)
             and at least ``--threshold`` large;
  passed     every row is cleared: its verdict is "no change" or "improvement", or its
             interval rules out a regression of T (its lower end, + = better, above -T
             by more than its runs' drift or two groups could move it) from a test that
             could reach the level and data that could carry a mark;
  undecided  anything else: the rows the gate could not judge, each with what would
             decide it. A gate that passes a change it could not judge is the worst
             answer it can give, so this is its own exit (125), as in `verdict` and `ab`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perflab.analysis.compare import regressions
from perflab.model.report.compare import Change, CompareReport, Row
from perflab.model.verdicts import Verdict
from perflab.stats.warnings import RUNS_TO_DECIDE


@dataclass(frozen=True)
class Open:
    """A row the gate could not judge, and what would decide it."""

    title: str        # the row and the candidate it is about
    pct: float        # its change, + = better
    missing: str


@dataclass(frozen=True)
class GateResult:
    failed: list[tuple[Row, int, Change]]
    undecided: list[Open]
    compared: int


def gate(report: CompareReport, threshold_pct: float) -> GateResult:
    """The gate's answer on ``report`` for regressions of ``threshold_pct`` % or more."""
    failed = regressions(report, threshold_pct)
    undecided = []
    for row, index, change in report.changes():
        limit = max(threshold_pct, 100.0 * change.noise_floor)
        if not _cleared(change, limit, report.q):
            undecided.append(Open(f"{row.title} ({report.labels[index + 1]})", change.pct,
                                  _missing(row, index, change, limit, report.q)))
    return GateResult(failed, undecided, sum(1 for _ in report.changes()))


def _cleared(change: Change, limit_pct: float, q: float) -> bool:
    """The row rules out a regression of ``limit_pct`` % (or the gate fails on it anyway)."""
    if change.verdict in (Verdict.NO_CHANGE, Verdict.IMPROVEMENT, Verdict.REGRESSION):
        return change.verdict is not Verdict.REGRESSION or -change.pct >= limit_pct or (
            change.ci.known and change.ci.low - change.unsettled > -limit_pct)
    return change.rules_out(limit_pct, q)


def _missing(row: Row, index: int, change: Change, limit_pct: float, q: float) -> str:
    """What would decide the row: why its data could not be judged, the next step a row of
    separate runs names, or what its interval leaves open."""
    said = [w.message.removeprefix("undecided: ") for w in row.cells[index].warnings if w.kind == RUNS_TO_DECIDE]
    if change.blocked:
        return change.blocked + (f"; {said[0]}" if said else "")
    clears = change.ci.known and change.ci.low > -limit_pct
    if clears and change.min_p < q and change.unsettled > 0:   # the interval clears it; its runs' drift or split not
        moved = f"{change.unsettled:.2g}%" if math.isfinite(change.unsettled) else "unmeasured shift"
        return (f"its {100 * change.ci.confidence:g}% interval [{change.ci.low:+.2f}%, {change.ci.high:+.2f}%] "
                f"moved by the {moved} its runs' drift or two groups could make does not rule out "
                f"a regression of {limit_pct:g}%: record both sides again, interleaved in one run "
                "(perflab run 'A' 'B')")
    if said:
        return said[0]
    if not change.ci.known:
        return "no confidence interval (too few samples, or values <= 0): record more samples"
    if clears:
        return (f"its test cannot reach the level with these samples (its smallest p is {change.min_p:.2g}, "
                f"above {q:g}): record more samples of both sides")
    return (f"its {100 * change.ci.confidence:g}% interval [{change.ci.low:+.2f}%, {change.ci.high:+.2f}%] "
            f"does not rule out a regression of {limit_pct:g}%: record more samples of both sides")
