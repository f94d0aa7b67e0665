#!/usr/bin/env python3
"""Time to verdict: how many interleaved pairs does the always-valid sequential A/B rule
(stats.sequential_ab.decide) need, against a fixed-n design with the same power?

Real commands with known differences and A/A pairs:

  loop 5%      a C loop of n and 1.05·n iterations (compiled with gcc into a temp dir)
  loop 2%      the same loop, n and 1.02·n
  sleep 5%     `sleep 0.010` and `sleep 0.0105`
  loop A/A     the loop against itself
  sleep A/A    `sleep 0.010` against itself

Per case: a pilot of --pilot interleaved pairs measures the per-pair noise (sd of the log
ratio d = log cand - log base, as the t-test sees it, outliers included) and the real
change (mean of d; process start-up dilutes the nominal one). From these, the fixed n: the
smallest n at which the two-sided paired t-test on logs at alpha 0.05 reaches 90% power
(noncentral t). For an A/A case there is no change to detect, and the fixed design that
answers "no change beyond ±threshold" is the paired TOST (two one-sided t-tests at alpha
0.05); its n for 90% power at a true change of 0 is shown instead, marked "TOST".

Then --reps adaptive runs per case: rounds of the two commands, in a shuffled order inside
each round, each timed here with subprocess and time.perf_counter_ns (the bench does not
depend on `perflab ab`), decide() called after every round until it returns a verdict or
the limit (--max-n, or 3x the fixed n when that is smaller) is reached (then UNDECIDED).

Printed: case, real change, sd of d, its MAD-based sd (how heavy the tails are), fixed n,
the fixed n at the threshold (what a fixed design planned without knowing the change
needs: 90% power at a change of the threshold), adaptive median n (p10..p90), power (the
right direction called), false-decision rate (the wrong direction; for A/A any
regression/improvement), no change, undecided, the
limit of pairs and the case's time. Run it as

    PYTHONPATH=src .venv/bin/python bench/time_to_verdict.py [--reps 100] [--threshold 1]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from perflab.model.verdicts import Verdict
from perflab.stats.sequential_ab import decide

LOOP_C = r"""
#include <stdlib.h>
int main(int argc, char **argv) {
    long n = atol(argv[1]);
    volatile long x = 0;  /* volatile: the loop runs n times at any -O */
    for (long i = 0; i < n; i++) x += i;
    return (int)(x & 1) * 0;
}
"""
ALPHA = 0.05
POWER = 0.9


@dataclass(frozen=True)
class Case:
    name: str
    base: list[str]
    cand: list[str]
    nominal_pct: float          # the known change of cand vs base (0 for A/A)
    metric: str = "wall"        # "wall" or "cpu" (see time_once)


def time_once(argv: list[str], metric: str = "wall") -> float:
    """One run of argv, seconds: its wall time (perf_counter_ns around the child), or with
    metric "cpu" the child's user + system CPU time (wait4), which waiting for a busy CPU
    does not inflate."""
    start = time.perf_counter_ns()
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = (time.perf_counter_ns() - start) / 1e9
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise subprocess.CalledProcessError(child.returncode, argv)
    return usage.ru_utime + usage.ru_stime if metric == "cpu" else wall


def one_round(case: Case, rng: random.Random) -> tuple[float, float]:
    """One interleaved round: base and cand in a shuffled order."""
    if rng.random() < 0.5:
        b = time_once(case.base, case.metric)
        c = time_once(case.cand, case.metric)
    else:
        c = time_once(case.cand, case.metric)
        b = time_once(case.base, case.metric)
    return b, c


def build_loop(folder: Path) -> Path:
    source = folder / "loop.c"
    source.write_text(LOOP_C)
    binary = folder / "loop"
    subprocess.run(["gcc", "-O1", "-o", str(binary), str(source)], check=True)
    return binary


def loop_iterations(binary: Path, target_s: float) -> int:
    """Iterations for a run of about target_s seconds of CPU (the best of 5 of a probe)."""
    probe = 5_000_000
    best = min(time_once([str(binary), str(probe)], "cpu") for _ in range(5))
    startup = min(time_once([str(binary), "0"], "cpu") for _ in range(5))
    per_iteration = max(best - startup, 1e-6) / probe
    return max(1000, int(target_s / per_iteration))


def fixed_n_paired_t(delta: float, sd: float) -> int:
    """Smallest n with power >= 90% for the two-sided paired t-test at alpha 0.05."""
    if not (sd > 0 and delta != 0):
        return 0
    effect = abs(delta) / sd
    for n in range(2, 100_000):
        df, shift = n - 1, effect * math.sqrt(n)
        critical = stats.t.ppf(1 - ALPHA / 2, df)
        if stats.nct.sf(critical, df, shift) + stats.nct.cdf(-critical, df, shift) >= POWER:
            return n
    return 100_000


def fixed_n_tost(margin: float, sd: float) -> int:
    """Smallest n with power >= 90% for the paired TOST at alpha 0.05 and a true change of 0."""
    for n in range(2, 100_000):
        df, shift = n - 1, margin / sd * math.sqrt(n)
        critical = stats.t.ppf(1 - ALPHA, df)
        # both one-sided tests reject: |t| < shift - critical; power by the noncentral t
        if shift > critical and 1 - 2 * stats.nct.sf(shift - critical, df, 0) >= POWER:
            return n
    return 100_000


def adaptive(case: Case, threshold_pct: float, max_n: int, rng: random.Random) -> tuple[Verdict, int]:
    base: list[float] = []
    cand: list[float] = []
    while True:
        b, c = one_round(case, rng)
        base.append(b)
        cand.append(c)
        got = decide(base, cand, threshold_pct=threshold_pct, alpha=ALPHA, final=len(base) >= max_n)
        if got.verdict is not None:
            return got.verdict, got.n


def run_case(case: Case, args: argparse.Namespace, rng: random.Random) -> str:
    pilot = [one_round(case, rng) for _ in range(args.pilot)]
    d = np.log([c for _, c in pilot]) - np.log([b for b, _ in pilot])
    delta, sd = float(np.mean(d)), float(np.std(d, ddof=1))
    robust_sd = 1.4826 * float(np.median(np.abs(d - np.median(d))))  # the MAD: the tails left out
    if case.nominal_pct:
        fixed = fixed_n_paired_t(delta, sd)
        fixed_shown = f"{fixed}"
    else:
        fixed = fixed_n_tost(math.log1p(args.threshold / 100), sd)
        fixed_shown = f"{fixed} TOST"
    # what a fixed design planned without knowing the change needs: power at the threshold
    planned = fixed_n_paired_t(math.log1p(args.threshold / 100), sd)
    max_n = min(args.max_n, max(3 * fixed, 30))
    verdicts, ns = [], []
    started = time.monotonic()
    for _ in range(args.reps):
        verdict, n = adaptive(case, args.threshold, max_n, rng)
        verdicts.append(verdict)
        ns.append(n)
    right = Verdict.REGRESSION if case.nominal_pct > 0 else None
    power = np.mean([v is right for v in verdicts]) if right else math.nan
    false = np.mean([v.significant and v is not right for v in verdicts])
    p10, p50, p90 = np.percentile(ns, [10, 50, 90])
    share = {v: np.mean([x is v for x in verdicts]) for v in (Verdict.NO_CHANGE, Verdict.UNDECIDED)}
    return (f"| {case.name} | {100 * math.expm1(delta):+.2f}% | {100 * sd:.2f}% | {100 * robust_sd:.2f}% | "
            f"{fixed_shown} | {planned} | "
            f"{p50:.0f} ({p10:.0f}..{p90:.0f}) | {'-' if math.isnan(power) else f'{power:.0%}'} | "
            f"{false:.1%} | {share[Verdict.NO_CHANGE]:.0%} | {share[Verdict.UNDECIDED]:.0%} | "
            f"{max_n} | {time.monotonic() - started:.0f} s |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=100, help="adaptive runs per case (the issue asks >= 100)")
    parser.add_argument("--threshold", type=float, default=1.0, help="the A/B threshold, %% (default 1)")
    parser.add_argument("--pilot", type=int, default=60, help="pairs measuring each case's noise")
    parser.add_argument("--max-n", type=int, default=200, help="limit of pairs per adaptive run")
    parser.add_argument("--loop-ms", type=float, default=5.0, help="duration of the C loop's base, ms")
    parser.add_argument("--loop-metric", choices=("wall", "cpu"), default="wall",
                        help="what the loop cases measure: wall time, or the child's CPU time (a busy machine)")
    parser.add_argument("--cases", default="", help="comma-separated case names to run (default all)")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    if shutil.which("gcc") is None or shutil.which("sleep") is None:
        print("time_to_verdict: needs gcc and sleep", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="perflab-ttv-") as tmp:
        loop = str(build_loop(Path(tmp)))
        n = loop_iterations(Path(loop), args.loop_ms / 1000)
        cases = [
            Case("loop 5%", [loop, str(n)], [loop, str(round(1.05 * n))], 5.0, args.loop_metric),
            Case("loop 2%", [loop, str(n)], [loop, str(round(1.02 * n))], 2.0, args.loop_metric),
            Case("sleep 5%", ["sleep", "0.010"], ["sleep", "0.0105"], 5.0),
            Case("loop A/A", [loop, str(n)], [loop, str(n)], 0.0, args.loop_metric),
            Case("sleep A/A", ["sleep", "0.010"], ["sleep", "0.010"], 0.0),
        ]
        chosen = {c.strip() for c in args.cases.split(",") if c.strip()}
        print(f"time to verdict: threshold {args.threshold:g}%, alpha {ALPHA}, {args.reps} adaptive runs per case, "
              f"loop of {n} iterations ({args.loop_metric} time), "
              f"fixed n for {POWER:.0%} power from a {args.pilot}-pair pilot")
        print("| case | real change | sd of d | MAD sd of d | fixed n | fixed n at threshold "
              "| adaptive median n (p10..p90) | power | false decisions | no change | undecided | limit | time |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for case in cases:
            if not chosen or case.name in chosen:
                print(run_case(case, args, rng), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
