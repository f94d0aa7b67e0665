#!/usr/bin/env python3
"""Why the tip detector's suspect rule finds a 4-sd step within 2 commits less often after a
young history, term by term, and whether borrowed strength could lift it (stats/tip.py).

1. Decomposition (exact, Gaussian noise). At the second commit after the step the suspect
   test of m = 2 decides (the union with the other tests of the two looks adds < 1 point,
   part 2): √2·(mean of the two − history mean)/sd against the bar t_{k−1}(share/2)·√(1 + 2/k),
   share = the look's rate / 2 scales / 2 rules / 2 suspect tests. Its power is a noncentral
   t (df k − 1, ncp d·√2/√(1 + 2/k)); each row removes one cost: the Bonferroni halvings, the
   estimated mean (√(1 + m/k)), the estimated sd (t_{k−1} instead of the normal quantile).
   A step of d true sds and of d sds of the history's own sample (the bench's reading).
   1b: what spending the rate exactly over m and over the two scales would give back.
2. Simulation with the code's own look (tip.replay), Gaussian noise: the share of series
   suspect (either state) within 2 commits, for positive values (read on both scales, as the
   bench's relative noise) and for values about 0 (one scale), over history lengths.
3. The bound: the looks at the step's two commits raise a false alert with chance at most
   2·rate, so no location-scale invariant rule beats the most powerful invariant test at
   level 2·rate for "both newest commits up by d", the one-sided t test of their mean.
4. Borrowed strength from the within-commit spread (limma's prior, stats/host_prior.fit_prior,
   the within-commit part as covariate): the prior degrees of freedom d0 that the recordings'
   histories support (their between-commit variance of medians on k − 1 df against the
   variance of a median that the within-commit spread predicts), and the power a moderated
   scale on k − 1 + d0 df would give.

Usage: bench/tip_power.py [--history 29] [--series 4000] [--seed 2026] [--sets NAME ...] [--per-commit 10]
       [--null-looks 4000000]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent / "src"))
STEP = 4.0


def m2_power(k: int, share: float, df: float | None = None, mean_known: bool = False,
             sd_known: bool = False) -> tuple[float, float]:
    """(power for a step of STEP true sds, for STEP sds of the history's own sample) of the
    two-sided m = 2 suspect test at per-test ``share``, history k, the scale on ``df``."""
    from scipy.stats import nct, norm, t
    inflate = 1.0 if mean_known else math.sqrt(1.0 + 2.0 / k)
    ncp = STEP * math.sqrt(2.0) / inflate
    if sd_known:
        bar = float(norm.isf(share / 2))
        return float(norm.sf(bar - ncp)), float(norm.sf(bar - ncp))
    df = df or k - 1
    bar = float(t.isf(share / 2, df))
    return float(nct.sf(bar, df, ncp)), float(t.sf(bar - ncp, df))


def decomposition(k: int, rate: float) -> None:
    """Part 1: the m = 2 test's power with each cost removed in turn."""
    alpha = rate / 1000.0
    rows = [("the code: look's rate /2 scales /2 rules /2 suspect tests", alpha / 8, {}),
            ("one scale (no split over values and logs)", alpha / 4, {}),
            ("  and all of the look's suspect half to m = 2", alpha / 2, {}),
            ("  and the whole look's rate to m = 2", alpha, {}),
            ("the code's share, history mean known", alpha / 8, {"mean_known": True}),
            ("the code's share, history sd known (normal bar)", alpha / 8, {"sd_known": True}),
            ("the code's share, mean and sd known", alpha / 8, {"mean_known": True, "sd_known": True})]
    from scipy.stats import norm, t
    print(f"1. the m = 2 suspect test at the step's 2nd commit: {STEP:.0f}-sd step, history {k}, "
          f"{rate:g} false per 1,000 looks")
    print(f"   t_{k - 1} bar at the code's share {t.isf(alpha / 16, k - 1):.3f} vs normal "
          f"{norm.isf(alpha / 16):.3f} (x√(1+2/k) = {math.sqrt(1 + 2 / k):.3f} for the mean)")
    print(f"   {'':<58}{'true sds':>9}{'own sds':>9}")
    for label, share, how in rows:
        power = m2_power(k, share, **how)
        print(f"   {label:<58}{power[0]:>9.1%}{power[1]:>9.1%}")


def exact_spend(k: int, rate: float, looks: int, seed: int) -> None:
    """Part 1b: what a bar spent exactly (not Bonferroni) would recover, on Gaussian null looks:
    the union of the m = 1 and m = 2 suspect tests against the sum of their rates, and the
    union of the m = 2 test on values and on logs against the values' alone, by noise level."""
    from perflab.stats import tip
    rng = np.random.default_rng(seed)
    c1, c2 = tip.suspect_bar(k + 1, 1, rate / 2), tip.suspect_bar(k, 2, rate / 2)

    def m2(x: np.ndarray) -> np.ndarray:
        past = x[:, :k]
        return np.abs(x[:, -2:].mean(1) - past.mean(1)) / past.std(1, ddof=1) * math.sqrt(2.0) > c2
    counts = np.zeros(5)
    for _ in range(looks // 200_000):
        e = rng.standard_normal((200_000, k + 2))
        one = np.abs(e[:, -1] - e[:, :-1].mean(1)) / e[:, :-1].std(1, ddof=1) > c1
        two = m2(e)
        counts += [one.sum(), two.sum(), (one | two).sum(),
                   (two | m2(np.log1p(0.01 * e))).sum(), (two | m2(np.log1p(0.1 * e))).sum()]
    n = looks // 200_000 * 200_000
    print(f"   exact spend ({n:,} Gaussian null looks): m = 1 or 2 fires {counts[2] / n:.3e} against the "
          f"Bonferroni sum {(counts[0] + counts[1]) / n:.3e} ({counts[2] / (counts[0] + counts[1]):.1%}); "
          f"m = 2 on values or logs {counts[3] / counts[1]:.2f}x (1% noise), {counts[4] / counts[1]:.2f}x (10%) "
          "its rate on values alone (Bonferroni: 2x)")


def simulated(histories: list[int], series: int, rate: float, seed: int) -> None:
    """Part 2: the share suspect within 2 commits by tip.replay on Gaussian noise."""
    from perflab.stats import tip
    print(f"\n2. tip.replay on Gaussian noise, {series} series each: suspect (either state) within 2 "
          "commits of a step of 4 true sds / 4 of the history's own sds")
    print(f"   {'history':>8}{'both scales (1 + 1% noise)':>30}{'one scale (noise about 0)':>30}")
    for k in histories:
        cells = []
        for positive in (True, False):
            rng, hits = np.random.default_rng(seed), np.zeros(2)
            for _ in range(series):
                e = rng.standard_normal(k + 2)
                for j, d in enumerate((STEP, STEP * e[:k].std(ddof=1))):
                    x = e + np.r_[np.zeros(k), np.full(2, d)]
                    looks = tip.replay(1.0 + 0.01 * x if positive else x, first=k + 1, false_rate=rate)
                    hits[j] += any(f.status in (tip.SUSPECT, tip.CONFIRMED) for f in looks)
            cells.append(f"{hits[0] / series:.1%} / {hits[1] / series:.1%}")
        print(f"   {k:>8}{cells[0]:>30}{cells[1]:>30}")


def bound(k: int, rate: float) -> None:
    """Part 3: the most powerful invariant test at level 2·rate, and the history it needs."""
    from scipy.stats import nct, t
    level = 2 * rate / 1000.0

    def best(h: int) -> float:   # the two-sample t of the pair against the history, pooled sd on h df
        return float(nct.sf(t.isf(level, h), h, STEP * math.sqrt(2.0) / math.sqrt(1.0 + 2.0 / h)))
    print(f"\n3. bound: any invariant rule at {rate:g} per 1,000 looks, {STEP:.0f}-sd step, within 2 commits "
          f"<= the one-sided t test at level {level:g}: history {k}: {best(k):.1%}")
    from scipy.optimize import brentq
    share = brentq(lambda a: m2_power(k, a)[0] - 0.9, 1e-9, 0.5)
    print(f"   the m = 2 suspect test alone reaches 90% (true sds) at history {k} with a share of "
          f"{1000 * share:.3f} per 1,000 ({share / (rate / 1000.0):.0%} of the look's rate; the code gives it 12.5%)")
    need = {}
    for share, label in ((rate / 8000.0, "the code's share"), (rate / 4000.0, "one scale")):
        need[label] = next((h for h in range(4, 2001) if m2_power(h, share)[0] >= 0.9), None)
    print("   history from which the m = 2 test alone (a lower bound of the union) reaches 90% (true sds): "
          + ", ".join(f"{label} {h}" for label, h in need.items()))


def borrowed(sets: list[str], k: int, per_commit: int) -> None:
    """Part 4: limma's prior for the history's variance from the within-commit spread."""
    import changepoints_accuracy as accuracy

    from perflab.stats.host_prior import fit_prior
    s2, within = [], []
    for s in sets:
        for x in accuracy.load_noise(ROOT / "data" / s).values():
            n = min(x.size // per_commit, k)
            blocks = (x[:n * per_commit] / np.median(x)).reshape(n, per_commit)
            s2.append(float(np.median(blocks, axis=1).var(ddof=1)))
            within.append(float(blocks.var(axis=1, ddof=1).mean()) / per_commit)
    ratio = np.array(s2) / np.array(within)
    prior = fit_prior(s2, [k - 1] * len(s2), within)
    if prior is None:
        raise SystemExit("tip_power: fewer than 3 recordings: no prior to fit")
    print(f"\n4. borrowed strength: {len(s2)} recordings of {', '.join(sets)}, histories of {k} commits of "
          f"{per_commit}: between-commit variance / within-commit variance of a mean, quantiles 10/50/90%: "
          + " / ".join(f"{q:.2f}" for q in np.quantile(ratio, [0.1, 0.5, 0.9])))
    print(f"   limma's prior (trend in the within part, slope {prior.slope:.2f}): d0 = {prior.d0:.1f}; "
          f"a moderated scale on {k - 1} + d0 df gives the m = 2 test "
          f"{m2_power(k, 0.5e-3 / 8, df=k - 1 + prior.d0)[0]:.1%} (was {m2_power(k, 0.5e-3 / 8)[0]:.1%}); "
          f"90% needs {next(d for d in range(k - 1, 5000) if m2_power(k, 0.5e-3 / 8, df=d)[0] >= 0.9)} df")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=29)
    parser.add_argument("--series", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--per-commit", type=int, default=10)
    parser.add_argument("--null-looks", type=int, default=4_000_000, help="Gaussian null looks of part 1b")
    parser.add_argument("--sets", nargs="+", default=["noise", "noise-quiet", "noise-idle"], metavar="NAME")
    args = parser.parse_args()
    if args.history < 4 or args.series < 1 or args.per_commit < 2 or args.null_looks < 200_000:
        raise SystemExit("tip_power: --history >= 4, --series >= 1, --per-commit >= 2, --null-looks >= 200000")
    missing = [s for s in args.sets if not any((ROOT / "data" / s).glob("*.csv"))]
    if missing:
        raise SystemExit(f"tip_power: no recordings under bench/data/ for {', '.join(missing)}")
    from perflab.stats import tip
    rate = tip.FALSE_RATE_PER_1000
    decomposition(args.history, rate)
    exact_spend(args.history, rate, args.null_looks, args.seed)
    simulated([args.history, 50, 60, 70, 80, 100], args.series, rate, args.seed)
    bound(args.history, rate)
    borrowed(args.sets, args.history, args.per_commit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
