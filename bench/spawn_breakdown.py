#!/usr/bin/env python3
"""Where the sample executor's time on `true` goes, against `hyperfine -N` in the same run.

Rounds alternate: hyperfine -N -r N 'true'; `perflab run -n N -- true`; then a block of N
samples of each in-process variant (in the cgroup, entered once and stayed in, as `perflab
run` does):
  - spawn_and_wait, no cgroup          (the spawn path alone)
  - spawn_and_wait, in the sample cgroup (what `perflab run` measures)
  - the same with the cgroups' own PSI accounting off (cgroup.pressure = 0; perflab reads
    only the system-wide /proc/pressure): is per-cgroup accounting the cgroup's cost?
  - the parts of the clock's window: os.posix_spawn's return, then wait4's
Reports each variant's median measured time and its ratio to hyperfine's median, and the
median microseconds of each part. The machine's load is printed with it: read ratios,
not absolute times, when it is loaded.
Usage: bench/spawn_breakdown.py [--runs 300] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perflab.execute.cgroups import RunCgroups
from perflab.execute.process import _encoded, open_devnull_streams, spawn_and_wait

TRUE = shutil.which("true") or "/bin/true"


def hyperfine_median(runs: int, export: str) -> float:
    subprocess.run(["hyperfine", "-N", "-r", str(runs), "--export-json", export, "--style", "none", TRUE],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return float(json.loads(Path(export).read_text())["results"][0]["median"])


def perflab_median(runs: int, db: str) -> float:
    """`perflab run -n RUNS -- true`: the whole executor (cgroup, pressure, pending file)."""
    perflab = [sys.executable, "-m", "perflab.cli.main", "--db", db]
    subprocess.run([*perflab, "run", "-q", "-n", str(runs), "--label", "b", "--", TRUE], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = subprocess.run([*perflab, "export", "b"], capture_output=True, check=True).stdout
    return statistics.median(s["value"] for s in json.loads(out)["samples"] if s["metric"] == "time")


def psi_accounting(cgroups: RunCgroups, on: bool) -> None:
    """Per-cgroup PSI of perflab's cgroups on or off (outside the clock; kernel 6.1+)."""
    for group in (cgroups.base.parent, cgroups.base, cgroups.for_sample()):
        pressure = group / "cgroup.pressure"
        if pressure.exists():
            pressure.write_text("1" if on else "0")


def parts(streams) -> tuple[float, float]:
    """The clock's window cut in two: posix_spawn's return, then wait4's."""
    actions = [(os.POSIX_SPAWN_DUP2, streams.stdin, 0), (os.POSIX_SPAWN_DUP2, streams.stdout, 1),
               (os.POSIX_SPAWN_DUP2, streams.stderr, 2)]
    env = _encoded(os.environ)
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(TRUE, [TRUE], env, file_actions=actions, setpgroup=0)
    t1 = time.perf_counter_ns()
    os.wait4(pid, 0)
    t2 = time.perf_counter_ns()
    return (t1 - t0) / 1e3, (t2 - t1) / 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not shutil.which("hyperfine"):
        print("bench/spawn_breakdown.py: hyperfine not found", file=sys.stderr)
        return 3
    workdir = tempfile.mkdtemp(prefix="perflab-spawn-")
    streams = open_devnull_streams()
    cgroups, reason = RunCgroups.create()
    if reason:
        print(f"no sample cgroup here: {reason}")
    times: dict[str, list[float]] = {"hyperfine -N": [], "perflab run": [], "no cgroup": [], "sample cgroup": [],
                                     "cgroup, no PSI": []}
    spawn_us: list[float] = []
    wait_us: list[float] = []
    try:
        for r in range(args.rounds):
            times["hyperfine -N"].append(hyperfine_median(args.runs, os.path.join(workdir, "h.json")))
            times["perflab run"].append(perflab_median(args.runs, os.path.join(workdir, f"p{r}.db")))
            # each variant a block of samples per round, as `perflab run` takes them: it enters
            # the sample cgroup once and stays (a migration before every sample is not its cost)
            plain = [spawn_and_wait(TRUE, [TRUE], streams=streams).wall_s for _ in range(args.runs)]
            grouped, quiet = [], []
            if cgroups is not None:
                grouped = [spawn_and_wait(TRUE, [TRUE], streams=streams, cgroups=cgroups).wall_s
                           for _ in range(args.runs)]
                psi_accounting(cgroups, False)
                quiet = [spawn_and_wait(TRUE, [TRUE], streams=streams, cgroups=cgroups).wall_s
                         for _ in range(args.runs)]
                psi_accounting(cgroups, True)
                cgroups.leave()
            for _ in range(args.runs):
                spawned, waited = parts(streams)
                spawn_us.append(spawned)
                wait_us.append(waited)
            times["no cgroup"].append(statistics.median(plain))
            if grouped:
                times["sample cgroup"].append(statistics.median(grouped))
                times["cgroup, no PSI"].append(statistics.median(quiet))
    finally:
        if cgroups is not None:
            cgroups.close()
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.runs} runs x {args.rounds} rounds")
    reference = statistics.median(times["hyperfine -N"])
    for name, values in times.items():
        if values:
            value = statistics.median(values)
            print(f"  {name:<14} median {value * 1e6:8.1f} us   ratio to hyperfine -N {value / reference:.3f}"
                  f"   rounds: {' '.join(f'{v * 1e6:.0f}' for v in values)}")
    print(f"  parts (no cgroup): posix_spawn returns after {statistics.median(spawn_us):.1f} us, "
          f"wait4 after {statistics.median(wait_us):.1f} us more")
    return 0


if __name__ == "__main__":
    sys.exit(main())
