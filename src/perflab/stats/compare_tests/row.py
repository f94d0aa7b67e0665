"""What every compare test reads of one row (`Row`) and gives (`Outcome`), and the two
things several tests share: an interval of new/base as a % change with + = better, and the
bootstrap interval."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perflab.model.records import Direction, MeanKind
from perflab.model.verdicts import StatWarning, oriented_ratio
from perflab.stats.intervals import bootstrap_ratio_ci
from perflab.stats.rules import RuleResult
from perflab.stats.significance import Moments
from perflab.stats.variance import RunVariance


@dataclass(frozen=True, kw_only=True)
class Row:
    """One row's clean values (base ``a``, new ``b``), the moments of their logs, and what
    the comparison asks: the metric's mean kind and direction, the confidence, the bootstrap's
    seed; with separate runs, the run-to-run variance a test whose unit is the run takes in
    (``run_shares``: sum (m_j/n)^2 over the runs each side pools)."""

    a: np.ndarray
    b: np.ndarray
    logs: tuple[Moments | None, Moments | None]
    mean_kind: MeanKind
    direction: Direction
    confidence: float
    seed: int
    run_variance: RunVariance | None = None
    run_shares: tuple[float, float] = (1.0, 1.0)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What a test gives one row: its p-value (NaN for a rule), the interval of the change
    in % (+ = better) and how it was made, the rule's own result, the smallest p the test can
    give at these sizes (NaN: no p-value), and its warnings about the pair."""

    p_value: float
    ci_low: float
    ci_high: float
    interval: str
    min_p: float
    rule: RuleResult | None = None
    warnings: tuple[StatWarning, ...] = ()


def oriented_interval(low: float, high: float, direction: Direction) -> tuple[float, float]:
    """An interval of new/base as an interval of the % change, + = better."""
    ends = (oriented_ratio(low, direction), oriented_ratio(high, direction))
    return min(ends), max(ends)


def bootstrap_interval(row: Row) -> tuple[float, float, str]:
    """(low, high, how): the bootstrap interval of the ratio of the sides' centres."""
    boot = bootstrap_ratio_ci(row.a, row.b, mean_kind=row.mean_kind, confidence=row.confidence, seed=row.seed)
    low, high = oriented_interval(boot.low, boot.high, row.direction)
    return low, high, f"bootstrap interval of the ratio of {row.mean_kind.value}s"


def rule_outcome(row: Row, rule: RuleResult) -> Outcome:
    """A tool's rule: no p-value, the bootstrap interval, the rule's verdict and warnings."""
    low, high, interval = bootstrap_interval(row)
    return Outcome(p_value=math.nan, ci_low=low, ci_high=high, interval=interval, min_p=math.nan, rule=rule,
                   warnings=rule.warnings)
