#!/usr/bin/env python3
"""The tip detector's latency and false alerts on this machine's real noise (stats/tip.py).

A commit's value is the median of --per-commit consecutive repetitions of a recording (as
perflab records a commit: the median of its run's samples; 1 = every repetition a commit).

Latency: a history of --history commits of real noise (a contiguous block of a recording's
relative residuals about its running median, so its memory and tails are kept), then a
step of 2, 3, 4 or 5 sds and 10 more
commits; the robot looks at each commit after the step. Commits until "suspect" (either state) and until
"confirmed": median and p90 (">10": not within 10), and the share suspect within 2 and
confirmed within 5 (the targets: >= 90% each for 4 sd). An sd (--scale) is the history's
own sd, or the recording's robust sd (1.4826·MAD of its commits' residuals: the bulk of
the noise; its spikes make the plain sd 1.5-16 times larger).

False alerts: the robot looks at every commit of each raw recording (bench/data/noise,
noise-quiet, noise-idle), remembering the levels it confirmed (stats/tip.watch, as
`alerts --update` does); an alert is a distinct first commit of a suspect or of a
confirmed finding, counted apart. Per 1,000 looks, all of them, and those whose start lies outside the regimes a
set's labels.json annotates (when it has one).

Usage: bench/tip_latency.py [--trials 200] [--history 50] [--per-commit 1] [--seed 2026] [--scale both]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent / "src"))
SETS = ("noise", "noise-quiet", "noise-idle")
STEPS = (2.0, 3.0, 4.0, 5.0)
AFTER = 10


def first_commit(looks: list, states: tuple[str, ...]) -> int:
    """1-based commit after the step at which a look first reached one of ``states``; AFTER+1: never."""
    return next((i + 1 for i, f in enumerate(looks) if f.status in states), AFTER + 1)


def step_sd(r: np.ndarray, history: np.ndarray, scale: str) -> float:
    """The sd a step is counted in: the history's own sd (what the robot sees) or the
    recording's robust sd (1.4826·MAD: the bulk of its noise, without its spikes)."""
    if scale == "sd":
        return float(history.std(ddof=1))
    return float(1.482602 * np.median(np.abs(r - np.median(r))))


def latency(noises: list[np.ndarray], history: int, trials: int, rng: np.random.Generator, scale: str) -> None:
    from perflab.stats import tip
    print(f"latency: {trials} series per step, history {history} commits of real noise, then the step "
          f"(in {'the history' if scale == 'sd' else 'robust'} sds)")
    print(f"{'step':>5}{'suspect med/p90':>18}{'<= 2':>7}{'confirmed med/p90':>20}{'<= 5':>7}")
    for d in STEPS:
        sus, con = [], []
        for _ in range(trials):
            r = noises[rng.integers(len(noises))]
            start = rng.integers(0, r.size - history - AFTER)
            e = r[start:start + history + AFTER]
            sd = step_sd(r, e[:history], scale)
            x = 1.0 + e + np.r_[np.zeros(history), np.full(AFTER, d * sd)]
            looks = tip.replay(x, first=history + 1)
            sus.append(first_commit(looks, (tip.SUSPECT, tip.CONFIRMED)))
            con.append(first_commit(looks, (tip.CONFIRMED,)))

        def text(v: list[int]) -> str:
            med, p90 = (int(np.percentile(v, q, method="higher")) for q in (50, 90))
            return "/".join(str(c) if c <= AFTER else f">{AFTER}" for c in (med, p90))
        print(f"{d:>4.0f}σ{text(sus):>18}{np.mean(np.array(sus) <= 2):>7.0%}"
              f"{text(con):>20}{np.mean(np.array(con) <= 5):>7.0%}")


