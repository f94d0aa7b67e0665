"""Start-up time of the commands a user types first, against `python3 -c pass` in the same run.

    .venv/bin/python bench/startup.py [-n 15] [--before SRC]

Runs each command N times, interleaved round by round (so a drift of the machine's load hits
every command alike), against a store holding one small run, and prints each one's median
wall time, its ratio to the interpreter's own start-up and whether it is within the 0.15 s
target. `--before SRC` also times another checkout's src/ (say, a worktree of an older commit)
on the same commands in the same rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 0.15
PERFLAB = [str(Path(sys.executable).with_name("perflab"))]
ARGS = [["--version"], ["--help"], ["runs"], ["show", "demo"], ["compare", "--help"]]


def _commands(before: str | None) -> dict[str, list[str]]:
    commands = {"python3 -c pass": [sys.executable, "-c", "pass"]}
    for args in ARGS:
        commands[" ".join(["perflab", *args])] = [*PERFLAB, *args]
        if before:  # the same entry point, imported from the other checkout
            launcher = f"import sys; sys.path.insert(0, {before!r}); from perflab.cli.main import main; main()"
            commands[" ".join(["before:", *args])] = [sys.executable, "-c", launcher, *args]
    return commands


def _time(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=15, help="rounds (each command once per round)")
    parser.add_argument("--before", metavar="SRC", help="another checkout's src/ directory, timed alongside")
    args = parser.parse_args()
    commands = _commands(args.before and str(Path(args.before).resolve()))
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PERFLAB_DB=os.path.join(tmp, "perflab.db"))
        subprocess.run([*PERFLAB, "run", "-n", "3", "-q", "--label", "demo", "--", "true"], env=env, check=True)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.n):
            for name, argv in commands.items():
                times[name].append(_time(argv, env))
    base = statistics.median(times["python3 -c pass"])
    print(f"median of {args.n} runs each, interleaved; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs")
    print(f"{'command':<24} {'median':>8} {'x python':>9} {'target':>8}")
    for name, values in times.items():
        median = statistics.median(values)
        verdict = "ok" if median <= TARGET_S else "over"
        print(f"{name:<24} {median * 1000:6.0f} ms {median / base:8.1f}x {verdict:>8}")


if __name__ == "__main__":
    main()
