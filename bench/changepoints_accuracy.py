#!/usr/bin/env python3
"""Change-point accuracy on real noise: perflab's methods, ruptures, Otava and "no change".

1. False alarms: every method on the change-free recordings (the same command repeated,
   nothing changed), as change points per 1,000 points, for three sets separately:
     idle    bench/data/noise-idle/: nothing else running, each series after 20 warm-up
             repetitions -- the false alarms on change-free real noise (the target's
             figure), though even here the machine has regimes (see its README);
     quiet   bench/data/noise-quiet/: almost idle (one short test run overlapped), no
             warm-up;
     loaded  bench/data/noise/: recorded while others' test suites loaded the machine;
             several series hold real load regimes (see its README), so points there
             are partly real changes of the machine, not of the command.
2. Synthetic families on real noise. The noise is the loaded recordings' own: each one's
   relative residuals about its running median (9 points, so its load regimes do not
   become unmarked changes in the level), divided by their running robust scale (1.4826·
   the median |residual| over ±20 values, `standardised`, so the recordings' own changes
   of spread -- 2x to 100x between their calm and loaded stretches -- do not become
   unmarked changes of spread at the joins of the blocks), resampled in blocks of 20
   (keeping the short-range correlation, heavy tails and outliers: a lone outlier barely
   moves a median of 41 values) and rescaled to a robust CoV of 1-5%, on a level of 100.
   So the noise of every family is stationary in spread except where a change is
   labelled (the 90th/10th percentile ratio of the robust scales of its blocks of 20:
   1.5-5.3, median 2.4, after; 2-118, median 5.4, before; Gaussian noise gives about 1.8). Families:
     steps        1-3 steps of 1-20% (log-uniform size, random sign)
     trend        a linear drift of 5-20% over the series, and 1-2 steps of 5-20%
     seasonality  a sine of 1-5% amplitude, period 10-100, and 1-2 steps of 5-20%
     variance     the noise's sd multiplied by 2-4 (or divided) at 1-2 points, no step
     outliers     1-2 steps of 5-20%, plus 2% of the points 5-50x the noise sd off
     several      4-8 steps of 5-20%, at least 30 points apart
   Truth: the steps (and the variance family's spread changes); trends, seasons and
   outliers are not changes. Changes are >= 20 points from each other and the ends.
3. Scores per family: F1 as TCPDBench (margin ±5, index 0 counted: the accuracy test's
   tcpd_f1) and covering (TCPDBench's: Σ|A|·max Jaccard(A, A')/n over true segments A).

Methods: perflab's mosum, e-divisive, pelt, binseg (defaults), and mosum+spread (mosum
with its search for changes in spread, `detect(spread=True)`, off by default); ruptures (the `bench`
extra) Pelt and Binseg, model "l2", min_size 2, with the penalty of ruptures' own examples
and docs, pen = σ²·ln n·2 (BIC), σ from the MAD of first differences; Otava
(apache-otava, compute_change_points, window 50, max p 0.001: `otava analyze`'s defaults)
in its own venv as bench/changepoints_vs_otava sets it up; "no change points".

4. Calibration on simulated change-free noise (Gaussian, Student t 2 df, AR(1) 0.6 and
   0.9, ARFIMA(0, 0.3, 0) long memory, a linear trend, a season, one spike): false change
   points per 1,000 points.

Usage: bench/changepoints_accuracy.py [--series 30] [--length 300] [--seed 2026] [--no-otava]
       [--sim-series 50] [--verbose]
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "stats"))  # the accuracy test's scoring
#: The change-free recording sets, each scored separately (see their README.md files).
NOISE_SETS = {"idle": ROOT / "bench" / "data" / "noise-idle",
              "quiet": ROOT / "bench" / "data" / "noise-quiet",
              "loaded": ROOT / "bench" / "data" / "noise"}
PERFLAB = ("mosum", "e-divisive", "pelt", "binseg")
FAMILIES = ("steps", "trend", "seasonality", "variance", "outliers", "several")

OTAVA_WORKER = r"""
import json, sys
from otava.analysis import compute_change_points
series = json.load(open(sys.argv[1]))
out = []
for values in series:
    points, _ = compute_change_points(list(values), window_len=50, max_pvalue=0.001, min_magnitude=0.0)
    out.append([int(p.index) for p in points])
