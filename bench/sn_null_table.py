#!/usr/bin/env python3
"""The null table of perflab.stats.selfnormalised: upper quantiles of its G on white noise.

For each segment length m of NULL_SIZES, draws Gaussian white noise, applies the test's own
procedure (`one_step`: `detrended`, then `statistic`) and prints the quantiles at the tail
probabilities NULL_P as the Python tuple the module holds in NULL_QUANTILES. The law is the same for any
noise scale (G is scale-free), and for weakly dependent noise in the limit, so white noise
is the reference.

    PYTHONPATH=src .venv/bin/python bench/sn_null_table.py [--draws 1000000] [--seed 2026] [--lengths M ...]

With --check it also compares the fresh table with the module's, column by column, and
prints the largest relative difference (the Monte Carlo error of the 1e-4 quantile from
10^6 draws is a few percent). About 4 minutes for 10^6 draws on 2 cores.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from perflab.stats import selfnormalised as sn


def quantiles(m: int, draws: int, rng: np.random.Generator) -> list[float]:
    """The upper NULL_P quantiles of G for segments of m white-noise values."""
    chunk = max(1000, min(20000, 2_000_000 // m))
    g = np.concatenate([sn.one_step(*sn.rows(rng.standard_normal((chunk, m))))[0]
                        for _ in range(-(-draws // chunk))])
    return [float(q) for q in np.quantile(g, [1.0 - p for p in sn.NULL_P])]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1_000_000, help="white-noise segments per length")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--check", action="store_true", help="compare with the module's table")
    parser.add_argument("--lengths", nargs="+", type=int, choices=sn.NULL_SIZES, default=list(sn.NULL_SIZES),
                        metavar="M", help="only these rows of NULL_SIZES (default all)")
    args = parser.parse_args()
    if args.draws < 10 / min(sn.NULL_P):
        print(f"--draws must be at least {int(10 / min(sn.NULL_P))} to reach p = {min(sn.NULL_P)}",
              file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    rows = []
    for m in args.lengths:
        start = time.monotonic()
        rows.append(quantiles(m, args.draws, rng))
        print(f"# m = {m}: {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
    print("NULL_QUANTILES: tuple[tuple[float, ...], ...] = (")
    for m, row in zip(args.lengths, rows):
        print(f"    ({', '.join(f'{q:.1f}' for q in row)}),  # m = {m}")
    print(")")
    if args.check:
        fresh = np.array(rows)
        kept = np.array([sn.NULL_QUANTILES[sn.NULL_SIZES.index(m)] for m in args.lengths])
        if fresh.shape != kept.shape:
            print(f"# the module's table is {kept.shape[0]} x {kept.shape[1]}, not "
                  f"{fresh.shape[0]} x {fresh.shape[1]} (NULL_SIZES x NULL_P): paste the table above")
            return 1
        worst = np.max(np.abs(fresh / kept - 1.0), axis=0)
        print("# largest relative difference per tail probability:",
              " ".join(f"{p:g}:{w:.1%}" for p, w in zip(sn.NULL_P, worst)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
