"""The report of ``perflab compare``: a baseline against candidates, row by row.

Analysis (``perflab.analysis.compare``) builds it; every renderer of render/ lays it out
and computes nothing. A row is one (benchmark, parameter point, metric); a cell is one
candidate on that row. Numbers that cannot be computed are NaN, never missing.

Sign conventions carried here:
  ``Change.pct``     oriented, positive = better (mmtests, speedup, markdown, json, csv)
  ``Change.raw_pct`` unoriented, 100·(new/base − 1) of the same centres (lkp, benchstat)
Both come from one estimator (the ratio of the metric's centres), so every format shows
the same magnitude of change.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from perflab.model.params import Params, Value, point_text
from perflab.model.records import Direction, MeanKind, RunInfo
from perflab.model.report.outcomes import Interval, RuleOutcome
from perflab.model.report.profile import ProfileRow
from perflab.model.verdicts import StatWarning, Verdict

# mmtests' extra summary rows whose change analysis computes (Stddev/CoeffVar: lower is better)
STAT_KEYS = ("min", "mean", "median", "stddev", "coeffvar", "max", "best")


@dataclass(frozen=True, kw_only=True)
class BenchstatSide:
    """A side as benchstat summarises it: the median and its order-statistic interval
    (±∞ when n is too small for the level), with benchstat's own warnings."""

    center: float
    low: float
    high: float
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class BenchstatChange:
    """A candidate against the baseline as benchstat compares them: the Mann-Whitney U
    p-value at its alpha, the change of the medians in %, and its warnings."""

    p: float
    n1: int
    n2: int
    alpha: float
    delta_pct: float            # NaN when the baseline's median is 0
    warnings: tuple[str, ...] = ()

    @property
    def significant(self) -> bool:
        return self.p <= self.alpha


@dataclass(frozen=True, kw_only=True)
class SideSummary:
    """One side of a row: its raw samples and every statistic any format shows of them."""

    n: int
    failures: int
    values: tuple[float, ...]          # the ok samples in repetition order
    mean_kind: MeanKind
    centre: float                      # the metric's mean (amean for times, hmean for rates)
    median: float
    median_ci: Interval                # distribution-free (benchstat's ±)
    stddev: float                      # sample stddev (n − 1)
    cov: float                         # %, 100·stddev/amean (mmtests CoeffVar)
    population_cov: float              # %, 100·population stddev/amean (lkp's ±N%)
    min: float
    max: float
    best: tuple[tuple[int, float], ...] = ()   # (N, mean of the best N%) for mmtests BAmean-N
    warnings: tuple[StatWarning, ...] = ()
    benchstat: BenchstatSide | None = None     # computed for --format benchstat only

    def statistic(self, key: str, pct: int = 0) -> float:
        """The value of an mmtests summary row (see STAT_KEYS) on this side."""
        if key == "mean":
            return self.centre
        if key == "coeffvar":
            return self.cov
        if key == "best":
            return dict(self.best).get(pct, math.nan)
        return float(getattr(self, key))


@dataclass(frozen=True, kw_only=True)
class RunToRunUsed:
    """How a row of separate runs got its run-to-run variance (stats.separate_runs)."""

    source: str                # e.g. "own 3 replicates + host prior"
    d0: float                  # the prior's degrees of freedom
    d: float                   # the row's own replicates' (0: none)
    runs_needed: int | None    # replicate runs a side that would decide a change of ``size``
    size: float                # relative: the row's own change, at least the noise floor
    spread_pct: float          # the posterior run-to-run spread it tested with (sd of logs, %)


@dataclass(frozen=True, kw_only=True)
class Change:
    """One candidate against the baseline on one row: estimate, interval, test, verdict."""

    pct: float                 # oriented change of the centres, positive = better
    raw_pct: float             # the same change unoriented: 100·(new/base − 1)
    ci: Interval               # of ``pct``, same orientation
    method: str                # key: welch-log, mann-whitney, mmtests, lkp
    test: str                  # its name, e.g. "Welch t-test on log values"
    interval: str              # how the interval was computed
    p_value: float             # NaN for rules and where no test is possible
    q_value: float             # Benjamini-Hochberg adjusted across the report
    min_p: float               # the smallest p the test can give at these sample sizes
    noise_floor: float         # relative, 0.01 = 1%
    verdict: Verdict
    rule: RuleOutcome | None = None
    # oriented % change of mmtests' other summary rows, keyed (stat, N) as in STAT_KEYS
    stat_changes: tuple[tuple[tuple[str, int], float], ...] = ()
    run_to_run: RunToRunUsed | None = None   # separate runs with a prior: which variance it used
    blocked: str = ""          # why the data could not carry a mark (then undecided whatever the test said)
    unsettled: float = 0.0     # % the change could move by with its runs' drift or two groups

    @property
    def significant(self) -> bool:
        return self.verdict.significant

    def rules_out(self, limit_pct: float, q: float) -> bool:
        """The row shows no regression of ``limit_pct`` % or more: its data carry a mark, its
        test can reach level ``q``, and its interval, moved by what its runs' drift or two
        groups could make, clears the limit (what `gate` and `verdict` pass)."""
        return not self.blocked and self.min_p < q and self.ci.known and self.ci.low - self.unsettled > -limit_pct

    def stat_change(self, key: str, pct: int = 0) -> float:
        if key == "mean":
            return self.pct
        return dict(self.stat_changes).get((key, pct), math.nan)