print(json.dumps(out))
"""


def load_noise(folder: Path) -> dict[str, np.ndarray]:
    out = {}
    for path in sorted(folder.glob("*.csv")):
        lines = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
        column = lines[0].split(",").index("value")
        out[path.stem] = np.array([float(ln.split(",")[column]) for ln in lines[1:]])
    if not out:
        raise SystemExit(f"no recordings in {folder}: run bench/record_noise.py --out {folder}")
    return out


def residuals(x: np.ndarray) -> np.ndarray:
    """Relative residuals about the running median (9 points): the noise without regimes."""
    from scipy.ndimage import median_filter
    med = median_filter(x, size=9, mode="nearest")
    return (x - med) / np.median(x)


#: Values each side of a residual over which its local spread is read (`standardised`):
#: one block either side, so spread that varies more slowly than a block goes.
SCALE_HALF = 20


def robust_scale(v: np.ndarray) -> float:
    """1.4826·MAD, or the mean absolute deviation's Gaussian equivalent when the MAD is 0
    (quantised values, e.g. timer ticks); 0 only for constant values."""
    dev = np.abs(v - np.median(v))
    mad = float(np.median(dev))
    return 1.4826 * mad if mad > 0 else float(dev.mean()) * math.sqrt(math.pi / 2)


def standardised(r: np.ndarray, half: int = SCALE_HALF) -> np.ndarray:
    """Residuals divided by their running robust scale (over ±`half` values), then by
    their overall one: noise of spread 1 all along.

    A recording's spread varies along it (load regimes, a slower machine is also a noisier
    one), so blocks drawn from different stretches would put unlabelled changes of spread
    at their joins, and a detector of spread changes would be scored against a truth that
    misses changes really in the series. Dividing by the local scale removes variation
    slower than a block; what lies within a block -- heavy tails, outliers, short-range
    correlation -- stays (a lone outlier barely moves a median of 2·half+1 values)."""
    from scipy.ndimage import median_filter, uniform_filter1d
    size = 2 * half + 1
    a = np.abs(r - np.median(r))
    local = 1.4826 * median_filter(a, size=size, mode="mirror")
    # quantised residuals: the median of |r| is 0 where most values sit on the level
    fallback = uniform_filter1d(a, size=size, mode="mirror") * math.sqrt(math.pi / 2)
    local = np.where(local > 0, local, fallback)
    e = np.divide(r, local, out=np.zeros_like(r), where=local > 0)
    overall = robust_scale(e)
    return e / overall if overall > 0 else e


def block_noise(rng, pool: list[np.ndarray], n: int, block: int = 20) -> np.ndarray:
    """Blocks of one recording's standardised residuals (`standardised`: spread 1 all
    along, shape kept), scaled to a robust CoV of 1-5%."""
    r = pool[int(rng.integers(len(pool)))]
    starts = rng.integers(0, r.size - block, size=n // block + 1)
    e = np.concatenate([r[s:s + block] for s in starts])[:n]
    return e * rng.uniform(0.01, 0.05)


def place(rng, n: int, k: int, gap: int) -> list[int]:
    """k uniform positions in [20, n-20], >= gap apart (sorted draws spread by i·gap)."""
    free = n - 40 - (k - 1) * gap
    if free < 0:
        raise ValueError(f"{k} changes {gap} apart do not fit in {n} points")
    return [20 + int(v) + i * gap for i, v in enumerate(sorted(rng.integers(0, free + 1, size=k)))]


def steps(rng, n: int, changes: list[int], lo: float, hi: float) -> np.ndarray:
    level = np.full(n, 100.0)
    for c in changes:
        size = math.exp(rng.uniform(math.log(lo), math.log(hi))) * rng.choice([-1, 1])
        level[c:] *= 1 + size
    return level


def make(rng, family: str, n: int, pool: list[np.ndarray]) -> tuple[np.ndarray, list[int]]:
    e = block_noise(rng, pool, n)
    if family == "steps":
        c = place(rng, n, int(rng.integers(1, 4)), 20)
        return steps(rng, n, c, 0.01, 0.20) * (1 + e), c
    if family == "trend":
        c = place(rng, n, int(rng.integers(1, 3)), 20)
        drift = 1 + rng.uniform(0.05, 0.20) * rng.choice([-1, 1]) * np.linspace(0, 1, n)
        return steps(rng, n, c, 0.05, 0.20) * drift * (1 + e), c
    if family == "seasonality":
        c = place(rng, n, int(rng.integers(1, 3)), 20)
        period, amp = rng.uniform(10, 100), rng.uniform(0.01, 0.05)
        season = 1 + amp * np.sin(2 * np.pi * np.arange(n) / period + rng.uniform(0, 2 * np.pi))
        return steps(rng, n, c, 0.05, 0.20) * season * (1 + e), c
    if family == "variance":
        c = place(rng, n, int(rng.integers(1, 3)), 20)
        scale = np.ones(n)
        for p in c:
            scale[p:] *= rng.uniform(2, 4) ** rng.choice([-1, 1])
        return 100 * (1 + e * scale), c
    if family == "outliers":
        c = place(rng, n, int(rng.integers(1, 3)), 20)
        x = steps(rng, n, c, 0.05, 0.20) * (1 + e)
        sd = 100 * max(1.4826 * np.median(np.abs(e - np.median(e))), 0.002)
        wild = rng.choice(n, size=max(1, n // 50), replace=False)
        x[wild] += sd * rng.uniform(5, 50, wild.size) * rng.choice([-1, 1], wild.size)
        return x, c
    if family == "several":
        c = place(rng, n, int(rng.integers(4, 9)), 30)
        return steps(rng, n, c, 0.05, 0.20) * (1 + e), c
    raise ValueError(family)


def describe_points(x: np.ndarray, cuts: list[int]) -> list[str]:
    """Each point as 'index (before -> after, lengths)': what a reader checks by eye."""
    bounds, med = [0, *cuts, x.size], float(np.median(x))
    return [f"{c} ({np.median(x[a:c]) / med:.3f} -> {np.median(x[c:b]) / med:.3f}, {c - a}|{b - c})"
            for a, c, b in zip(bounds, bounds[1:], bounds[2:])]


def covering(truth: list[int], found: list[int], n: int) -> float:
    """TCPDBench's covering of the true partition by the found one."""
    def segments(cuts):
        b = [0, *sorted(set(cuts)), n]
        return [(lo, hi) for lo, hi in zip(b, b[1:]) if hi > lo]
    got = segments(found)
    total = 0.0
    for a, b in segments(truth):
        best = max((max(0, min(b, d) - max(a, c)) / (max(b, d) - min(a, c)) for c, d in got),
                   default=0.0)
        total += (b - a) * best
    return total / n