def oracle(noises: list[np.ndarray], step: float = 4.0, alpha: float = 1e-3) -> None:
    """The best the newest two commits can do: a rule that knows the level and each
    recording's own noise law (its residuals' pairs) sets its bar at that law's 1 - alpha
    quantile (with ~400 pairs: near their largest, so below the true bar: the power is, if
    anything, overstated); its power over all recordings (the share of series the latency
    table counts) and in the median recording, for the mean of the two and for the
    smaller of two on one side."""
    rules = {"mean of 2": lambda p: np.abs(p.mean(1)),
             "both beyond": lambda p: np.where(np.sign(p[:, 0]) == np.sign(p[:, 1]), np.abs(p).min(1), 0.0)}
    print(f"\noracle (level and noise law known), {step:.0f}-sd step at the newest 2 commits, "
          f"{1000 * alpha:.0f} false per 1,000 looks: power over all / in the median recording")
    for name, rule in rules.items():
        for scale in ("sd", "robust"):
            power = []
            for r in noises:
                e = r - np.median(r)
                pairs = np.c_[e[:-1], e[1:]]
                bar = np.quantile(rule(pairs), 1 - alpha)
                power.append(np.mean(rule(pairs + step * step_sd(e, e, scale)) > bar))
            print(f"  {name:<12} {scale:<7} sds  {np.mean(power):4.0%} / {np.median(power):4.0%}")


def commits(x: np.ndarray, per_commit: int) -> np.ndarray:
    """Medians of consecutive blocks of ``per_commit`` repetitions: one value per commit."""
    n = x.size // per_commit
    return np.asarray(np.median(x[:n * per_commit].reshape(n, per_commit), axis=1))


def false_alerts(folder: Path, per_commit: int) -> tuple[int, dict[str, int], dict[str, int]]:
    """(looks, alerts by state, of them outside the set's labelled regimes) over its recordings.
    A start inside a labelled regime, or within 5 repetitions (and one commit) of it, is not outside."""
    import changepoints_accuracy as accuracy

    from perflab.stats import tip
    labels_file = folder / "labels.json"
    labels = json.loads(labels_file.read_text())["regimes"] if labels_file.is_file() else {}
    looks, alerts, outside = 0, {tip.SUSPECT: 0, tip.CONFIRMED: 0}, {tip.SUSPECT: 0, tip.CONFIRMED: 0}
    for name, raw in accuracy.load_noise(folder).items():
        found = tip.watch(commits(raw, per_commit))
        looks += len(found)
        margin = 5 + per_commit
        spans = [(r["first"] - margin, r["end"] + margin) for r in labels.get(name, [])]
        for state in alerts:
            starts = {f.start for f in found if f.status == state}
            alerts[state] += len(starts)
            outside[state] += sum(1 for s in starts if not any(a <= s * per_commit <= b for a, b in spans))
    return looks, alerts, outside


def main() -> int:
    import changepoints_accuracy as accuracy
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--history", type=int, default=50)
    parser.add_argument("--per-commit", type=int, default=1, help="repetitions per commit (their median)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--scale", choices=("sd", "robust", "both"), default="both",
                        help="a step's sd: the history's sd, the recording's robust sd, or each in turn")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    noises = [accuracy.residuals(commits(x, args.per_commit))
              for s in SETS for x in accuracy.load_noise(ROOT / "data" / s).values()]
    print(f"one commit = the median of {args.per_commit} repetition(s)")
    for scale in ("sd", "robust") if args.scale == "both" else (args.scale,):
        latency(noises, args.history, args.trials, rng, scale)
    oracle(noises)
    print("\nfalse alerts per 1,000 looks (new commits) on the recordings: suspect / confirmed")
    for s in SETS:
        looks, alerts, outside = false_alerts(ROOT / "data" / s, args.per_commit)
        print(f"  {s:<12}{looks:>6} looks  all {1000 * alerts['suspect'] / looks:5.2f} / "
              f"{1000 * alerts['confirmed'] / looks:5.2f}   outside labelled regimes "
              f"{1000 * outside['suspect'] / looks:5.2f} / {1000 * outside['confirmed'] / looks:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
