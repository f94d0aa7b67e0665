"""The one next step that would decide an undecided row of two separate runs, with its cost.

Three ways can decide such a row, each costed from what the two runs took on this host:

  interleave   both commands in one run (`perflab run 'A' 'B'`): no run-to-run variance
               stands between them, so the spread inside the runs decides; n a side from
               the normal power formula on log values (80% power at the report's level),
               at n (seconds a sample of A + of B). Only for two runs of different commands
               recorded by `perflab run` (two builds of one command cannot share a run).
  more runs    K more runs of each (`stats.host_prior.runs_to_decide`: the runs a side that
               would decide the change at the posterior run-to-run spread), at K (run A +
               run B).
  calibrate    `perflab calibrate -k 5 ...` once, where the row leans on perflab's default
               prior (the host has not been taught its spread) and 5 replicates (4 more
               df) at the spread now assumed would decide it with one run a side; at 5
               runs of the base.

The row says the cheapest that applies, in one line (a `runs-to-decide` warning).
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from perflab.model.records import RunInfo
from perflab.model.report.compare import Cell, Change, CompareReport, Row, RunToRunUsed
from perflab.model.verdicts import StatWarning, WarningSide
from perflab.stats.distributions import norm_ppf
from perflab.stats.host_prior import runs_to_decide
from perflab.stats.warnings import RUNS_TO_DECIDE

CALIBRATE_RUNS = 5
POWER = 0.8


@dataclass(frozen=True)
class Step:
    what: str       # the step in words, with its command
    cost_s: float   # about how long it takes on this host (NaN: unknown)


def with_next_steps(report: CompareReport, runs: Sequence[RunInfo]) -> CompareReport:
    """``report`` (each side one run) with each undecided separate-runs row's
    `runs-to-decide` warning saying its cheapest next step."""
    blocks = tuple(replace(block, rows=tuple(_row(row, runs) for row in block.rows)) for block in report.blocks)
    return replace(report, blocks=blocks)


def _row(row: Row, runs: Sequence[RunInfo]) -> Row:
    cells = []
    for index, cell in enumerate(row.cells):
        change = cell.change
        if change is None or change.run_to_run is None or not any(w.kind == RUNS_TO_DECIDE for w in cell.warnings):
            cells.append(cell)
            continue
        step = next_step(row, cell, change, runs[0], runs[index + 1])
        warnings = tuple(StatWarning(RUNS_TO_DECIDE, f"undecided: {step}", WarningSide.PAIR)
                         if w.kind == RUNS_TO_DECIDE else w for w in cell.warnings)
        cells.append(replace(cell, warnings=warnings))
    return replace(row, cells=tuple(cells))


def next_step(row: Row, cell: Cell, change: Change, base: RunInfo, new: RunInfo) -> str:
    """The cheapest step that would decide ``cell`` against the base, in one line."""
    used = change.run_to_run
    assert used is not None
    size = f"{100 * used.size:.3g}%"
    steps = [s for s in (_interleave(row, cell, used.size, change.ci.confidence, base, new),
                         _more_runs(used.runs_needed, base, new), _calibrate(used, base)) if s is not None]
    if not steps:
        return (f"more than 1000 runs a side would decide {size} at this host's run-to-run spread: "
                "measure both in one run (perflab run 'A' 'B', or perflab ab)")
    best = min(steps, key=lambda s: s.cost_s if math.isfinite(s.cost_s) else math.inf)
    cost = f" (about {_duration(best.cost_s)})" if math.isfinite(best.cost_s) else ""
    return f"next step, the cheapest on this host to decide {size}: {best.what}{cost}"


def _command(run: RunInfo) -> str | None:
    """The command line of a run of one command recorded by `perflab run`; else None."""
    request = run.request
    if request.imported is not None or len(request.plans) != 1:
        return None
    workload = request.plans[0].workload
    if workload.get("workload") != "command":
        return None
    if workload.get("shell"):
        return str(workload["shell"])
    argv = workload.get("argv")
    return shlex.join(str(word) for word in argv) if isinstance(argv, list) and argv else None


def _seconds(run: RunInfo) -> float:
    seconds = run.finished_at - run.started_at if run.finished_at is not None else math.nan
    return seconds if seconds > 0 else math.nan   # unknown (an import, a run still going)


def _interleave(row: Row, cell: Cell, size: float, confidence: float, base: RunInfo, new: RunInfo) -> Step | None:
    """Both commands in one run, n a side from their spread inside a run."""
    a, b = _command(base), _command(new)
    if a is None or b is None or a == b or row.base is None or cell.side is None:
        return None
    variances = [_log_variance(side.values) for side in (row.base, cell.side)]
    effect = abs(math.log1p(size))
    if not all(math.isfinite(v) for v in variances) or effect == 0:
        return None
    z = norm_ppf(0.5 + confidence / 2) + norm_ppf(POWER)
    n = max(10, math.ceil(z * z * sum(variances) / effect**2))
    per_sample = _seconds(base) / row.base.n + _seconds(new) / cell.side.n
    command = f"perflab run -n {n} {shlex.quote(a)} {shlex.quote(b)}"
    return Step(f"measure both in one run, interleaved: `{command}`", n * per_sample)


def _log_variance(values: Sequence[float]) -> float:
    x = np.asarray(values, dtype=float)
    x = np.log(x[np.isfinite(x) & (x > 0)])
    return float(x.var(ddof=1)) if x.size >= 2 else math.nan


def _more_runs(runs_needed: int | None, base: RunInfo, new: RunInfo) -> Step | None:
    if runs_needed is None:
        return None
    more = max(runs_needed - 1, 1)
    return Step(f"record {more} more run{'s' * (more > 1)} of each", more * (_seconds(base) + _seconds(new)))


def _calibrate(used: RunToRunUsed, base: RunInfo) -> Step | None:
    """`perflab calibrate` where the row leans on perflab's default prior (the host untaught)
    and its replicates' degrees of freedom would decide the row at the spread now assumed."""
    line = base.request.identity.command_line
    if "default prior" not in used.source or not line or "run" not in line:
        return None
    variance = (used.spread_pct / 100) ** 2
    if not math.isfinite(variance) or runs_to_decide(variance, used.d0 + CALIBRATE_RUNS - 1, used.size) != 1:
        return None
    words = list(line[line.index("run") + 1:])
    end = words.index("--") if "--" in words else len(words)
    options, rest = words[:end], words[end:]
    for at in reversed(range(len(options))):   # the label is the run's, not the calibration's
        if options[at] == "--label" and at + 1 < len(options):
            del options[at:at + 2]
        elif options[at].startswith("--label="):
            del options[at]
    words = options + rest
    command = shlex.join(["perflab", "calibrate", "-k", str(CALIBRATE_RUNS), *words])
    return Step(f"teach this host its run-to-run spread once: `{command}`, then compare again",
                CALIBRATE_RUNS * _seconds(base))


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
