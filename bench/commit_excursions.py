#!/usr/bin/env python3
"""A robot's young commit series as `history` and `alerts` read them: is the step on its commit?

Per-commit values (stats.changepoints.detect with commits=True, the default method),
noise multiplicative (log-normal, sd 2%, 5%, 10%: a time's noise grows with its level):

- step:      10 commits, a 4x step, 6 after; "stray before": the commit just before the
             step measured at 1.5x (a loaded machine's commit); "stray anywhere": one
             commit anywhere at 1.5x. Figure: the change's first commit is the step's own.
- excursion: 10 commits, 6 at 2.8x, 8 back (a regression and its fix); 0-2 commits
             anywhere at 1.5x. Figure: the way back found within a commit of its own.

Prints the share of series that miss. --src runs the same on another source tree.

Usage: bench/commit_excursions.py [--series 400] [--seed 38] [--src PATH]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
NOISE = (0.02, 0.05, 0.10)
STRAY = 1.5


def misses(detect, rng: np.random.Generator, series: int, levels: list[float], strays: str | int,
           sd: float, want: set[int]) -> float:
    """Share of ``series`` noisy copies of ``levels`` with no change found at an index in ``want``."""
    n = len(levels)
    missed = 0
    for _ in range(series):
        x = np.array(levels) * np.exp(rng.normal(0.0, sd, n))
        if strays == "before":
            x[min(want) - 1] *= STRAY
        else:
            for _ in range(int(strays)):
                x[rng.integers(0, n)] *= STRAY
        found = {c.index for c in detect(x.tolist(), commits=True)}
        missed += not found & want
    return missed / series


def positive(text: str) -> int:
    """A count of 1 or more (argparse type)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a whole number of 1 or more, got {text!r}")
    return int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=positive, default=400)
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--src", default=str(ROOT / "src"), help="the perflab source tree to measure")
    args = parser.parse_args()
    if not Path(args.src, "perflab").is_dir():
        parser.error(f"--src {args.src}: no perflab package there")
    sys.path.insert(0, args.src)
    import perflab
    from perflab.stats.changepoints import detect
    rng = np.random.default_rng(args.seed)
    step = [1.0] * 10 + [4.0] * 6
    excursion = [1.0] * 10 + [2.8] * 6 + [1.0] * 8
    print(f"source: {Path(perflab.__file__).parent}; {args.series} series a row; share missed at noise sd "
          + ", ".join(f"{sd:.0%}" for sd in NOISE))
    rows: list[tuple[str, list[float], str | int, set[int]]] = [
        ("step, no stray", step, 0, {10}), ("step, stray before", step, "before", {10}),
        ("step, stray anywhere", step, 1, {10}),
        *((f"excursion, {k} stray", excursion, k, {15, 16, 17}) for k in (0, 1, 2))]
    for name, levels, strays, want in rows:
        shares = [misses(detect, rng, args.series, levels, strays, sd, want) for sd in NOISE]
        print(f"  {name:<22}" + "".join(f"{100 * s:7.1f}%" for s in shares))


if __name__ == "__main__":
    main()
