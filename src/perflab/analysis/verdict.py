"""Judge one run against a known-good run, three ways (``perflab verdict``).

Built on the comparison of the two runs (``analysis.compare``), with T the smallest
regression that matters (``--threshold``, by default each metric's noise floor):

  bad        a row's regression is significant (Benjamini-Hochberg across the rows) and
             at least T large;
  good       every row's confidence interval rules out a regression of T or more (its
             lower end, positive = better, lies above −T): a non-inferiority decision;
  undecided  anything else, with what is missing: "no regression found" from a test that
             could not decide is not evidence of a good commit.
"""

from __future__ import annotations

import math

from perflab.analysis.compare import Filters, compare_runs
from perflab.model.errors import UsageError
from perflab.model.records import RunInfo
from perflab.model.report.compare import Change, Row
from perflab.model.report.verdict import DEFAULT_VERDICT_METHOD, Outcome, RunVerdict
from perflab.model.verdicts import Verdict
from perflab.stats.separate_runs import BEYOND_PRIOR, TWO_GROUPS, UNEQUAL_LOAD
from perflab.store import Store

Q = 0.05
REFUSALS = (TWO_GROUPS, UNEQUAL_LOAD, BEYOND_PRIOR)   # why a row of separate runs is not judged


def judge(store: Store, base: RunInfo, candidate: RunInfo, *, metrics: set[str],
          method: str = DEFAULT_VERDICT_METHOD, noise_floor: float | None = None,
          threshold: float | None = None) -> RunVerdict:
    """Run ``candidate`` against the known-good ``base`` on ``metrics`` (empty: ``time`` if
    the base has it, else every metric). ``threshold`` (relative, 0.1 = 10%) is T above;
    None takes each row's noise floor."""
    chosen = set(metrics)
    base_metrics = {g.metric for g in store.series.value_groups(base.id)}
    if not chosen:
        chosen = {"time"} if "time" in base_metrics else set()
    unknown = chosen - base_metrics - {g.metric for g in store.series.value_groups(candidate.id)}
    if unknown:   # a typo is a usage error (2), not git bisect's skip (125)
        raise UsageError(f"neither run has a metric {', '.join(sorted(unknown))} "
                         f"(run {base.id} has: {', '.join(sorted(base_metrics)) or 'none'})")
    what = f" of {', '.join(sorted(chosen))}" if chosen else ""
    if not any(g.values.size for g in store.series.value_groups(candidate.id, None, chosen or None)):
        return RunVerdict(base=base, candidate=candidate, outcome=Outcome.SKIP, judged=(), decisive=None, test="",
                          missing=f"run {candidate.id} ({candidate.label}) has no usable samples{what}")
    if not any(g.values.size for g in store.series.value_groups(base.id, None, chosen or None)):
        raise UsageError(f"reference run {base.id} ({base.label}) has no usable samples{what}")
    # a bisect's builds are separate runs: their run-to-run variance is the host's, else
    # perflab's default prior, as in compare (a call the host cannot back is undecided: skip)
    report = compare_runs(store, [base, candidate], filters=Filters.parse([], sorted(chosen)), method=method,
                          q=Q, noise_floor=noise_floor, all_metrics=True)
    limit = f"{100 * threshold:g}%" if threshold is not None else "the noise floor"
    test = (f"{report.method_name}, Benjamini-Hochberg FDR {100 * Q:g}% over {report.tested} row(s), "
            f"noise floor {'/'.join(f'{100 * f:g}%' for f in report.noise_floors)}; good = the "
            f"{100 * report.confidence:g}% interval rules out a regression of {limit} or more")
    judged = tuple((row, row.cells[0].change) for row in report.rows if row.cells[0].change is not None)
    if not judged:
        return RunVerdict(base=base, candidate=candidate, outcome=Outcome.SKIP, judged=(), decisive=None, test=test,
                          missing=f"no metric of {candidate.label} pairs with {base.label}", warnings=report.warnings)
    def smallest(change: Change) -> float:
        return 100.0 * (change.noise_floor if threshold is None else threshold)

    regressions = [(row, c) for row, c in judged if c.verdict is Verdict.REGRESSION and -c.pct >= smallest(c)]
    if regressions:
        worst = min(regressions, key=lambda item: item[1].pct)
        return RunVerdict(base=base, candidate=candidate, outcome=Outcome.BAD, judged=judged, decisive=worst,
                          test=test, warnings=report.warnings)
    open_ = [(row, c) for row, c in judged if not (c.ci.known and c.ci.low > -smallest(c) and c.min_p < Q)]
    if open_:
        row, change = open_[0]
        return RunVerdict(base=base, candidate=candidate, outcome=Outcome.UNDECIDED, judged=judged,
                          decisive=(row, change), test=test,
                          missing=_missing(row, change, smallest(change), threshold is None), warnings=report.warnings)
    least = min(judged, key=lambda item: item[1].pct if math.isfinite(item[1].pct) else 0.0)
    return RunVerdict(base=base, candidate=candidate, outcome=Outcome.GOOD, judged=judged, decisive=least, test=test,
                      warnings=report.warnings)


def _missing(row: Row, change: Change, limit_pct: float, default_limit: bool) -> str:
    """What would let the test decide this row."""
    refused = [w.message for w in row.cells[0].warnings if w.kind in REFUSALS]
    if refused:   # separate runs the host's prior does not stand for: say why, not the interval
        return refused[0]
    if change.blocked:   # the data cannot carry a mark, whatever its interval says
        return change.blocked
    n_base = row.base.n if row.base else 0
    n_new = row.cells[0].side.n if row.cells[0].side else 0
    if change.min_p >= Q:
        need = 4 if change.method == "mann-whitney" else 2
        return (f"{n_base} vs {n_new} samples cannot reach p < {Q:g} with {change.test} (its smallest p is "
                f"{change.min_p:.2g}); need at least {need} each"
                + (", or use --method welch-log" if change.method == "mann-whitney" else ""))
    if not change.ci.known:
        return "the change has no confidence interval (too few samples, or values <= 0); record more samples"
    return (f"the {100 * change.ci.confidence:g}% interval of the change [{change.ci.low:+.2f}%, "
            f"{change.ci.high:+.2f}%] does not rule out a regression of {limit_pct:g}%; record more samples "
            "of both runs" + (", or set --threshold to the smallest regression that matters" if default_limit else ""))
