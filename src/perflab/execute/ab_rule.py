"""`perflab ab`'s stop rule: two commands interleaved in one run, stopped by a sequential test.

The scheduler calls the rule after every complete round with each side's primary metric in
round order; round i gives the pair (base[i], cand[i]). stats.sequential_ab.decide holds
its error rates however often it looks, so checking after every round is allowed. A round
with a failed sample on either side is left out of the pairs (its failure is recorded).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from perflab.execute.runner import Samples, StopLimits
from perflab.model.run_request import AbDecision, AbRecord, AbSettings
from perflab.model.verdicts import SIGN, better_pct
from perflab.store import Store

if TYPE_CHECKING:
    from perflab.stats.sequential_ab import SequentialDecision


class AbRule:
    """The stop rule: the sequential decision on the pairs so far; its last decision kept."""

    def __init__(self, settings: AbSettings):
        self.settings = settings
        self.decision: SequentialDecision | None = None

    def pairs(self, samples: Samples) -> tuple[list[float], list[float]]:
        """Round i's (base, cand); ``samples`` holds the base first (the runner keeps plan order)."""
        base, cand = list(samples.values())[:2]
        # the test is on log ratios: a failed sample (NaN) or a value <= 0 makes no pair
        kept = [(b, c) for b, c in zip(base, cand) if math.isfinite(b) and math.isfinite(c) and b > 0 and c > 0]
        return [b for b, _ in kept], [c for _, c in kept]

    def decide(self, samples: Samples, *, final: bool = False) -> SequentialDecision:
        from perflab.stats.sequential_ab import decide
        base, cand = self.pairs(samples)
        s = self.settings
        self.decision = decide(base, cand, threshold_pct=s.threshold_pct, alpha=s.alpha,
                               lower_is_better=s.lower_is_better, min_n=s.min_runs, final=final)
        return self.decision

    def describe(self) -> str | None:
        """The current decision in one line, for the live view."""
        d = self.decision
        if d is None:
            return None
        verdict = d.verdict.value if d.verdict is not None else "sampling"
        change, (low, high) = better_pct(d.estimate_pct, d.ci_pct, self.settings.lower_is_better)
        return (f"{verdict}: {change:+.2f}% ({SIGN}), {100 * (1 - d.alpha):g}% CI "
                f"[{low:+.2f}%, {high:+.2f}%], n={d.n}: {d.reason}")

    def __call__(self, samples: Samples) -> str | None:
        decision = self.decide(samples)
        return None if decision.verdict is None else decision.reason


def ab_limits(settings: AbSettings) -> tuple[StopLimits, AbRule]:
    rule = AbRule(settings)
    return StopLimits(rule=rule, max_time_s=settings.max_time_s, min_rounds=settings.min_runs,
                      describe=rule.describe, metric=settings.metric if settings.metric != "time" else None), rule


def conclude(store: Store, run_id: int, rule: AbRule, samples: Samples) -> AbDecision:
    """The run's decision (the rule's, or at the limit the final one: decided or undecided),
    stored in its request beside the settings. ``samples`` in plan order, the base first."""
    decision = rule.decision
    if decision is None or decision.verdict is None:
        decision = rule.decide(samples, final=True)
    record = decision_record(decision, rule.settings.lower_is_better)
    store.runs.update_request(run_id, lambda r: replace(r, ab=AbRecord(settings=rule.settings, decision=record)))
    return record


def decision_record(decision: SequentialDecision, lower_is_better: bool = True) -> AbDecision:
    """What the run's request keeps of the decision: the change in the SIGN convention (+ = better)."""
    change, interval = better_pct(decision.estimate_pct, decision.ci_pct, lower_is_better)
    return AbDecision(verdict=decision.verdict.value if decision.verdict is not None else None, n=decision.n,
                      estimate_pct=change, ci_pct=interval, alpha=decision.alpha, reason=decision.reason)
