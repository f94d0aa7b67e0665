#!/usr/bin/env python3
"""Simulated time to verdict of the sequential A/B rule (stats.sequential_ab), beside the
n of a fixed paired t-test with 90% power at the true change (the oracle design).

Streams of log ratios d = change + noise (normal, or Student t 3 df scaled to sd 1; the
noise's sd 1%), judged after every round as `perflab ab` does (threshold --threshold %,
alpha 0.05, at least 5 pairs) up to --max-n pairs; printed per change (in sds of d): the
fixed n, the adaptive median n of the streams that called the regression, their ratio, and
the share called. Then the false decisions on A/A streams (a shuffled order: d symmetric
about 0), which the rule bounds by alpha however often it looks. The real-command
counterpart is bench/time_to_verdict.py.

    PYTHONPATH=src .venv/bin/python bench/sequential_ab_sim.py [--streams 300] [--max-n 1500]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from time_to_verdict import fixed_n_paired_t  # the same oracle fixed n as the real-command bench

from perflab.stats.sequential_ab import round_evidence, verdicts

ALPHA, SD = 0.05, 0.01


def noise(rng: np.random.Generator, kind: str, shape: tuple[int, int]) -> np.ndarray:
    return rng.standard_normal(shape) if kind == "normal" else rng.standard_t(3, shape) / math.sqrt(3)


def first_calls(d: np.ndarray, threshold_pct: float) -> tuple[np.ndarray, np.ndarray]:
    """Per stream: the round of its first decision (0: none) and that decision (verdicts'
    codes: +1 regression, -1 improvement, 2 no change, 0 none)."""
    v = verdicts(round_evidence(d, threshold_pct=threshold_pct, alpha=ALPHA), min_n=5)
    decided = v != 0
    first = decided.argmax(axis=-1)
    code = np.where(decided.any(axis=-1), v[np.arange(v.shape[0]), first], 0)
    return np.where(code != 0, first + 1, 0), code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=300)
    parser.add_argument("--max-n", type=int, default=1500)
    parser.add_argument("--threshold", type=float, default=0.01, help="%%: small, so a call needs only significance")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print("| noise | change (sd of d) | fixed n | adaptive median n | ratio | called |")
    print("|---|---|---|---|---|---|")
    for kind in ("normal", "t3"):
        for effect in (0.15, 0.25, 0.4, 0.6, 1.0, 2.0):
            d = effect * SD + SD * noise(rng, kind, (args.streams, args.max_n))
            rounds, code = first_calls(d, args.threshold)
            ns = rounds[code == 1]
            f = fixed_n_paired_t(effect, 1.0)
            median = float(np.median(ns)) if ns.size else math.nan
            print(f"| {kind} | {effect:g} | {f} | {median:.0f} | {median / f:.2f} | {ns.size / args.streams:.0%} |",
                  flush=True)
    for kind in ("normal", "t3"):
        d = SD * noise(rng, kind, (2000, 200)) * rng.choice([-1, 1], (2000, 200))
        _, code = first_calls(d, 0.5)
        print(f"A/A {kind}: {np.mean(np.abs(code) == 1):.2%} false decisions (regression or improvement) in "
              f"2000 streams of 200 pairs, alpha {ALPHA:g}; {np.mean(code == 2):.0%} no change at ±0.5%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
