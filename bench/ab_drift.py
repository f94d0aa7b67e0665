#!/usr/bin/env python3
"""Drift: an A/A pair under a load that starts half-way, interleaved vs two sequential runs.

One CPU-bound command (a shell loop) is compared with itself. stress-ng (one CPU hog per
online CPU, bounded by its own --timeout and killed at the end) starts half-way through:

  interleaved   `perflab run -n N --shell CMD CMD` (two names, one run, alternating in
                every round), then `perflab compare RUN`: the load hits both alike, so
                no significance mark is expected; and `perflab ab` of the same pair (the
                load starts after half of its -M rounds' expected time): not a regression.
  sequential    `perflab run -n N` of the first copy, then of the second, the load
                starting when the second starts; `perflab compare A B`: the drift lands
                between the sides and shows up as a "change".

Usage: PYTHONPATH=src python bench/ab_drift.py [--runs 30] [--loop 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

PERFLAB = [sys.executable, "-c", "from perflab.cli.main import main; main()"]


def perflab(db: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*PERFLAB, "--db", db, *args], capture_output=True, text=True, timeout=1800)


class Load:
    """stress-ng on every CPU after ``delay`` seconds; bounded and always stopped."""

    def __init__(self, delay: float, seconds: float):
        self.delay, self.seconds = delay, seconds
        self.proc: subprocess.Popen | None = None
        self.cancel = threading.Event()
        self.thread = threading.Thread(target=self._start, daemon=True)

    def _start(self) -> None:
        if not self.cancel.wait(self.delay):
            self.proc = subprocess.Popen(["stress-ng", "--cpu", str(os.cpu_count() or 1), "--timeout",
                                          f"{int(self.seconds) + 1}s", "--quiet"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def __enter__(self) -> Load:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel.set()
        self.thread.join()
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


def marks(db: str, *runs: str) -> tuple[str, str]:
    """The time row of `perflab compare` (JSON): its verdict and mark, and the change
    (positive = better)."""
    out = perflab(db, "compare", *runs, "--metric", "time", "--format", "json")
    if out.returncode != 0:
        return f"error: {out.stderr.strip()}", ""
    row = json.loads(out.stdout)["rows"][0]["candidates"][0]["comparison"]
    mark = "*" if row["significant"] else "no mark"
    p = "no p-value" if row["p_value"] is None else f"p={row['p_value']:.2g}"   # None: too few samples to test
    change = "n/a" if row["change_pct"] is None else f"{row['change_pct']:+.2f}%"
    return f"{row['verdict']} ({mark}, {p})", change


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--loop", type=int, default=20000, help="iterations of the shell loop")
    args = parser.parse_args()
    if args.runs < 2:
        parser.error("--runs must be at least 2 (perflab ab's -m/--min-runs)")
    if not shutil.which("stress-ng"):
        print("bench/ab_drift: stress-ng not found (apt-get install stress-ng)", file=sys.stderr)
        return 3
    command = f"i=0; while [ $i -lt {args.loop} ]; do i=$((i+1)); done"
    work = tempfile.mkdtemp(prefix="perflab-drift-")
    try:
        db = os.path.join(work, "db")
        # how long one sample takes here, unloaded: to start the load half-way
        perflab(db, "run", "-q", "-n", "5", "--label", "probe", "--shell", "--", command)
        probe = json.loads(perflab(db, "export", "probe").stdout)["samples"]
        times = sorted(s["value"] for s in probe if s["metric"] == "time" and s["value"] is not None)
        if len(times) < 3:   # an invalid sample has no time: the loop was shorter than the shell's start-up
            print(f"bench/ab_drift: --loop {args.loop} is too short to time here (raise it)", file=sys.stderr)
            return 2
        one = times[2] + 0.01
        print(f"command: sh -c '{command}'  ({one * 1e3:.0f} ms a sample unloaded); "
              f"{args.runs} samples a side; stress-ng --cpu {os.cpu_count()} from half-way\n")

        total = 2 * args.runs * one
        with Load(total / 2, total * 3):
            perflab(db, "run", "-q", "-n", str(args.runs), "--label", "interleaved", "--shell",
                    "--command-name", "A", "--command-name", "B", "-c", command, "-c", command + " ")
        verdicts, change = marks(db, "interleaved")
        print(f"interleaved, one run:   compare RUN          -> {verdicts:<24} B vs A {change}")

        with Load(total / 2, total * 3):
            started = time.monotonic()
            perflab(db, "run", "-q", "-n", str(args.runs), "--label", "seq-A", "--shell", "--name", "A",
                    "--", command)
            print(f"  (first sequential run took {time.monotonic() - started:.1f} s)", file=sys.stderr)
            perflab(db, "run", "-q", "-n", str(args.runs), "--label", "seq-B", "--shell", "--name", "A",
                    "--", command)
        verdicts, change = marks(db, "seq-A", "seq-B")
        print(f"two sequential runs:    compare seq-A seq-B  -> {verdicts:<24} B vs A {change}")

        with Load(total / 2, total * 3):
            out = perflab(db, "ab", "-q", "--shell", "--base", command, "--cand", command, "-m", str(min(5, args.runs)),
                          "-M", str(args.runs), "--threshold", "5%")
        print(f"interleaved, perflab ab (5% threshold, -M {args.runs}):  exit {out.returncode}: "
              f"{out.stdout.splitlines()[0] if out.stdout else out.stderr.strip()}")
        for line in perflab(db, "show", "interleaved").stdout.splitlines():
            if line.startswith("warning:"):
                print(f"show interleaved: {line}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