def fractional_noise(rng, n: int, d: float, burn: int = 5000) -> np.ndarray:
    """ARFIMA(0, d, 0) noise of unit sd: Gaussian innovations through the MA(∞) weights
    ψ_k = ψ_{k-1}(k-1+d)/k of (1 − B)^(−d), truncated at n + burn (long memory: the
    autocorrelation decays as k^(2d−1), the slow wander of real timing series)."""
    m = n + burn
    psi = np.cumprod(np.concatenate([[1.0], (np.arange(1, m) - 1 + d) / np.arange(1, m)]))
    e = rng.normal(size=m)
    x = np.fft.irfft(np.fft.rfft(e, 2 * m) * np.fft.rfft(psi, 2 * m), 2 * m)[burn:m]
    return x / math.sqrt(float(np.sum(psi ** 2)))


#: The kinds of simulated change-free noise (`simulated`).
SIM_KINDS = ("gaussian", "student-t2", "ar1-0.6", "ar1-0.9", "arfima-0.3", "trend", "season", "spike")


def simulated(rng, kind: str, n: int) -> np.ndarray:
    """Change-free simulated noise of a known kind (level 100, sd 1)."""
    e = rng.normal(size=n)
    if kind == "gaussian":
        return 100 + e
    if kind == "student-t2":
        return 100 + rng.standard_t(2, size=n)
    if kind == "ar1-0.6":
        x = np.empty(n)
        x[0] = e[0]
        for i in range(1, n):
            x[i] = 0.6 * x[i - 1] + e[i]
        return 100 + x
    if kind == "ar1-0.9":
        x = np.empty(n)
        x[0] = e[0] / math.sqrt(1 - 0.81)
        for i in range(1, n):
            x[i] = 0.9 * x[i - 1] + e[i]
        return 100 + x * math.sqrt(1 - 0.81)  # unit marginal sd
    if kind == "arfima-0.3":
        return 100 + fractional_noise(rng, n, 0.3)
    if kind == "trend":
        return 100 + e + np.linspace(0, 10, n)
    if kind == "season":
        return 100 + e + 2 * np.sin(np.arange(n) * 2 * np.pi / 50)
    if kind == "spike":
        e[n // 2] += 50
        return 100 + e
    raise ValueError(kind)


def ruptures_methods():
    try:
        import ruptures as rpt
    except ImportError:
        print("ruptures not installed (pip install -e .[bench]): its columns are skipped")
        return {}
    from perflab.stats.penalised import robust_noise_sd

    def run(algo):
        def f(x):
            if x.size < 4:
                return []
            sigma = robust_noise_sd(x) or float(np.std(x)) or 1.0
            bkps = algo(model="l2", min_size=2).fit(x).predict(pen=2 * math.log(x.size) * sigma ** 2)
            return [b for b in bkps if b < x.size]
        return f
    return {"ruptures-pelt": run(rpt.Pelt), "ruptures-binseg": run(rpt.Binseg)}


def otava(series: list[np.ndarray]) -> list[list[int]] | None:
    loader = importlib.machinery.SourceFileLoader("cp_vs_otava", str(ROOT / "bench" / "changepoints_vs_otava"))
    spec = importlib.util.spec_from_loader("cp_vs_otava", loader)
    module = importlib.util.module_from_spec(spec)
    argv = sys.argv
    try:
        sys.argv = [argv[0]]
        loader.exec_module(module)
    finally:
        sys.argv = argv
    python = module.otava_python()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([x.tolist() for x in series], f)
    try:
        done = subprocess.run([str(python), "-c", OTAVA_WORKER, f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if done.returncode != 0:
        print(f"Otava worker failed: {done.stderr.strip()[-500:]}")
        return None
    return json.loads(done.stdout)


def main() -> int:
    from test_changepoints_accuracy import tcpd_f1

    from perflab.model.methods import MosumParams
    from perflab.stats.changepoints import detect

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=30, help="series per family")
    parser.add_argument("--length", type=int, default=300)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--no-otava", action="store_true")
    parser.add_argument("--sim-series", type=int, default=50, help="simulated noise series per kind")
    parser.add_argument("--verbose", action="store_true",
                        help="list the default method's points on each real recording")
    args = parser.parse_args()

    recordings = {name: load_noise(folder) for name, folder in NOISE_SETS.items()}
    methods = {m: (lambda x, m=m: [c.index for c in detect(x, method=m)]) for m in PERFLAB}
    # mosum with its search for changes in spread as well (off by default: stats/mosum.py)
    methods["mosum+spread"] = lambda x: [c.index for c in detect(x, method="mosum", params=MosumParams(spread=True))]
    methods |= ruptures_methods()
    names = [*methods, "otava", "no change"]

    rng = np.random.default_rng(args.seed)
    # the synthetic noise comes from the loaded set: its residuals about the running
    # median, so the load regimes themselves do not enter (see `residuals`), divided by
    # their running scale, so neither do their changes of spread (see `standardised`)
    pool = [standardised(residuals(x)) for x in recordings["loaded"].values()]
    suite = {f: [make(rng, f, args.length, pool) for _ in range(args.series)] for f in FAMILIES}
    real = {name: list(series.values()) for name, series in recordings.items()}

    found: dict[str, dict[str, list[list[int]]]] = {m: {} for m in names}
    for m, fn in methods.items():
        for name, flat in real.items():
            found[m][name] = [fn(x) for x in flat]
        for f in FAMILIES:
            found[m][f] = [fn(x) for x, _ in suite[f]]
    everything = [x for flat in real.values() for x in flat] + [x for f in FAMILIES for x, _ in suite[f]]
    ot = None if args.no_otava else otava(everything)
    if ot is None:
        names.remove("otava")
        print("Otava: not run; e-divisive is perflab's implementation of its method")
    else:
        for name, flat in real.items():
            found["otava"][name], ot = ot[:len(flat)], ot[len(flat):]
        for f in FAMILIES:
            found["otava"][f], ot = ot[:args.series], ot[args.series:]
    for name, flat in real.items():
        found["no change"][name] = [[] for _ in flat]
    for f in FAMILIES:
        found["no change"][f] = [[] for _ in suite[f]]

    for name, flat in real.items():
        points = sum(x.size for x in flat)
        print(f"\nReal change-free recordings, {name} ({NOISE_SETS[name].relative_to(ROOT)}): "
              f"{len(flat)} series, {points:,} points "
              f"({', '.join(sorted({p.split('-')[0] for p in recordings[name]}))}); false change points:")
        print(f"{'method':<18}{'found':>7}{'per 1,000 points':>18}{'series with any':>17}")
        for m in names:
            runs = found[m][name]
            print(f"{m:<18}{sum(map(len, runs)):>7}{1000 * sum(map(len, runs)) / points:>18.2f}"
                  f"{sum(1 for r in runs if r):>12}/{len(runs)}")
        if args.verbose:
            print(f"  {PERFLAB[0]}'s points: index (segment medians before -> after, as multiples "
                  "of the series' median; segment lengths)")
            for (series, x), runs in zip(recordings[name].items(), found[PERFLAB[0]][name]):
                if runs:
                    print(f"  {series}: " + ", ".join(describe_points(x, runs)))

    kinds = SIM_KINDS
    print(f"\nSimulated change-free noise, {args.sim_series} series x 1,000 points each "
          "(trend: +10 sd over the series; season: 2 sd, period 50; spike: one +50 sd value;"
          " ar1-0.9 and arfima-0.3 long memory, unit sd); false change points per 1,000 points:")
    print(f"{'method':<18}" + "".join(f"{k:>12}" for k in kinds))
    sim_rng = np.random.default_rng(args.seed + 1)
    sims = {k: [simulated(sim_rng, k, 1000) for _ in range(args.sim_series)] for k in kinds}
    for m, fn in methods.items():
        rates = [1000 * sum(len(fn(x)) for x in sims[k]) / (1000 * args.sim_series) for k in kinds]
        print(f"{m:<18}" + "".join(f"{r:>12.2f}" for r in rates))

    summary = {m: [] for m in names}
    for f in FAMILIES:
        truth = [c for _, c in suite[f]]
        print(f"\nfamily {f}: {args.series} series x {args.length} points, "
              f"{sum(map(len, truth))} true changes; margin ±5")
        print(f"{'method':<18}{'found':>7}{'F1':>7}{'covering':>10}")
        for m in names:
            runs = found[m][f]
            f1 = statistics.mean(tcpd_f1(tuple(t), r) for t, r in zip(truth, runs))
            cov = statistics.mean(covering(t, r, args.length) for t, r in zip(truth, runs))
            summary[m].append((f1, cov))
            print(f"{m:<18}{sum(map(len, runs)):>7}{f1:>7.3f}{cov:>10.3f}")

    print("\nsummary: mean over families of F1 / covering; worst family margin over 'no change'")
    base = summary["no change"]
    for m in names:
        f1 = statistics.mean(s[0] for s in summary[m])
        cov = statistics.mean(s[1] for s in summary[m])
        margin = min(min(s[0] - b[0], s[1] - b[1]) for s, b in zip(summary[m], base))
        print(f"{m:<18}F1 {f1:.3f}  covering {cov:.3f}  worst margin {margin:+.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
