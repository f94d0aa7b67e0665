"""Start-up time of the commands a user types first, against `python3 -c pass` in the same run.

    .venv/bin/python bench/startup.py [-n 15] [--before SRC]

Runs each command N times, interleaved round by round (so a drift of the machine's load hits
every command alike), against a store holding one small run, and prints each one's median
wall time, its ratio to the interpreter's own start-up, its CPU time (user + system: less
swayed by other load than the wall time) and whether it is within the 0.15 s target; for
the commands that open the store (runs, show), also their CPU time over the floor any
SQLAlchemy Core store pays: `import sqlalchemy`, the SQLite engine created and one statement run.
`--before SRC` also times another checkout's src/ (say, a worktree of an older commit) on
the same commands in the same rounds.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 0.15
PERFLAB = [str(Path(sys.executable).with_name("perflab"))]
ARGS = [["--version"], ["--help"], ["runs"], ["show", "demo"], ["compare", "--help"]]
FLOOR = "sqlalchemy + sqlite connect"
OPENS_STORE = ("runs", "show")


def _commands(before: str | None) -> dict[str, list[str]]:
    # the floor of any command that opens a store: the store's SQL toolkit alone, and with it
    # the SQLite engine opened and one statement run (SQLite's dialect and its drivers' modules)
    commands = {"python3 -c pass": [sys.executable, "-c", "pass"],
                "python3 -c 'import sqlalchemy'": [sys.executable, "-c", "import sqlalchemy"],
                FLOOR: [sys.executable, "-c", "import os, sqlalchemy; sqlalchemy.create_engine("
                        "'sqlite:///' + os.environ['PERFLAB_DB']).connect().exec_driver_sql('select 1')"]}
    for args in ARGS:
        commands[" ".join(["perflab", *args])] = [*PERFLAB, *args]
        if before:  # the same entry point, imported from the other checkout
            launcher = f"import sys; sys.path.insert(0, {before!r}); from perflab.cli.main import main; main()"
            commands[" ".join(["before:", *args])] = [sys.executable, "-c", launcher, *args]
    return commands


def _time(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall time, and the CPU time (user + system) the process used: on a loaded machine the
    wall time includes waiting for a CPU, the CPU time mostly does not."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=15, help="rounds (each command once per round)")
    parser.add_argument("--before", metavar="SRC", help="another checkout's src/ directory, timed alongside")
    args = parser.parse_args()
    commands = _commands(args.before and str(Path(args.before).resolve()))
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PERFLAB_DB=os.path.join(tmp, "perflab.db"))
        subprocess.run([*PERFLAB, "run", "-n", "3", "-q", "--label", "demo", "--", "true"], env=env, check=True)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.n):
            for name, argv in commands.items():
                times[name].append(_time(argv, env))
    base = statistics.median(wall for wall, _ in times["python3 -c pass"])
    print(f"median of {args.n} runs each, interleaved; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs")
    floor = statistics.median(c for _, c in times[FLOOR])
    print(f"{'command':<32} {'wall':>8} {'x python':>9} {'cpu':>8}  within {TARGET_S} s  cpu over the floor")
    for name, values in times.items():
        wall = statistics.median(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        verdict = "yes" if wall <= TARGET_S else "no"
        over = f"{(cpu - floor) * 1000:+5.0f} ms" if name.split()[1] in OPENS_STORE else ""
        print(f"{name:<32} {wall * 1000:6.0f} ms {wall / base:8.1f}x {cpu * 1000:5.0f} ms  {verdict:<12} {over}")


if __name__ == "__main__":
    main()
