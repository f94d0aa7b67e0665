#!/usr/bin/env python3
"""Where the sample executor's time on `true` goes, against `hyperfine -N` in the same run.

Every round runs `hyperfine -N -r N true`, `perflab run -n N -- true`, then a block of N
samples of each in-process variant, each adding one piece of the executor's per-sample
work to the one before (all but the first in a sample cgroup entered once and stayed in,
as `perflab run` does):
  - root cgroup:        spawn_and_wait alone, no cgroup (the spawn path)
  - sample cgroup:      spawn_and_wait in the sample cgroup (leftovers checked by the pid
                        cursor, cgroup.procs listed only when the child created a process)
  - + cgroup.procs:     the same, listing cgroup.procs after every sample (the check before)
  - + outside reads:    sample cgroup, with the outside-load counters read around each sample
  - + 150 µs gap:       sample cgroup, perflab busy 150 µs between samples (about the
                        executor's work between two samples): does the gap itself cost?
  - executor take():    SampleExecutor.take, the real per-sample path without the store
With --other PYTHON, `perflab run` of another checkout (its interpreter, e.g. main's
.venv/bin/python) is one more row of every round: a before/after in the same run.
Prints each variant's median (over rounds) of its per-round median, the ratio to hyperfine's,
the median over rounds of its ratio to hyperfine's in the same round ("paired"),
and the CPU µs the parent spends per sample (spawn syscalls and everything between two
samples: a figure load barely moves) for hyperfine and for the executor. Read ratios, not
absolute times, on a loaded machine; the load average is printed.
Usage: bench/spawn_breakdown.py [--runs 300] [--rounds 7] [--other /work/main/.venv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from perflab.execute import outside
from perflab.execute.cgroups import RunCgroups, _process_ids
from perflab.execute.process import CapturedOutput, Streams, open_devnull_streams, spawn_and_wait
from perflab.execute.run_plan import plan_run
from perflab.execute.sample import SampleExecutor
from perflab.model.run_request import RunOptions
from perflab.workloads.command import CommandWorkload

TRUE = shutil.which("true") or "/bin/true"
GAP_S = 150e-6


def hyperfine_round(runs: int, export: str) -> tuple[float, float]:
    """hyperfine's median, and its own CPU µs per run (its children's rusage, which counts
    hyperfine and the commands it reaped, less the commands' mean user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["hyperfine", "-N", "-r", str(runs), "--export-json", export, "--style", "none", TRUE],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = json.loads(Path(export).read_text())["results"][0]
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    own = total - runs * (result["user"] + result["system"])
    return float(result["median"]), own / runs * 1e6


