#!/usr/bin/env python3
"""The tip detector's latency and false alerts on this machine's real noise (stats/tip.py).

Latency: a history of --history commits of real noise (a contiguous block of a recording's
relative residuals about its running median, so its memory and tails are kept), then a
step of 2, 3, 4 or 5 robust sds (1.4826·MAD of the residuals) and 10 more commits; the
robot looks at each commit after the step. Commits until "suspect" (either state) and until
"confirmed": median and p90 (">10": not within 10), and the share suspect within 2 and
confirmed within 5 (the targets: >= 90% each for 4 sd).

False alerts: the robot looks at every commit of each raw recording (bench/data/noise,
noise-quiet, noise-idle); an alert is a distinct first commit of a suspect or confirmed
finding. Per 1,000 looks, all of them, and those whose start lies outside the regimes a
set's labels.json annotates (when it has one).

Usage: bench/tip_latency.py [--trials 200] [--history 50] [--seed 2026]
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


def latency(noises: list[np.ndarray], history: int, trials: int, rng: np.random.Generator) -> None:
    from perflab.stats import tip
    print(f"latency: {trials} series per step, history {history} commits of real noise, then the step")
    print(f"{'step':>5}{'suspect med/p90':>18}{'<= 2':>7}{'confirmed med/p90':>20}{'<= 5':>7}")
    for d in STEPS:
        sus, con = [], []
        for _ in range(trials):
            r = noises[rng.integers(len(noises))]
            start = rng.integers(0, r.size - history - AFTER)
            e = r[start:start + history + AFTER]
            sd = 1.482602 * np.median(np.abs(r - np.median(r)))
            x = 1.0 + e + np.r_[np.zeros(history), np.full(AFTER, d * sd)]
            looks = tip.replay(x, first=history + 1)
            sus.append(first_commit(looks, (tip.SUSPECT, tip.CONFIRMED)))
            con.append(first_commit(looks, (tip.CONFIRMED,)))

        def text(v: list[int]) -> str:
            med, p90 = (int(np.percentile(v, q, method="higher")) for q in (50, 90))
            return "/".join(str(c) if c <= AFTER else f">{AFTER}" for c in (med, p90))
        print(f"{d:>4.0f}σ{text(sus):>18}{np.mean(np.array(sus) <= 2):>7.0%}"
              f"{text(con):>20}{np.mean(np.array(con) <= 5):>7.0%}")


def false_alerts(folder: Path) -> tuple[int, int, int]:
    """(looks, alerts, alerts outside the set's labelled regimes) over the set's recordings."""
    import changepoints_accuracy as accuracy

    from perflab.stats import tip
    labels_file = folder / "labels.json"
    labels = json.loads(labels_file.read_text())["regimes"] if labels_file.is_file() else {}
    looks = alerts = outside = 0
    for name, x in accuracy.load_noise(folder).items():
        found = tip.replay(x)
        looks += len(found)
        starts = {f.start for f in found if f.status in (tip.SUSPECT, tip.CONFIRMED)}
        alerts += len(starts)
        regimes = labels.get(name, [])
        outside += sum(1 for s in starts if not any(a - 5 <= s <= b + 5 for a, b in regimes))
    return looks, alerts, outside


def main() -> int:
    import changepoints_accuracy as accuracy
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--history", type=int, default=50)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    noises = [accuracy.residuals(x) for s in SETS for x in accuracy.load_noise(ROOT / "data" / s).values()]
    latency(noises, args.history, args.trials, rng)
    print("\nfalse alerts per 1,000 looks (new commits) on the raw recordings")
    for s in SETS:
        looks, alerts, outside = false_alerts(ROOT / "data" / s)
        print(f"  {s:<12}{looks:>6} looks  {1000 * alerts / looks:5.2f} all  "
              f"{1000 * outside / looks:5.2f} outside labelled regimes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
