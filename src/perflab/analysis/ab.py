"""`perflab ab`'s answer: the decision of an A/B run (execute/ab_rule.py) as `verdict`'s outcome."""

from __future__ import annotations

from perflab.model.report.verdict import Outcome
from perflab.model.run_request import AbDecision
from perflab.model.verdicts import Verdict


def outcome(decision: AbDecision) -> Outcome:
    """`perflab verdict`'s three-way answer (and exit code): 0 good, 1 bad, 125 undecided."""
    if decision.verdict == Verdict.REGRESSION.value:
        return Outcome.BAD
    if decision.verdict in (Verdict.NO_CHANGE.value, Verdict.IMPROVEMENT.value):
        return Outcome.GOOD
    return Outcome.UNDECIDED
