#!/usr/bin/env python3
"""Does reading a cgroup file between samples slow the next sample? (issue #20's overhead)

A plain loop of `os.posix_spawn("true")` + `wait4`, inside a fresh cgroup v2 (as root),
in blocks that alternate: nothing read between samples, against FILE of the cgroup read
after every sample (as `RunCgroups.end_sample` reads cgroup.procs). Prints each block's
median sample time. Needs cgroup2 at /sys/fs/cgroup/unified or /sys/fs/cgroup.

Usage: bench/cgroup_read_probe.py [--file cgroup.procs] [--runs 1500] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

ROOTS = (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup"))


def block(env: dict[bytes, bytes], runs: int, read: Path | None) -> float:
    """Median µs of ``runs`` samples of `true`, reading ``read`` after each one."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        pid = os.posix_spawn("/usr/bin/true", ["true"], env, setpgroup=0)
        os.wait4(pid, 0)
        times.append(time.perf_counter() - start)
        if read is not None:
            read.read_bytes()
    return statistics.median(times) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", default="cgroup.procs")
    parser.add_argument("--runs", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    root = next((r for r in ROOTS if (r / "cgroup.procs").exists() and (r / "cgroup.controllers").exists()), None)
    if root is None or os.geteuid() != 0:
        print("bench/cgroup_read_probe.py: needs root and cgroup v2")
        return 3
    group = root / f"perflab-probe-{os.getpid()}"
    group.mkdir()
    env = {os.fsencode(k): os.fsencode(v) for k, v in os.environ.items()}
    try:
        (group / "cgroup.procs").write_text("0")
        for _ in range(args.rounds):
            quiet, read = block(env, args.runs, None), block(env, args.runs, group / args.file)
            print(f"nothing read {quiet:6.1f} us   {args.file} read after each sample {read:6.1f} us "
                  f"({read / quiet:.3f}x)")
    finally:
        (root / "cgroup.procs").write_text("0")
        group.rmdir()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
