#!/usr/bin/env python3
"""Each rule that leaves a row of separate runs undecided: what it buys and what it costs.

Data and designs as bench/aa_host_prior.py (every pair of distinct runs of one benchmark,
perflab's own row test on separate runs): ``host prior`` (the leave-one-out host prior)
and ``3 + prior`` (3 replicate runs of the benchmark + that prior). For each blocking rule
(stats.separate_runs: two groups, unequal load, own replicates beyond the prior;
stats.resolution: coarse resolution, an unstable run: drift or two groups with overlapping
sides), the same pairs and the same replicate draws are judged with every rule, without
that one rule, and with none: A/A false calls (any call on a pair of equal runs) and power
(a regression called on one side's values times each --change), with Wilson's 95%
intervals. A rule earns its place where removing it raises the A/A false calls by more
than their intervals allow; one that only costs power does not.

The recordings hold no outside-load figures (outside.*), so the unequal-load rule never
fires here: its row says so rather than a figure.

Usage: bench/blocking_rules.py [--data FILE] [--metric time|user|system] [--seed 2026]
           [--change 1.10 --change 2.0] [--smoke]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
from project_venv import in_project_venv  # noqa: E402

in_project_venv(__file__)

import numpy as np  # noqa: E402  (after the re-exec: the .venv has it)

sys.path.insert(0, str(HERE))

from aa_host_prior import FLOOR, ROOT, default_prior, kind_groups, loaded, pairs_parser, prior_of, runs_or_exit, shown  # noqa: E402

RULES = ("two-groups", "unstable-run", "coarse-resolution", "beyond-host-prior", "unequal-load")
DESIGNS = ("host prior", "3 + prior")


def variants() -> dict[str, frozenset[str]]:
    """The rule sets compared: every rule, each one left out, none."""
    out = {"every rule": frozenset()}
    out.update({f"without {rule}": frozenset({rule}) for rule in RULES})
    out["no rule"] = frozenset(RULES)
    return out


def judge_pair(base: dict[str, np.ndarray], new: dict[str, np.ndarray], metric: str, factor: float, priors: dict,
               own: list[np.ndarray], skip: frozenset[str]) -> dict[str, tuple[str, str]]:
    """design -> (verdict, the blocking rule's kind or "") of base against new x ``factor``."""
    from perflab.model.records import Direction, MeanKind
    from perflab.stats.difference import compare
    from perflab.stats.host_prior import spread
    from perflab.stats.separate_runs import RunToRun
    load = (loaded(base), loaded(new))
    known = {"host prior": RunToRun(priors["lobo"], False, priors["others"], None, 0, load),
             "3 + prior": RunToRun(priors["lobo"], False, priors["others"], spread(own), len(own), load)}
    out = {}
    for design, k in known.items():
        d = compare(base[metric], new[metric] * factor, direction=Direction.LOWER, mean_kind=MeanKind.ARITHMETIC,
                    noise_floor=FLOOR, separate_runs=True, run_to_run=k, skip=skip)
        kinds = {w.kind for w in d.warnings}
        out[design] = (d.verdict.value, next((rule for rule in RULES if rule in kinds and not d.judgeable), ""))
    return out


def evaluate(data: dict, metric: str, changes: list[float], seed: int, limit: int | None) -> dict:
    """(design, variant, "aa" | factor) -> [calls, trials]; ("fired", design, rule, "aa" | factor) -> count."""
    rng = np.random.default_rng(seed)
    tally: dict = {}
    rule_sets = variants()
    for name, runs in data.items():
        priors = {"lobo": prior_of(kind_groups(data, metric, name)), "others": len(data) - 1}
        pairs = [(i, j) for i in range(len(runs)) for j in range(i + 1, len(runs))][:limit]
        for i, j in pairs:
            rest = [k for k in range(len(runs)) if k not in (i, j)]
            own = [runs[k][metric] for k in rng.choice(rest, size=3, replace=False)]
            for what, factor, hits in (("aa", 1.0, ("improvement", "regression")),
                                       *((f, f, ("regression",)) for f in changes)):
                for variant, skip in rule_sets.items():
                    for design, (verdict, rule) in judge_pair(runs[i], runs[j], metric, factor, priors, own,
                                                              skip).items():
                        row = tally.setdefault((design, variant, what), [0, 0])
                        row[0] += verdict in hits
                        row[1] += 1
                        if variant == "every rule" and rule:
                            key = ("fired", design, rule, what)
                            tally[key] = tally.get(key, 0) + 1
    return tally


def table(tally: dict, changes: list[float], wilson) -> list[str]:
    def cell(calls: int, trials: int) -> str:
        low, high = wilson(calls / trials, trials)
        return f"{100 * calls / trials:.1f}% ({100 * low:.1f}-{100 * high:.1f})"

    head = ["design", "rules", "A/A false calls", *(f"power at +{100 * (f - 1):g}%" for f in changes),
            "rows it blocked first, every rule on (A/A / " + " / ".join(f"+{100 * (f - 1):g}%" for f in changes) + ")"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for design in DESIGNS:
        for variant in variants():
            found = [tally[(design, variant, what)] for what in ("aa", *changes)]
            rule = variant.removeprefix("without ")
            fired = " / ".join(str(tally.get(("fired", design, rule, what), 0)) for what in ("aa", *changes)) \
                if rule in RULES else ""
            if rule == "unequal-load":
                fired = "never fires: no outside-load figures recorded"
            lines.append("| " + " | ".join([design, variant, *(cell(*row) for row in found), fired]) + " |")
    return lines


def main() -> int:
    parser = pairs_parser(__doc__.splitlines()[0], ROOT / "bench" / "data" / "separate-runs-quiet" / "runs.csv")
    parser.add_argument("--smoke", action="store_true", help="3 pairs of each benchmark (the suite's run)")
    args = parser.parse_args()
    from aa_calibration import wilson
    changes = args.change or [1.10, 2.0]
    data = runs_or_exit(parser, args.data)
    default_prior(args.metric, None)   # the kind is known (fails early on a bad --metric)
    tally = evaluate(data, args.metric, changes, args.seed, 3 if args.smoke else None)
    print(f"{shown(args.data)}: {len(data)} benchmarks, {args.metric}, "
          f"{tally[('3 + prior', 'every rule', 'aa')][1]} pairs a design; Wilson 95% intervals")
    print("\n".join(table(tally, changes, wilson)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
