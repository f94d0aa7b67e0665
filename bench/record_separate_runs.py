#!/usr/bin/env python3
"""Record real separate runs of several benchmarks for the host-prior bench.

K rounds (--runs, default 12); in each round every benchmark gets one `perflab run -n N`
(a separate process tree, a fresh run) under a label of its own, so the rounds interleave
the benchmarks and slow drift of the machine hits all of them alike. The samples go to
bench/data/separate-runs/runs.csv, one line per (benchmark, run, repetition):
time, user and system seconds and the pressure stall and window (psi.cpu_some_us,
psi.window_us: did another load compete).

Usage: bench/record_separate_runs.py [--runs 12] [-n 30] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from project_venv import in_project_venv  # noqa: E402

in_project_venv(__file__)

METRICS = ("time", "user", "system", "psi.cpu_some_us", "psi.window_us")


def benchmarks(scratch: Path) -> dict[str, list[str]]:
    """Name -> argv: sleeps, CPU loops, start-up, file system, scheduler."""
    python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
    return {
        "sleep-5ms": ["sleep", "0.005"],
        "sh-loop": ["sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"],
        "python-startup": [python, "-S", "-c", "pass"],
        "python-loop": [python, "-S", "-c", "sum(i*i for i in range(200000))"],
        "fs-write-fsync": ["dd", "if=/dev/zero", f"of={scratch / 'dd.out'}", "bs=64k", "count=32",
                           "conv=fsync", "status=none"],
        "hackbench": ["hackbench", "-p", "-g", "1", "-l", "50"],
        "sched-pipe": ["perf", "bench", "sched", "pipe", "-l", "5000"],
        "gzip": ["gzip", "-c", "-6", python],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("-n", type=int, default=30)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "data" / "separate-runs")
    args = parser.parse_args()
    from perflab.store import Store

    perflab = [sys.executable, "-c", "from perflab.cli.main import main; main()"]
    with tempfile.TemporaryDirectory(prefix="perflab-separate-") as tmp:
        db = str(Path(tmp) / "perflab.db")
        table = benchmarks(Path(tmp))
        started = time.time()
        for k in range(args.runs):
            for name, argv in table.items():
                done = subprocess.run([*perflab, "--db", db, "run", "-n", str(args.n), "-q", "--name", name,
                                       "--label", f"{name}-{k}", "--", *argv], stdout=subprocess.DEVNULL)
                if done.returncode != 0:
                    print(f"record_separate_runs: {name} failed (exit {done.returncode})", file=sys.stderr)
                    return 2
            print(f"round {k + 1} of {args.runs} done ({time.time() - started:.0f} s)", file=sys.stderr)
        args.out.mkdir(parents=True, exist_ok=True)
        with Store(db) as store, open(args.out / "runs.csv", "w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(["benchmark", "run", "repetition", *METRICS])
            for name in table:
                for k in range(args.runs):
                    run = store.runs.resolve(f"{name}-{k}")
                    by_metric = {g.metric: g.values for g in store.series.value_groups(run.id) if g.metric in METRICS}
                    n = len(by_metric["time"])
                    for i in range(n):
                        writer.writerow([name, k, i, *(f"{by_metric[m][i]:.9g}" if m in by_metric
                                                       and i < len(by_metric[m]) else "" for m in METRICS)])
    print(f"wrote {args.out / 'runs.csv'} in {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
