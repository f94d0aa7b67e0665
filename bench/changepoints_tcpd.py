#!/usr/bin/env python3
"""Change points on real annotated series: the public Turing Change Point Dataset (TCPD).

TCPD (van den Burg & Williams, "An evaluation of change point detection algorithms",
2020; github.com/alan-turing-institute/TCPD) is 42 real series from many domains (GDP,
passengers, well logs, quality control, ...), each annotated by five people. This scores
every method on its univariate series exactly as its benchmark, TCPDBench, does:

  F1        precision against the union of the annotations, recall averaged over the
            annotators, a detection within ±5 points of an annotation counts once, and
            index 0 counts as a change for all (TCPDBench's f_measure);
  covering  the mean over annotators of the covering of their partition by the found one.

Methods: perflab's mosum, e-divisive, pelt, binseg at their defaults, `auto` (what
`perflab changepoints`, history and alerts use: perflab.model.methods.resolve_method),
ruptures' Pelt and Binseg with their documented BIC penalty and Otava's defaults (as in
bench/changepoints_accuracy.py), and "no change". Means are also given for the series
shorter than 100 points and the rest, the length where detectors differ most.

The data is not in this repository (its series carry their sources' licences): clone TCPD
and build the series its repository does not hold (`make` there downloads them; without
that, the 32 series it holds are scored and the others listed as missing).

Usage: bench/changepoints_tcpd.py --tcpd PATH/TO/TCPD [--no-otava] [--verbose]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

MARGIN = 5
SHORT = 100  # points: the means are also split here


def load(tcpd: Path) -> tuple[dict[str, np.ndarray], dict[str, dict[str, list[int]]], list[str]]:
    """(univariate series by name, NaN where missing; their annotations; names not built)."""
    annotations_file = tcpd / "annotations.json"
    if not annotations_file.is_file():
        raise SystemExit(f"{tcpd}: no annotations.json; --tcpd is a clone of "
                         "github.com/alan-turing-institute/TCPD")
    annotations = json.loads(annotations_file.read_text())
    series, missing = {}, []
    for name in sorted(annotations):
        path = tcpd / "datasets" / name / f"{name}.json"
        if not path.is_file():
            missing.append(name)
            continue
        data = json.loads(path.read_text())
        if data["n_dim"] != 1:
            continue  # TCPDBench's univariate experiment, as the detectors are
        raw = data["series"][0]["raw"]
        series[name] = np.array([np.nan if v is None else float(v) for v in raw])
    if not series:
        raise SystemExit(f"{tcpd}: no dataset built under datasets/ (run make there)")
    return series, {name: annotations[name] for name in series}, missing


def true_positives(truth: set[int], found: set[int], margin: int = MARGIN) -> int:
    """Changes of `truth` matched by a detection within `margin`, each detection once
    (TCPDBench: each true change in order takes its nearest unused detection)."""
    left, hits = set(found), 0
    for tau in sorted(truth):
        close = sorted((abs(tau - x), x) for x in left if abs(tau - x) <= margin)
        if close:
            hits += 1
            left.remove(close[0][1])
    return hits


def f_measure(annotations: dict[str, list[int]], found: list[int]) -> float:
    """TCPDBench's F1 over several annotators (index 0 a change in every set)."""
    per_annotator = [set(a) | {0} for a in annotations.values()]
    detections = set(found) | {0}
    precision = true_positives(set().union(*per_annotator), detections) / len(detections)
    recall = statistics.mean(true_positives(t, detections) / len(t) for t in per_annotator)
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def positions(x: np.ndarray, indices: list[int]) -> list[int]:
    """Indices into x's finite values as positions in x (its missing values skipped)."""
    where = np.flatnonzero(np.isfinite(x))
    return [int(where[i]) for i in indices if i < where.size]


def finite_only(method: Callable[[np.ndarray], list[int]]) -> Callable[[np.ndarray], list[int]]:
    """A method for finite series, run on x without its missing values."""
    return lambda x: positions(x, method(x[np.isfinite(x)]))


def main() -> int:
    from perflab.model.methods import AUTO_METHOD, resolve_method
    from perflab.model.methods import CHANGE_POINT_NAMES as METHODS
    from perflab.stats.changepoints import detect

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tcpd", type=Path, required=True, help="a clone of github.com/alan-turing-institute/TCPD")
    parser.add_argument("--no-otava", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="each series' points and scores")
    args = parser.parse_args()
    series, annotations, missing = load(args.tcpd)
    import changepoints_accuracy as accuracy  # this script's folder: its covering, ruptures and Otava

    methods: dict[str, Callable[[np.ndarray], list[int]]] = {
        m: (lambda x, m=m: [c.index for c in detect(x, method=m)]) for m in METHODS}
    methods["auto"] = lambda x: [c.index for c in detect(
        x, method=resolve_method(AUTO_METHOD, int(np.isfinite(x).sum())))]
    methods |= {name: finite_only(f) for name, f in accuracy.ruptures_methods().items()}
    found = {m: {name: f(x) for name, x in series.items()} for m, f in methods.items()}
    if not args.no_otava:
        names = list(series)
        finite = [series[n][np.isfinite(series[n])] for n in names]
        by_otava = accuracy.otava(finite)
        if by_otava is not None:
            found["otava"] = {n: positions(series[n], r) for n, r in zip(names, by_otava)}
    found["no change"] = {name: [] for name in series}

    scores = {m: {n: (f_measure(annotations[n], p), statistics.mean(
        accuracy.covering(a, p, series[n].size) for a in annotations[n].values()))
        for n, p in points.items()} for m, points in found.items()}
    if args.verbose:
        for n, x in series.items():
            counts = ", ".join(str(len(a)) for a in annotations[n].values())
            print(f"{n} ({x.size} points; annotators: {counts} changes)")
            for m in found:
                f1, cov = scores[m][n]
                points = found[m][n]
                print(f"  {m:<16}{f1:6.3f}{cov:7.3f}  {points if len(points) <= 12 else f'{len(points)} points'}")
    short = [n for n, x in series.items() if x.size < SHORT]
    long = [n for n in series if n not in short]
    print(f"TCPD ({args.tcpd}): {len(series)} univariate series scored"
          + (f"; not built: {', '.join(missing)}" if missing else ""))
    print(f"F1 (margin ±{MARGIN}) / covering, TCPDBench's; means over series")
    print(f"{'method':<18}{'all':>14}{f'< {SHORT} points ({len(short)})':>24}{f'longer ({len(long)})':>18}")

    def mean(m: str, names: list[str]) -> str:
        if not names:
            return "-"
        f1, cov = (statistics.mean(scores[m][n][k] for n in names) for k in (0, 1))
        return f"{f1:.3f} / {cov:.3f}"
    for m in found:
        print(f"{m:<18}{mean(m, list(series)):>14}{mean(m, short):>24}{mean(m, long):>18}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