def perflab_median(runs: int, db: str, python: str = sys.executable) -> float:
    """`perflab run -n RUNS -- true`: the whole executor (cgroup, outside load, pending file)."""
    perflab = [python, "-m", "perflab.cli.main", "--db", db]
    subprocess.run([*perflab, "run", "-q", "-n", str(runs), "--label", "b", "--", TRUE], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = subprocess.run([*perflab, "export", "b"], capture_output=True, check=True).stdout
    return statistics.median(s["value"] for s in json.loads(out)["samples"] if s["metric"] == "time")


class Variants:
    """The in-process variants, each one block of samples: name -> () -> median seconds."""

    def __init__(self, streams: Streams, runs: int):
        self.streams, self.runs = streams, runs
        self.executor = SampleExecutor(lambda _: None, lambda _: None, lambda *_: None)
        self.executor.open()
        cgroups = self.executor._cgroups   # one set of cgroups for every variant: it knows where perflab is
        if cgroups is None:
            raise SystemExit("bench/spawn_breakdown.py: no sample cgroup here (needs root and cgroup2)")
        self.cgroups = cgroups
        self.reader = outside.Reader(cgroups.base)
        self.plan = plan_run(CommandWorkload([TRUE]), {}, RunOptions(repetitions=runs))
        self.capture = CapturedOutput(streams.stdin)
        self.executor_cpu_us: list[float] = []

    def all(self) -> dict[str, Callable[[], float]]:
        return {"root cgroup": self.root, "sample cgroup": self.grouped, "+ cgroup.procs": self.listed,
                "+ outside reads": self.outside_reads, "+ 150 µs gap": self.gap, "executor take()": self.take}

    def _spawn(self, cgroups: RunCgroups | None = None) -> float:
        return spawn_and_wait(TRUE, [TRUE], streams=self.streams, cgroups=cgroups).wall_s

    def root(self) -> float:
        self.cgroups.leave()
        return statistics.median(self._spawn() for _ in range(self.runs))

    def grouped(self) -> float:
        return statistics.median(self._spawn(self.cgroups) for _ in range(self.runs))

    def listed(self) -> float:
        times = []
        for _ in range(self.runs):
            times.append(self._spawn(self.cgroups))
            _process_ids(self.cgroups.for_sample())
        return statistics.median(times)

    def outside_reads(self) -> float:
        times = []
        for _ in range(self.runs):
            counters = self.reader.read()
            times.append(self._spawn(self.cgroups))
            self.reader.since(counters)
        return statistics.median(times)

    def gap(self) -> float:
        times = []
        for _ in range(self.runs):
            times.append(self._spawn(self.cgroups))
            until = time.perf_counter() + GAP_S
            while time.perf_counter() < until:
                pass
        return statistics.median(times)

    def take(self) -> float:
        times = []
        cpu = time.thread_time()
        for repetition in range(self.runs):
            taken = self.executor.take(self.plan, 0, repetition, warmup=False, label="true", watched=[],
                                       streams=self.streams, capture=self.capture)
            assert taken is not None
            times.append(taken.value)
        self.executor_cpu_us.append((time.thread_time() - cpu) / self.runs * 1e6)
        return statistics.median(times)

    def close(self) -> None:
        self.capture.close()
        self.executor.close()
        self.reader.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--other", metavar="PYTHON", help="also time `perflab run` of this interpreter's perflab")
    args = parser.parse_args()
    if not shutil.which("hyperfine"):
        print("bench/spawn_breakdown.py: hyperfine not found", file=sys.stderr)
        return 3
    workdir = tempfile.mkdtemp(prefix="perflab-spawn-")
    streams = open_devnull_streams()
    variants = Variants(streams, args.runs)
    times: dict[str, list[float]] = {"hyperfine -N": [], "perflab run": []}
    if args.other:
        times["perflab run (other)"] = []
    times.update({name: [] for name in variants.all()})
    hyperfine_cpu_us: list[float] = []
    loads = []
    try:
        for r in range(args.rounds):
            loads.append(os.getloadavg()[0])
            median, cpu_us = hyperfine_round(args.runs, os.path.join(workdir, "h.json"))
            times["hyperfine -N"].append(median)
            hyperfine_cpu_us.append(cpu_us)
            times["perflab run"].append(perflab_median(args.runs, os.path.join(workdir, f"p{r}.db")))
            if args.other:
                times["perflab run (other)"].append(
                    perflab_median(args.runs, os.path.join(workdir, f"o{r}.db"), args.other))
            for name, block in variants.all().items():
                times[name].append(block())
    finally:
        variants.close()
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"load average {min(loads):.1f}-{max(loads):.1f} (1 min) on {os.cpu_count()} CPUs; "
          f"{args.runs} runs x {args.rounds} rounds, rounds alternating")
    reference = statistics.median(times["hyperfine -N"])
    print(f"  {'variant':<20} {'median':>9}  {'x hyperfine':>11}  {'paired':>6}   rounds (µs)")
    for name, values in times.items():
        value = statistics.median(values)
        # this VM changes speed for seconds at a time: the ratio within each round moves less
        paired = statistics.median(v / h for v, h in zip(values, times["hyperfine -N"]))
        print(f"  {name:<20} {value * 1e6:7.1f} µs  {value / reference:11.3f}  {paired:6.3f}   "
              f"{' '.join(f'{v * 1e6:.0f}' for v in values)}")
    print(f"  parent CPU per sample: hyperfine {statistics.median(hyperfine_cpu_us):.0f} µs, "
          f"executor take() {statistics.median(variants.executor_cpu_us):.0f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
