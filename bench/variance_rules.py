#!/usr/bin/env python3
"""Which variance a row of separate runs takes: candidate per-row rules on real pairs.

Data, pairs and replicate draws as bench/aa_host_prior.py (every pair of distinct runs of
one benchmark, 3 replicate runs drawn from the others with the same seed, the host prior
fitted on the other benchmarks). Each candidate stands in for perflab's
`stats.separate_runs.choose` (the variance of a run's mean log a row takes) while perflab's
own row test (stats.difference.compare, every blocking rule on) judges the pair:

  perflab     the rule in the product (own replicates alone under a prior on d0 <= 4 or
              beyond its upper tail, else moderated)
  moderated   perflab before 2026-11-28 (own alone only beyond the upper tail, p < 0.01)
  robust      limma's robust empirical Bayes (Phipson et al. 2016, fitFDistRobustly's
              df2.shrunk) for the compared row: its prior df shrunk by ProbNotOutlier =
              min(RightP / UniformP, 1), its F ranked among the host's groups', towards the
              df that makes the largest F the median
  two-sided   a predictive check, s^2/s0^2 ~ F(d, d0): own alone where 2 min(P, 1 - P) < 0.05
  lower       the same, lower tail only (the selection bias of choosing a small s^2)
  d0 >= d     the prior weighed only where it carries at least the row's own df
  narrower    the narrower of own and moderated (choosing after seeing the data)
  own         own replicates alone, always (with the pair's excess within-run part)

and the oracle (each benchmark's run-to-run variance known). A/A false calls with Wilson's
95% interval; power (a regression called, one side times each --change) as a share of
the oracle's. Figures: bench/README.md, "A per-row rule".

Usage: bench/variance_rules.py [--data FILE] [--metric time|user|system] [--seed 2026]
           [--change 1.10 --change 2.0]
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
from project_venv import in_project_venv  # noqa: E402

in_project_venv(__file__)

import numpy as np  # noqa: E402  (after the re-exec: the .venv has it)

sys.path.insert(0, str(HERE))

from aa_host_prior import FLOOR, ROOT, kind_groups, loaded, pairs_parser, prior_of, runs_or_exit, shown  # noqa: E402

CANDIDATES = ("perflab", "moderated", "robust", "two-sided", "lower", "d0 >= d", "narrower", "own")
ALPHA = 0.05   # the checks' level: the row test's own


def candidate(name: str, groups: list) -> Callable:
    """A stand-in for stats.separate_runs.choose; ``groups``: the host's replicate spreads."""
    from perflab.stats import separate_runs as S
    from perflab.stats.host_prior import f_sf, moderated
    perflabs = S.choose   # taken before any candidate stands in for it

    def choose(prior, own, part, skip=frozenset()):
        if name == "perflab" or own is None or not own.df > 0:
            return perflabs(prior, own, part, skip)
        if name == "moderated":
            return perflabs(prior, own, part, skip | {S.WEAK_PRIOR})
        variance, df = moderated(prior, own.s2, own.df, part)
        alone = S.Choice(S.own_variance(own, part), own.df, 0.0, "own", name)
        pooled = S.Choice(variance, df, prior.d0, "moderated")
        upper = f_sf(max(own.s2, 0.0) / prior.scale(part), own.df, prior.d0)
        if name == "robust":
            d0 = robust_d0(prior, groups, own, part)
            return S.Choice(*moderated(replace(prior, d0=d0), own.s2, own.df, part), d0, "moderated")
        chosen = {"two-sided": 2 * min(upper, 1 - upper) < ALPHA, "lower": 1 - upper < ALPHA,
                  "d0 >= d": prior.d0 < own.df, "narrower": alone.variance < variance, "own": True}[name]
        return alone if chosen else pooled
    return choose


def robust_d0(prior, groups: list, own, part: float) -> float:
    """limma's df2.shrunk (fitFDistRobustly) for the row ``own`` among the host's ``groups``."""
    from perflab.stats.host_prior import f_sf
    stats = [(g.s2 / prior.scale(g.within), g.df) for g in groups] + [(own.s2 / prior.scale(part), own.df)]
    right = [f_sf(max(f, 0.0), df, prior.d0) for f, df in stats]
    n, row = len(stats), stats[-1][0]
    rank = sum(f <= row for f, _ in stats[:-1]) + 1
    not_outlier = min(right[-1] / ((n - rank + 0.5) / n), 1.0)
    if not_outlier >= 1.0:
        return prior.d0
    i = min(range(n), key=right.__getitem__)
    if right[i] <= 0:
        return not_outlier * prior.d0
    outlier = math.log(0.5) / math.log(right[i]) * prior.d0   # the df that makes the largest F the median
    again = f_sf(max(stats[i][0], 0.0), stats[i][1], outlier)
    if 0 < again < 1:
        outlier *= math.log(0.5) / math.log(again)
    return not_outlier * prior.d0 + (1 - not_outlier) * outlier


