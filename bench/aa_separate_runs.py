#!/usr/bin/env python3
"""A/A of separate runs end to end: ten (--pairs) pairs of real `perflab run`s of one
unchanged command, each pair compared, as the issue that asked for run-to-run variance
tried it ("ten pairs of `perflab run -n 25 --name t -- sleep 0.010`, each pair compared
with `compare aN bN --metric time`: 3 pairs got `*`").

Every run gets a label of its own (a1, b1, a2, ...), all in one store, recorded in the
order a1 b1 a2 b2 ...; then each pair aN bN is compared three ways, one row each (so a
report's rate is its row's):

  store          `perflab compare aN bN`: the other runs of the same command on this host
                 are its replicates (store.runs.replicates), so the run is the test's unit
  unknown        the same test without them (stats.difference.compare, separate runs,
                 run-to-run variance unknown: changes below 2% not judged)
  as one run     the samples of the two runs as if one run's (independent)

and prints how many pairs each marked, with Wilson's 95% interval. Nothing changed
between the runs, so every mark is a false one. With --candidate, each round also records
a run of a changed command (cN) and aN against cN, the same three ways, is the power.

Usage: bench/aa_separate_runs.py [--pairs 10] [-n 25] [--candidate 'sleep 0.0105'] [-- COMMAND...]
       (default COMMAND: sleep 0.010)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from project_venv import in_project_venv  # noqa: E402

in_project_venv(__file__)
sys.path.insert(0, str(ROOT / "bench"))


WAYS = ("store", "unknown", "as one run")


def pair_marks(store, labels: tuple[str, str]) -> tuple[dict[str, bool], list[str]]:
    """Whether each way marks the time row of the runs labelled `labels` (base first), and
    the report's run-to-run warnings."""
    from perflab.analysis.compare import Filters, compare_runs
    from perflab.stats.difference import compare

    runs = [store.runs.resolve(label) for label in labels]
    report = compare_runs(store, runs, filters=Filters(metrics=frozenset({"time"})))
    [row] = report.rows
    [cell] = row.cells
    assert cell.change is not None
    marked = {"store": cell.change.significant}
    a, b = (next(g.values for g in store.series.value_groups(r.id) if g.metric == "time") for r in runs)
    for name, separate in (("unknown", True), ("as one run", False)):
        marked[name] = compare(a, b, direction=row.direction, mean_kind=row.mean_kind,
                               noise_floor=row.noise_floor, separate_runs=separate).significant
    return marked, [w for w in report.warnings if "run-to-run" in w]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("-n", type=int, default=25, help="repetitions a run")
    parser.add_argument("--candidate", help="a changed command (one string, split on spaces): each "
                        "round also records a run of it, cN, and aN against cN is the power")
    parser.add_argument("command", nargs="*", default=["sleep", "0.010"])
    args = parser.parse_args()
    from aa_calibration import wilson

    from perflab.store import Store

    commands = {"a": args.command, "b": args.command}
    if args.candidate:
        commands["c"] = args.candidate.split()
    with tempfile.TemporaryDirectory(prefix="perflab-bench-aa-") as tmp:
        db = str(Path(tmp) / "perflab.db")
        perflab = [sys.executable, "-c", "from perflab.cli.main import main; main()"]
        for i in range(1, args.pairs + 1):  # round by round: a, b (and c) close in time
            for side, command in commands.items():
                done = subprocess.run([*perflab, "--db", db, "run", "-n", str(args.n), "-q", "--name", "t",
                                       "--label", f"{side}{i}", "--", *command], stdout=subprocess.DEVNULL)
                if done.returncode != 0:  # perflab has said why on stderr
                    print(f"aa_separate_runs: perflab run of {' '.join(command)!r} failed "
                          f"(exit {done.returncode})", file=sys.stderr)
                    return 2
        counts = {(kind, way): 0 for kind in ("A/A", "power") for way in WAYS}
        spreads: list[str] = []
        with Store(db) as store:
            for i in range(1, args.pairs + 1):
                for kind, other in (("A/A", "b"), ("power", "c"))[:len(commands) - 1]:
                    marked, warnings = pair_marks(store, (f"a{i}", f"{other}{i}"))
                    spreads += warnings
                    for way in WAYS:
                        counts[(kind, way)] += marked[way]
    print(f"{args.pairs} pairs of separate runs of {' '.join(args.command)!r}"
          + (f" (power: against {args.candidate!r})" if args.candidate else "")
          + f", {args.n} repetitions each, every run under a label of its own; pairs marked:")
    for (kind, way), count in counts.items():
        if kind == "A/A" or args.candidate:
            low, high = wilson(count / args.pairs, args.pairs)
            print(f"  {kind:<6} {way:<12} {count:>3} of {args.pairs}  ({100 * count / args.pairs:.0f}%, 95% CI "
                  f"{100 * low:.0f}..{100 * high:.0f}%)")
    if spreads:
        print(f"  (store: e.g. '{spreads[-1]}')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