@dataclass(frozen=True, kw_only=True)
class Cell:
    """A candidate on a row: its side (None: no samples there) and the change (None: no pair)."""

    label: str
    side: SideSummary | None
    change: Change | None
    warnings: tuple[StatWarning, ...] = ()   # about the pair (side PAIR)
    benchstat: BenchstatChange | None = None   # computed for --format benchstat only
    benchmark: str = ""        # the candidate's own benchmark where it differs from the row's (another command)

    def title(self, row: Row) -> str:
        """The row's title naming this candidate's own benchmark (the side that changed)."""
        return row.title if not self.benchmark else row.title.replace(row.benchmark, self.benchmark, 1)


@dataclass(frozen=True, kw_only=True)
class Row:
    benchmark: str
    params: Params
    metric: str
    unit: str
    direction: Direction
    mean_kind: MeanKind
    noise_floor: float
    base: SideSummary | None
    cells: tuple[Cell, ...]

    @property
    def point(self) -> str:
        return point_text(self.params)

    @property
    def sides(self) -> tuple[SideSummary | None, ...]:
        """Every side, baseline first; None where a side has no samples."""
        return (self.base, *(c.side for c in self.cells))

    @property
    def title(self) -> str:
        return f"{self.benchmark} {self.point} {self.metric}" if self.params else f"{self.benchmark} {self.metric}"


@dataclass(frozen=True, kw_only=True)
class Geomean:
    """benchstat's geomean row of a block: of each side's medians and of each candidate's
    ratios of medians (benchstat's summarizeCol)."""

    medians: tuple[float, ...]             # per side, NaN where undefined
    changes: tuple[float, ...]             # per candidate, unoriented %, NaN where undefined
    warnings: tuple[tuple[str, ...], ...]  # per side, why a figure is missing or doubtful


@dataclass(frozen=True, kw_only=True)
class Layout:
    """How a benchmark's rows are laid out: a title template over its parameters (mmtests'
    ``hackbench-{mode}-{ipc}s``) and the parameter that labels the rows. Set by a workload
    or a suite; every field may be None (then the layout is chosen from the data)."""

    title: str | None = None
    row: str | None = None
    metrics: tuple[str, ...] = ()   # the metrics in report order, the primary first


@dataclass(frozen=True, kw_only=True)
class Block:
    """The rows of one benchmark and metric that share every parameter but the row one,
    in report order. Parameters constant across the block are hoisted into its title
    instead of being repeated on every row."""

    benchmark: str
    metric: str
    unit: str
    direction: Direction
    mean_kind: MeanKind
    rows: tuple[Row, ...]
    geomean: Geomean | None = None             # only for blocks of more than one row
    hoisted: tuple[tuple[str, Value], ...] = ()  # parameters with one value across the block
    row_param: str | None = None               # the parameter that labels the rows
    title: str | None = None                   # from a layout's template, else None

    @property
    def param_names(self) -> list[str]:
        """The parameters that vary inside the block (the hoisted ones left out)."""
        hoisted = {name for name, _ in self.hoisted}
        return [name for name in dict.fromkeys(name for row in self.rows for name in row.params)
                if name not in hoisted]

    def row_params(self, row: Row) -> Params:
        """A row's parameters less the hoisted ones."""
        hoisted = {name for name, _ in self.hoisted}
        return {k: v for k, v in row.params.items() if k not in hoisted}


@dataclass(frozen=True, kw_only=True)
class ReportWarning:
    """A warning about the report as a whole (different machines, a missing point ...)."""

    message: str

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, kw_only=True)
class CompareReport:
    runs: tuple[RunInfo, ...]        # baseline first
    blocks: tuple[Block, ...]
    method: str                      # key: welch-log, mann-whitney, mmtests, lkp
    method_name: str
    q: float                         # FDR level
    confidence: float
    tested: int                      # comparisons sharing the FDR budget (not the rules')
    noise_floors: tuple[float, ...]  # the distinct floors of the compared rows
    warnings: tuple[str, ...] = ()
    profile: ProfileReport | None = None   # with --profile: profile and counter deltas
    notes: tuple[str, ...] = ()      # what the report left out and how to see it (not warnings)

    @property
    def labels(self) -> list[str]:
        return [r.label for r in self.runs]

    @property
    def rows(self) -> list[Row]:
        return [row for block in self.blocks for row in block.rows]

    @property
    def is_rule(self) -> bool:
        return self.method in ("mmtests", "lkp")

    def changes(self) -> Iterator[tuple[Row, int, Change]]:
        """(row, candidate index, change) of every compared cell."""
        for row in self.rows:
            for i, cell in enumerate(row.cells):
                if cell.change is not None:
                    yield row, i, cell.change


@dataclass(frozen=True, kw_only=True)
class ProfileReport:
    """The profile rows of a comparison, largest change first, and the counters that moved."""

    rows: tuple[ProfileRow, ...]
    method: str
    method_name: str
    q: float
    noise_floor: float                   # percentage points
    tested: int                          # rows x candidates under the FDR budget
    rule: str                            # one sentence: how a row is called changed
    counters: CompareReport | None = None   # monitor metrics (perf-stat.*, vmstat.* ...)
    warnings: tuple[str, ...] = ()
