#!/usr/bin/env python3
"""Change points on short series (30, 50, 80 points): mosum against e-divisive and "no change".

Part of the data behind `auto`'s choice of short-series detector (perflab.model.
methods: resolve_method; real series annotated by people are
bench/changepoints_tcpd.py), measured the way bench/changepoints_accuracy.py measures long
series:

1. False alarms: the change-free recordings of bench/data (idle, quiet, loaded) cut into
   pieces of n points: change points per 1,000 points and pieces with any; simulated
   change-free noise of n points (Gaussian, AR(1) 0.6, a linear trend of 10 sd over the
   series, a season of 2 sd and period 50, one spike): series of 100 with any point.
2. The synthetic families of changepoints_accuracy.py (the same noise and changes) at n
   points, with changes >= 10 points from the ends and <= 12 apart (fewer where they do not
   fit): F1 (margin ±5) and covering per family and their mean.

Usage: bench/changepoints_short.py [--seed 2026] [--series 60]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "stats"))  # the accuracy test's scoring

LENGTHS = (30, 50, 80)
EDGE, GAP = 10, 12
SIM_KINDS = ("gaussian", "ar1-0.6", "trend", "season", "spike")


def accuracy_bench():
    """bench/changepoints_accuracy.py as a module: its noise, families and scores."""
    spec = importlib.util.spec_from_file_location("changepoints_accuracy", ROOT / "bench" / "changepoints_accuracy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def place_short(rng, n: int, k: int, gap: int) -> list[int]:
    """k positions >= EDGE from the ends and >= min(gap, GAP) apart (k lowered to fit)."""
    gap = min(gap, GAP)
    while n - 2 * EDGE - (k - 1) * gap < 0:
        k -= 1
    free = n - 2 * EDGE - (k - 1) * gap
    return [EDGE + int(v) + i * gap for i, v in enumerate(sorted(rng.integers(0, free + 1, size=k)))]


def main() -> int:
    from test_changepoints_accuracy import tcpd_f1

    from perflab.stats.changepoints import detect

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--series", type=int, default=60, help="series per family and length")
    args = parser.parse_args()

    acc = accuracy_bench()
    acc.place = place_short  # the families' own generator, with changes placed for short series
    recordings = {name: acc.load_noise(folder) for name, folder in acc.NOISE_SETS.items()}
    pool = [acc.standardised(acc.residuals(x)) for x in recordings["loaded"].values()]
    methods = {m: (lambda x, m=m: [c.index for c in detect(x, method=m)]) for m in ("mosum", "e-divisive")}

    for n in LENGTHS:
        rng = np.random.default_rng(args.seed + n)
        print(f"\n== {n} points")
        print("change-free recordings cut into pieces: false points per 1,000 (pieces with any)")
        for name, series in recordings.items():
            pieces = [x[i:i + n] for x in series.values() for i in range(0, x.size - n + 1, n)]
            points = sum(p.size for p in pieces)
            cells = []
            for m, fn in methods.items():
                found = [fn(p) for p in pieces]
                cells.append(f"{m} {1000 * sum(map(len, found)) / points:.1f} ({sum(1 for f in found if f)})")
            print(f"  {name:<7}{len(pieces):>4} pieces  " + "  ".join(cells))
        print("simulated change-free noise: series of 100 with any point")
        for kind in SIM_KINDS:
            sims = [acc.simulated(rng, kind, n) for _ in range(100)]
            print(f"  {kind:<10}" + "  ".join(f"{m} {sum(1 for x in sims if fn(x)):>3}" for m, fn in methods.items()))
        print(f"families, {args.series} series each: F1 / covering")
        scores: dict[str, list[tuple[float, float]]] = {m: [] for m in [*methods, "no change"]}
        for family in acc.FAMILIES:
            suite = [acc.make(rng, family, n, pool) for _ in range(args.series)]
            cells = []
            for m in scores:
                runs = [methods[m](x) if m in methods else [] for x, _ in suite]
                f1 = statistics.mean(tcpd_f1(tuple(c), r) for (_, c), r in zip(suite, runs))
                cov = statistics.mean(acc.covering(c, r, n) for (_, c), r in zip(suite, runs))
                scores[m].append((f1, cov))
                cells.append(f"{m} {f1:.3f}/{cov:.3f}")
            print(f"  {family:<12}" + "  ".join(cells))
        print("  mean        " + "  ".join(
            f"{m} {statistics.mean(s[0] for s in v):.3f}/{statistics.mean(s[1] for s in v):.3f}"
            for m, v in scores.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
