#!/usr/bin/env python3
"""What perflab does between two samples: CPU and wall µs from reaping one to spawning the next.

Runs `perflab run -n N -- true` in this process with os.wait4 and os.posix_spawn wrapped
to stamp the clock, and prints the median gap (the first 20 samples left out: start-up).
CPU time is barely moved by other load, so this figure can be compared on a busy machine.
With --other PYTHON the same is done by that interpreter's perflab (e.g. main's
.venv/bin/python), rounds alternating: a before/after in one run.
Usage: bench/between_samples.py [--runs 300] [--rounds 3] [--other PYTHON]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

SKIPPED = 20   # the first samples' gaps: start-up


def child(runs: int, db: str) -> None:
    """One `perflab run` in this process; prints {"cpu_us": .., "wall_us": ..} (medians)."""
    stamps: list[tuple[str, int, int]] = []
    spawn, wait4 = os.posix_spawn, os.wait4

    def stamped_spawn(*args, **kwargs):
        stamps.append(("spawn", time.perf_counter_ns(), time.thread_time_ns()))
        return spawn(*args, **kwargs)

    def stamped_wait4(*args, **kwargs):
        result = wait4(*args, **kwargs)
        stamps.append(("reaped", time.perf_counter_ns(), time.thread_time_ns()))
        return result

    os.posix_spawn, os.wait4 = stamped_spawn, stamped_wait4   # type: ignore[assignment]
    from perflab.cli.main import main
    with contextlib.suppress(SystemExit):
        main(["--db", db, "run", "-q", "-n", str(runs), "--label", "gap", "--", "true"])
    gaps = [((t1 - t0) / 1e3, (c1 - c0) / 1e3) for (k0, t0, c0), (k1, t1, c1) in zip(stamps, stamps[1:])
            if (k0, k1) == ("reaped", "spawn")][SKIPPED:]
    print(json.dumps({"wall_us": statistics.median(g[0] for g in gaps),
                      "cpu_us": statistics.median(g[1] for g in gaps)}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--other", metavar="PYTHON")
    parser.add_argument("--child", metavar="DB", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.runs < SKIPPED + 2:   # n samples have n - 1 gaps
        parser.error(f"--runs must be at least {SKIPPED + 2}: the first {SKIPPED} gaps are start-up, left out")
    if args.child:
        child(args.runs, args.child)
        return 0
    pythons = {"this checkout": sys.executable} | ({"other": args.other} if args.other else {})
    found: dict[str, list[dict[str, float]]] = {name: [] for name in pythons}
    loads = []
    with tempfile.TemporaryDirectory(prefix="perflab-gap-") as workdir:
        for r in range(args.rounds):
            loads.append(os.getloadavg()[0])
            for name, python in pythons.items():
                out = subprocess.run([python, __file__, "--runs", str(args.runs), "--child",
                                      os.path.join(workdir, f"{name[0]}{r}.db")],
                                     capture_output=True, check=True, text=True).stdout
                found[name].append(json.loads(out.splitlines()[-1]))
    print(f"load average {min(loads):.1f}-{max(loads):.1f} (1 min) on {os.cpu_count()} CPUs; "
          f"{args.runs} samples x {args.rounds} rounds")
    for name, rounds in found.items():
        cpu = [g["cpu_us"] for g in rounds]
        wall = [g["wall_us"] for g in rounds]
        print(f"  {name:<14} between samples: CPU {statistics.median(cpu):6.1f} µs, wall "
              f"{statistics.median(wall):6.1f} µs   rounds (CPU µs): {' '.join(f'{c:.0f}' for c in cpu)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
