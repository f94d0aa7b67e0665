#!/usr/bin/env python3
"""Gradual changes on resampled real noise: what bisect names, and what history finds.

The noise is this machine's change-free recordings (bench/data/noise-idle: 24 series of 400
runs of one unchanged command each), used in their own order from a random start, so the
drift and regimes of the machine within seconds come with them (runs beside each other see
the same state, as bisect's pairs do).

1. Bisect (perflab.analysis.bisect's search and measuring, the benchmark simulated): 40
   commits; the change is a step of 4-10 robust sds of the recording, carried by 1-5
   consecutive commits at a random place, each commit's share drawn from a flat Dirichlet
   (so some carry little). A run of commit i reads the next value of the recording times
   the level at i. The commits an answer names are those of its gradual shares shown
   material (model.report.bisect.material: a share's lower bound at least 20%; on a tree
   before it, the share itself) when it reports a gradual change, else its first new commit.
   Figures: answers naming a commit whose true share is under 20% (the target: under 5%),
   and of them those that name it as the one commit of the change; answers naming every
   commit of 20% or more; answers with no commit (undecided, or spread with no share shown
   material); runs per bisect. --explain prints each trial's true shares and probes.
2. History (stats.changepoints.detect as `perflab history` calls it: the medians of 3 runs
   a commit): 60 commits; a change of 4-10 robust sds of the commit medians spread evenly
   over 2-5 commits at a random place. Recall: a change found within the commits of the
   change (one commit of slack either side); told spread: that change names 2 or more
   commits. False changes per 1,000 commits on the same series without the change.

--src runs the same script on another source tree (main's: --src /work/main/src), for the
figures of today's code beside these. Usage:
  bench/gradual_changes.py [--trials 200] [--seed 38] [--src PATH] [--explain]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from commit_excursions import positive

ROOT = Path(__file__).resolve().parent.parent
NOISE = ROOT / "bench" / "data" / "noise-idle"
COMMITS, FIRST_AT, LAST_AT = 40, 5, 30        # bisect: commits, where a change may start
SERIES, RUNS = 60, 3                          # history: commits, runs a commit
MATERIAL, SMALL = 0.2, 0.2                    # a named share (bisect.MATERIAL_SHARE); a true share too small to name


def recordings() -> list[np.ndarray]:
    """Each recording as ratios to its median (its level is 1)."""
    out = []
    for path in sorted(NOISE.glob("*.csv")):
        rows = [line.split(",") for line in path.read_text().splitlines() if line and not line.startswith("#")]
        values = np.array([float(r[1]) for r in rows[1:]])
        out.append(values / np.median(values))
    return out


def robust_sd(v: np.ndarray) -> float:
    """Of the noise: 1.4826·MAD of the first differences over √2 (a level change is one difference)."""
    d = np.diff(v)
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / np.sqrt(2))


class SimulatedBench:
    """bisect's Bench for commits whose runs read a recording in order, times their level."""

    def __init__(self, noise: np.ndarray, start: int, levels: dict[str, float]):
        self.noise, self.at, self.levels = noise, start, levels
        self.runs = self.builds = 0

    def build(self, sha: str) -> None:
        self.builds += 1

    def sample(self, sha: str) -> float:
        self.runs += 1
        self.at += 1
        return self.levels[sha] * float(self.noise[self.at % self.noise.size])


def explain(bisection, result, shares: np.ndarray, named: set[int]) -> None:
    """One trial: the true shares, each probe (true and measured position, pairs, call), the answer."""
    position = np.cumsum(shares)
    m = bisection.measure
    print(f"trial: shares {({i: round(float(s), 3) for i, s in enumerate(shares) if s > 0})}; "
          f"named {sorted(named)}; bad/good {bisection.ends.ratio:.3f}, pair sd {bisection.ends.scale:.3f}")
    for p in m.order[2:]:
        c, d = p.classification, p.distance
        if c is None:
            continue
        print(f"  c{p.commit.index:<3} at {position[p.commit.index]:.2f}: measured {c.position:+.2f} "
              f"± {m.position_error(p, bisection.ends):.2f}, n={len(p.values)}, {c.call.value}"
              + (f", {d.neither}" if d is not None and d.neither else ""))
    for s in getattr(result, "gradual", ()):
        print(f"  share c{s.commit.index}: {s.share:.2f} ± {getattr(s, 'se', float('nan')):.2f} "
              f"(true {shares[s.commit.index]:.2f})")


