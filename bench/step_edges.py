#!/usr/bin/env python3
"""Where mosum places one step on a robot's young history: 10 commits, then a step, 6 after.

Per-commit medians with 5% Gaussian noise; in half the series one commit of the new level
is an outlier (halfway back to the old level, the dip a loaded commit leaves). Prints, per
step size, the share of series whose change point mosum puts on the step's own commit,
and the share where it finds none. Run from two checkouts to compare two versions.

Usage: bench/step_edges.py [--series 2000] [--seed 2026]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from perflab.stats import mosum

BEFORE, AFTER = 10, 6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{args.series} series of {BEFORE} + {AFTER} commits, 5% noise; on the step's commit / none found")
    for ratio in (1.3, 1.5, 2.0, 4.0):
        for dip in (False, True):
            exact = missed = 0
            for _ in range(args.series):
                x = np.concatenate([np.full(BEFORE, 1.0), np.full(AFTER, ratio)]) * rng.normal(1, 0.05, BEFORE + AFTER)
                if dip:
                    at = BEFORE + int(rng.integers(1, AFTER))
                    x[at] = (1.0 + ratio) / 2
                found = mosum.search(x)
                exact += any(f.index == BEFORE for f in found)
                missed += not found
            print(f"  {ratio:.1f}x {'one dip after' if dip else 'no dip      '}  "
                  f"{100 * exact / args.series:5.1f}%  {100 * missed / args.series:5.1f}%")


if __name__ == "__main__":
    main()
