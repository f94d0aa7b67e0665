"""`perflab ab`: two commands interleaved in one run, stopped by a sequential test.

The runner calls the rule after every complete round with each side's primary metric in
round order; round i gives the pair (base[i], cand[i]). stats.sequential_ab.decide holds
its error rates however often it looks, so checking after every round is allowed. A round
with a failed sample on either side is left out of the pairs (its failure is recorded).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from perflab.execute.runner import Samples, StopLimits
from perflab.model.report.verdict import Outcome
from perflab.model.verdicts import SIGN, Verdict
from perflab.store import Store

if TYPE_CHECKING:
    from perflab.stats.sequential_ab import SequentialDecision


@dataclass(frozen=True)
class AbSettings:
    """What `perflab ab` was asked; stored in the run's spec so --resume rebuilds the rule."""

    threshold_pct: float
    alpha: float = 0.05
    min_runs: int = 5
    max_runs: int = 200
    max_time_s: float | None = None
    lower_is_better: bool = True

    def to_spec(self) -> dict[str, Any]:
        return asdict(self)


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
        change, (low, high) = better_pct(d, self.settings.lower_is_better)
        return (f"{verdict}: {change:+.2f}% (+ = better), {100 * (1 - d.alpha):g}% CI "
                f"[{low:+.2f}%, {high:+.2f}%], n={d.n}: {d.reason}")

    def __call__(self, samples: Samples) -> str | None:
        decision = self.decide(samples)
        return None if decision.verdict is None else decision.reason


def ab_limits(spec: dict[str, Any]) -> tuple[StopLimits, AbRule]:
    settings = AbSettings(**spec)
    rule = AbRule(settings)
    return StopLimits(rule=rule, max_time_s=settings.max_time_s, min_rounds=settings.min_runs,
                      describe=rule.describe), rule


def conclude(store: Store, run_id: int, rule: AbRule, samples: Samples) -> SequentialDecision:
    """The run's decision (the rule's, or at the limit the final one: decided or undecided),
    stored in its spec beside the settings. ``samples`` in plan order, the base first."""
    decision = rule.decision
    if decision is None or decision.verdict is None:
        decision = rule.decide(samples, final=True)
    store.update_spec(run_id, {"ab": {"settings": rule.settings.to_spec(),
                                      "decision": decision_record(decision, rule.settings.lower_is_better)}})
    return decision


def better_pct(decision: SequentialDecision, lower_is_better: bool) -> tuple[float, tuple[float, float]]:
    """The decision's change and interval in the house convention: % with + = better."""
    if not lower_is_better:
        return decision.estimate_pct, decision.ci_pct
    low, high = decision.ci_pct
    return -decision.estimate_pct + 0.0, (-high + 0.0, -low + 0.0)


def decision_record(decision: SequentialDecision, lower_is_better: bool = True) -> dict[str, Any]:
    """What the run's spec keeps of the decision: changes in % with + = better (``sign``)."""
    change, interval = better_pct(decision, lower_is_better)
    return {"verdict": decision.verdict.value if decision.verdict is not None else None, "n": decision.n,
            "change_pct": change, "ci_pct": list(interval), "sign": SIGN, "alpha": decision.alpha,
            "reason": decision.reason}


def outcome(decision: SequentialDecision) -> Outcome:
    """`perflab verdict`'s three-way answer (and exit code): 0 good, 1 bad, 125 undecided."""
    if decision.verdict is Verdict.REGRESSION:
        return Outcome.BAD
    if decision.verdict in (Verdict.NO_CHANGE, Verdict.IMPROVEMENT):
        return Outcome.GOOD
    return Outcome.UNDECIDED