def one_bisect(noise: np.ndarray, rng: np.random.Generator, seed: int,
               show: bool = False) -> tuple[set[int], np.ndarray, int, bool]:
    """(the commit indices the answer names, each commit's true share, runs, told gradual)."""
    from perflab.analysis.bisect import BisectOptions, _Bisection
    from perflab.analysis.bisect_graph import Graph
    from perflab.vcs import GraphCommit

    carried = int(rng.integers(1, 6))
    first = int(rng.integers(FIRST_AT, LAST_AT))
    shares = np.zeros(COMMITS)
    shares[first:first + carried] = rng.dirichlet(np.ones(carried))
    step = float(rng.uniform(4, 10)) * robust_sd(noise)
    levels = 1.0 + step * np.cumsum(shares)
    shas = [f"{i:040x}" for i in range(COMMITS)]
    commits = [GraphCommit(sha, (shas[i - 1],) if i else (), f"c{i}") for i, sha in enumerate(shas)]
    graph = Graph.of(commits[0], commits[1:])
    bench = SimulatedBench(noise, int(rng.integers(noise.size)), dict(zip(shas, levels.tolist())))
    options = BisectOptions(build="-", run="-", seed=seed)
    bisection = _Bisection(graph, bench, options, lambda line: None)  # type: ignore[arg-type]
    result = bisection.run()
    gradual = getattr(result, "gradual", ())
    if gradual:
        try:
            from perflab.model.report.bisect import material
        except ImportError:   # a tree before shares had their standard error
            def material(s): return s.share >= MATERIAL  # type: ignore[no-untyped-def,misc]
        named = {s.commit.index for s in gradual if material(s)}
    else:
        named = {result.first_bad.index} if result.first_bad is not None else set()
    if show:
        explain(bisection, result, shares, named)
    return named, shares, bench.runs, bool(gradual)


def bisect_figures(noises: list[np.ndarray], trials: int, rng: np.random.Generator,
                   show: bool = False) -> dict[str, float]:
    small = single = complete = undecided = 0
    runs = []
    for trial in range(trials):
        noise = noises[trial % len(noises)]
        named, shares, spent, gradual = one_bisect(noise, rng, trial, show)
        runs.append(spent)
        undecided += not named   # undecided, or spread with no share shown material
        small += any(shares[i] < SMALL for i in named)
        single += not gradual and any(shares[i] < SMALL for i in named)
        complete += set(np.flatnonzero(shares >= SMALL).tolist()) <= named
    return {"names a commit of < 20%": small / trials, "of them as its one commit": single / trials,
            "names every commit of >= 20%": complete / trials, "no commit named": undecided / trials,
            "runs per bisect (median)": float(np.median(runs))}


def detect_commits(groups: list[np.ndarray]) -> list:
    """History's detector on one group of runs a commit (this tree's, or one without commits=)."""
    from perflab.stats.changepoints import detect
    try:
        return detect(groups, method="mosum", centre="median", commits=True)
    except TypeError:   # a tree before commit series
        return detect(groups, method="mosum", centre="median")


def one_series(noise: np.ndarray, rng: np.random.Generator) -> tuple[list[np.ndarray], float]:
    """SERIES commits of RUNS consecutive runs of the recording from a random start, and the
    robust sd of their medians."""
    start = int(rng.integers(noise.size))
    runs = noise[(start + np.arange(SERIES * RUNS)) % noise.size].reshape(SERIES, RUNS)
    return list(runs), robust_sd(np.median(runs, axis=1))


def history_figures(noises: list[np.ndarray], trials: int, rng: np.random.Generator) -> dict[str, float]:
    found = spread = false = 0
    for trial in range(trials):
        groups, sd = one_series(noises[trial % len(noises)], rng)
        false += len(detect_commits(groups))
        carried = int(rng.integers(2, 6))
        first = int(rng.integers(15, 41))
        size = float(rng.uniform(4, 10)) * sd
        done = np.clip((np.arange(SERIES) - first + 1) / carried, 0, 1)
        changed = [g * (1 + size * d) for g, d in zip(groups, done)]
        near = [c for c in detect_commits(changed) if first - 1 <= c.index <= first + carried]
        found += bool(near)
        spread += any(len(getattr(c, "parts", ())) >= 2 for c in near)
    return {"recall (2-5 commits, 4-10 sd)": found / trials, "told spread": spread / trials,
            "false changes per 1,000 commits": 1000 * false / (trials * SERIES)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=positive, default=200)
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--explain", action="store_true", help="print each bisect trial's shares and probes")
    parser.add_argument("--src", default=str(ROOT / "src"), help="the perflab source tree to measure")
    args = parser.parse_args()
    if not Path(args.src, "perflab").is_dir():
        parser.error(f"--src {args.src}: no perflab package there")
    sys.path.insert(0, args.src)
    noises = recordings()
    import perflab
    print(f"source: {Path(perflab.__file__).parent}; {args.trials} trials each; "
          f"noise: {len(noises)} recordings of {NOISE}")
    bisect = bisect_figures(noises, args.trials, np.random.default_rng(args.seed), args.explain)
    for name, figures in (("bisect", bisect),
                          ("history", history_figures(noises, args.trials, np.random.default_rng(args.seed)))):
        print(f"{name}: " + "; ".join(f"{k} {v:.3g}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
