#!/usr/bin/env python3
"""Record change-free noise series on this machine with perflab itself, one CSV per series.

Every series is one `perflab run -n POINTS` of one unchanged command or workload into a
scratch database, then `perflab export --format csv`; the chosen metric's values, in
repetition order, are written to bench/data/noise/NAME.csv with '#' header lines that
say what was run, when, where and how loaded the machine was. Nothing is changed between
samples, so any change point found in these series is a false alarm (the measured noise:
scheduling, other users' jobs, frequency, caches, the disk).

Usage: bench/record_noise.py [--points 300] [--warmup 0] [--out bench/data/noise] [--only NAME ...]
--warmup N runs N unrecorded repetitions first (perflab run -w), as a benchmark would: the
first repetitions of a cold workload are a warm-up, not noise.
Re-recording overwrites the CSVs (the git history keeps the old ones).
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "data" / "noise"
SCRATCH = Path(tempfile.gettempdir()) / "perflab-noise"

CPU_LOOP = "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done"

#: name -> (family, metric, perflab run arguments after `run -q -n N`)
SERIES: dict[str, tuple[str, str, list[str]]] = {}
for rep in ("a", "b"):
    SERIES |= {
        f"sleep-1ms-{rep}": ("sleep", "time", ["--name", "sleep-1ms", "--", "sleep", "0.001"]),
        f"sleep-10ms-{rep}": ("sleep", "time", ["--name", "sleep-10ms", "--", "sleep", "0.01"]),
        f"cpu-loop-{rep}": ("cpu", "time", ["--name", "cpu-loop", "--", "sh", "-c", CPU_LOOP]),
        f"cpu-loop-pinned-{rep}": ("cpu", "time", ["--cpu", "1", "--name", "cpu-loop-pinned", "--",
                                                    "sh", "-c", CPU_LOOP]),
        f"hackbench-process-{rep}": ("hackbench", "time", ["hackbench", "-p", "groups=1",
                                                           "-p", "loops=20"]),
        f"hackbench-thread-{rep}": ("hackbench", "time", ["hackbench", "-p", "groups=2", "-p", "loops=10",
                                                          "-p", "mode=thread"]),
        f"sched-pipe-process-{rep}": ("sched-pipe", "usec_per_op", ["sched-pipe", "-p", "loops=5000"]),
        f"sched-pipe-thread-{rep}": ("sched-pipe", "usec_per_op", ["sched-pipe", "-p", "loops=5000",
                                                                  "-p", "mode=thread"]),
        f"fs-write-fsync-{rep}": ("filesystem", "time", [
            "--name", "fs-write-fsync", "--", "dd", "if=/dev/zero", f"of={SCRATCH}/fsync.dat",
            "bs=64k", "count=64", "conv=fsync", "status=none"]),
        f"mem-tmpfs-write-{rep}": ("memory", "time", [
            "--name", "mem-tmpfs-write", "--", "dd", "if=/dev/zero", "of=/dev/shm/perflab-noise.dat",
            "bs=1M", "count=64", "status=none"]),
        f"heavy-dsync-4k-{rep}": ("heavy-tail", "time", [
            "--name", "heavy-dsync-4k", "--", "dd", "if=/dev/zero", f"of={SCRATCH}/dsync.dat",
            "bs=4k", "count=4", "oflag=dsync", "status=none"]),
        f"heavy-python-start-{rep}": ("heavy-tail", "time", [
            "--name", "heavy-python-start", "--", "python3", "-c", "pass"]),
    }


def perflab(db: Path, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run([sys.executable, "-m", "perflab.cli.main", "--db", str(db), *args],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"perflab {' '.join(args)} failed: {done.stderr.strip()[-1000:]}")
    return done.stdout


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def record(name: str, points: int, warmup: int, out: Path) -> None:
    family, metric, args = SERIES[name]
    if warmup:
        args = ["-w", str(warmup), *args]
    db = SCRATCH / f"{name}.db"
    db.unlink(missing_ok=True)
    load_before, start = loadavg(), datetime.now(UTC)
    t0 = time.monotonic()
    perflab(db, "run", "-q", "-n", str(points), *args)
    seconds = time.monotonic() - t0
    rows = list(csv.DictReader(io.StringIO(perflab(db, "export", "--format", "csv", "1"))))
    values = sorted((int(r["repetition"]), float(r["value"])) for r in rows
                     if r["metric"] == metric and r["status"] == "ok")
    unit = next(r["unit"] for r in rows if r["metric"] == metric)
    db.unlink(missing_ok=True)
    with open(out / f"{name}.csv", "w") as f:
        f.write(f"# family: {family}\n# metric: {metric} ({unit})\n"
                f"# command: perflab run -q -n {points} {' '.join(args)}\n"
                f"# started: {start:%Y-%m-%dT%H:%M:%SZ}, took {seconds:.0f} s\n"
                f"# machine: {platform.node()}, {os.cpu_count()} CPUs, Linux {platform.release()}\n"
                f"# load average before / after: {load_before} / {loadavg()}\n"
                "repetition,value\n")
        for rep, value in values:
            f.write(f"{rep},{value:.6g}\n")
    print(f"{name:<26}{len(values):>5} points {seconds:>6.1f} s  load {loadavg()}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", nargs="*", choices=sorted(SERIES), default=None)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    SCRATCH.mkdir(parents=True, exist_ok=True)
    for name in args.only or SERIES:
        record(name, args.points, args.warmup, args.out)
    Path("/dev/shm/perflab-noise.dat").unlink(missing_ok=True)
    for leftover in SCRATCH.glob("*.dat"):
        leftover.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