def evaluate(data: dict, metric: str, seed: int, changes: list[float]) -> dict[str, dict[float, list[int]]]:
    """candidate -> {factor: [calls, trials]} (factor 1.0: A/A, any call)."""
    from power_bound import oracle

    from perflab.model.records import Direction, MeanKind
    from perflab.stats import separate_runs as S
    from perflab.stats.difference import compare
    from perflab.stats.host_prior import spread
    from perflab.stats.separate_runs import RunToRun
    from perflab.stats.variance import between_runs

    common = {"direction": Direction.LOWER, "mean_kind": MeanKind.ARITHMETIC, "noise_floor": FLOOR,
              "separate_runs": True}
    rng = np.random.default_rng(seed)   # aa_host_prior's draws of the 3 replicates
    counts = {c: {f: [0, 0] for f in [1.0, *changes]} for c in (*CANDIDATES, "oracle")}
    perflabs = S.choose
    for name, runs in data.items():
        groups = kind_groups(data, metric, name)
        prior, spreads = prior_of(groups), [s for s in (spread(g) for g in groups) if s is not None]
        truth = between_runs([r[metric] for r in runs])
        choosers = {c: candidate(c, spreads) for c in CANDIDATES}
        for i in range(len(runs)):
            for j in range(i + 1, len(runs)):
                rest = [k for k in range(len(runs)) if k not in (i, j)]
                chosen = list(rng.choice(rest, size=3, replace=False))
                known = RunToRun(prior, False, len(data) - 1, spread([runs[k][metric] for k in chosen]), 3,
                                 (loaded(runs[i]), loaded(runs[j])))
                for factor in counts["oracle"]:
                    hit = ("improvement", "regression") if factor == 1.0 else ("regression",)
                    a, b = runs[i][metric], runs[j][metric] * factor
                    for c, choose in choosers.items():
                        S.choose = choose
                        try:
                            verdict = compare(a, b, run_to_run=known, **common).verdict.value  # type: ignore[arg-type]
                        finally:
                            S.choose = perflabs
                        counts[c][factor][0] += verdict in hit
                        counts[c][factor][1] += 1
                    sigma2 = truth.sigma2 if truth is not None else 0.0
                    verdict = compare(a, b, run_variance=oracle(sigma2), **common).verdict.value  # type: ignore[arg-type]
                    counts["oracle"][factor][0] += verdict in hit
                    counts["oracle"][factor][1] += 1
    return counts


def main() -> int:
    parser = pairs_parser(__doc__.splitlines()[0], ROOT / "bench" / "data" / "separate-runs-quiet" / "runs.csv")
    args = parser.parse_args()
    from aa_calibration import wilson
    data = runs_or_exit(parser, args.data)
    if any(prior_of(kind_groups(data, args.metric, name)) is None for name in data) or \
            any(len(runs) < 5 for runs in data.values()):
        print("variance_rules: every benchmark needs a leave-one-out host prior and 5 runs (a pair and 3 "
              "replicates): give more benchmarks or runs", file=sys.stderr)
        return 2
    changes = args.change or [1.10, 2.0]
    counts = evaluate(data, args.metric, args.seed, changes)
    print(f"{shown(args.data)}: {len(data)} benchmarks, {args.metric}, 3 replicates a pair; A/A false calls "
          "(Wilson 95%), power and its share of the oracle's")
    for c, row in counts.items():
        calls, trials = row[1.0]
        low, high = wilson(calls / trials, trials)
        cells = [f"A/A {100 * calls / trials:4.1f}% ({100 * low:.1f}-{100 * high:.1f}%)"]
        for factor in changes:
            power, oracle_power = row[factor][0] / row[factor][1], counts["oracle"][factor][0] / row[factor][1]
            share = f"{100 * power / oracle_power:4.0f}%" if oracle_power else "   -"
            cells.append(f"+{100 * (factor - 1):g}% {100 * power:5.1f}% = {share}")
        print(f"  {c:<10} " + "  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
