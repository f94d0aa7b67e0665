#!/usr/bin/env python3
"""How often does `perflab compare` mark a change that is not there, on real noise?

The recordings under bench/data/noise*/ are long runs of unchanged commands on this
machine (see their README). Cut a recording into consecutive chunks of N samples and each
chunk is what a separate `perflab run -n N` of the command would have recorded at that
time; two chunks of one recording are an A/A pair of separate runs, and a random half of
one chunk against the other half is an A/A pair inside one run.

Each trial builds one real report (analysis.compare_report.build_report, FDR across its rows)
with one row per recording, and counts

  per report   reports with any significance mark (the rate a reader meets)
  per row      rows marked, of all rows

for these designs:

  one run, halves          two random halves of one chunk (samples are exchangeable)
  separate, as if one run  two chunks, their samples treated as independent (perflab < 0.2)
  separate, unknown        two chunks, run-to-run variance unknown: changes below 2% not judged
  separate, calibrated     two chunks, run-to-run variance from K other chunks of the same
                           recording (what `perflab calibrate -k K` records, or K other runs
                           of the same command in the store: store.replicate_runs)

and the power at a real 5% slowdown (the second side multiplied by 1.05) for each.
Everything is seeded; run it as

    .venv/bin/python bench/aa_calibration.py [--trials 200] [--n 25] [--k 5] [--data DIR ...]

Each rate comes with Wilson's 95% interval: 200 trials cannot tell 5% from 8%.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent / "src"))

from perflab.analysis.compare_report import build_report  # noqa: E402
from perflab.model.records import Direction, MetricInfo, RunInfo, RunStatus  # noqa: E402
from perflab.stats.variance import between_runs  # noqa: E402
from perflab.store.repository import ValueGroup  # noqa: E402

RUNS = [RunInfo(i + 1, label, None, None, "h", 0.0, None, RunStatus.COMPLETE, {}, {})
        for i, label in enumerate(("a", "b"))]


def recordings(folder: Path) -> dict[str, np.ndarray]:
    """name -> the recorded values in order (the one metric each file holds)."""
    out = {}
    for path in sorted(folder.glob("*.csv")):
        rows = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
        reader = csv.reader(rows)
        header = next(reader)
        column = header.index("value") if "value" in header else len(header) - 1
        values = np.array([float(r[column]) for r in reader if r and r[column]], dtype=float)
        out[path.stem] = values[np.isfinite(values) & (values > 0)]
    return out


def trial(series: dict[str, np.ndarray], rng: np.random.Generator, n: int, k: int,
          design: str, shift: float) -> tuple[bool, int, int]:
    """One report: (any row marked, rows marked, rows)."""
    tables: list[dict] = [{}, {}]
    variances = {}
    for name, x in series.items():
        chunks = len(x) // n
        if design == "one run, halves":
            chunk = x[(c := rng.integers(chunks)) * n:(c + 1) * n]
            half = rng.permutation(n)
            a, b = chunk[half[: n // 2]], chunk[half[n // 2:]]
        else:
            i = int(rng.integers(chunks - 1))
            a, b = x[i * n:(i + 1) * n], x[(i + 1) * n:(i + 2) * n]
            if design == "separate, calibrated":
                others = [j for j in range(chunks) if j not in (i, i + 1)]
                picked = rng.choice(others, size=min(k, len(others)), replace=False)
                variances[(name, "{}", "time")] = between_runs([x[j * n:(j + 1) * n] for j in picked])
        key = (name, "{}", "time")
        tables[0][key] = ValueGroup(name, "{}", "time", "s", a, 0)
        tables[1][key] = ValueGroup(name, "{}", "time", "s", b * shift, 0)
    infos = {(name, "time"): MetricInfo("time", "s", Direction.LOWER) for name in series}
    separate = design.startswith("separate") and design != "separate, as if one run"
    report = build_report(tables, RUNS, infos, separate=[separate],
                          run_variances=variances if design == "separate, calibrated" else {})
    marked = sum(1 for _, _, change in report.changes() if change.significant)
    return marked > 0, marked, len(report.rows)


DESIGNS = ("one run, halves", "separate, as if one run", "separate, unknown", "separate, calibrated")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--n", type=int, default=25, help="samples a run")
    parser.add_argument("--k", type=int, default=5, help="calibration runs")
    parser.add_argument("--data", action="append",
                        help="a folder of recordings; repeatable [default: bench/data/noise-idle "
                             "(an idle machine), noise-quiet (almost idle) and noise (a loaded one)]")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    defaults = (ROOT / "data" / name for name in ("noise-idle", "noise-quiet", "noise"))
    folders = args.data or [str(d) for d in defaults if d.is_dir()]
    everything = {folder: evaluate(recordings(Path(folder)), args) for folder in folders}
    if args.json:
        print(json.dumps(everything, indent=1))
        return
    for folder, results in everything.items():
        print(f"{len(recordings(Path(folder)))} recordings from {folder}; {args.trials} reports of one row "
              f"per recording; runs of {args.n} samples; calibration from {args.k} other runs")
        print(f"{'design':<26} {'A/A marked: per report (95% CI)':>32} {'per row':>8}   "
              f"{'power at 5%: per row':>21}")
        for r in results:
            low, high = wilson(r["aa_per_report"], args.trials)
            print(f"{r['design']:<26} {100 * r['aa_per_report']:>14.1f}% ({100 * low:4.1f}..{100 * high:4.1f}%)"
                  f" {100 * r['aa_per_row']:>7.1f}%   {100 * r['power_5pct_per_row']:>20.1f}%")
        print()


def wilson(rate: float, trials: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's 95% interval of a binomial rate: how far the measured rate can be trusted."""
    centre = (rate + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * np.sqrt(rate * (1 - rate) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def evaluate(series: dict[str, np.ndarray], args: argparse.Namespace) -> list[dict]:
    results = []
    for design in DESIGNS:
        row = {"design": design}
        for label, shift in (("aa", 1.0), ("power_5pct", 1.05)):
            rng = np.random.default_rng(20261123)
            outcomes = [trial(series, rng, args.n, args.k, design, shift) for _ in range(args.trials)]
            row[f"{label}_per_report"] = sum(o[0] for o in outcomes) / len(outcomes)
            row[f"{label}_per_row"] = sum(o[1] for o in outcomes) / sum(o[2] for o in outcomes)
        results.append(row)
    return results


if __name__ == "__main__":
    main()
