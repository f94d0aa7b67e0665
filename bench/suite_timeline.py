"""Where the test suite's time goes: each test phase's worker, start and end, then what they add up to.

    .venv/bin/python bench/suite_timeline.py run OUT.jsonl [PYTEST ARGS...]   # the README's command, recorded
    .venv/bin/python bench/suite_timeline.py show OUT.jsonl [-n 30]

``run`` runs ``python -m pytest -q`` with this file as a plugin (``-p suite_timeline``): the
xdist controller writes one JSON line per test phase (setup, call, teardown). As root on a
machine with cgroup v1's cpuacct, it runs pytest in a cgroup of its own and prints the CPU time
of every process the suite started (servers and browsers included): it moves less with other
load than the wall time does. ``show`` prints the wall time, the sum of the phases' durations
against the wall time x workers, each worker's busy and idle time, the idle stretches with what
the other workers ran meanwhile (an exclusive test waiting, or the machine held alone), and the
files and tests that take longest.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

_out = None


# -- the plugin (the controller only; a worker's reports reach it with their worker) ------------
def pytest_configure(config) -> None:
    global _out
    path = os.environ.get("SUITE_TIMELINE_OUT")
    if path and not hasattr(config, "workerinput"):
        _out = open(path, "w")  # noqa: SIM115 (open for the whole session)
        _out.write(json.dumps({"session_start": time.time()}) + "\n")


def pytest_runtest_logreport(report) -> None:
    if _out is None:
        return
    gateway = getattr(getattr(report, "node", None), "gateway", None)
    _out.write(json.dumps({"id": report.nodeid, "w": getattr(gateway, "id", "main"), "when": report.when,
                           "start": report.start, "stop": report.stop, "d": report.duration,
                           "o": report.outcome}) + "\n")
    _out.flush()


def pytest_unconfigure(config) -> None:
    if _out is not None:
        _out.write(json.dumps({"session_end": time.time()}) + "\n")
        _out.close()


# -- run ------------------------------------------------------------------------------------------
CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def run(out: str, args: list[str]) -> int:
    """The suite with the plugin; its wall time, and its CPU time where a cpuacct cgroup can be made."""
    group = CPUACCT / f"perflab-suite-{os.getpid()}"
    try:
        group.mkdir()
    except OSError:
        group = None

    def enter() -> None:               # in the child: its own cgroup; SIGINT as a terminal gives it
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if group is not None:
            (group / "cgroup.procs").write_text(str(os.getpid()))
    env = dict(os.environ, SUITE_TIMELINE_OUT=os.path.abspath(out),
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    load, start = os.getloadavg(), time.monotonic()
    code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "suite_timeline", *args], env=env,
                           preexec_fn=enter)
    wall = time.monotonic() - start
    cpu = ""
    if group is not None:
        cpu = f", CPU {int((group / 'cpuacct.usage').read_text()) / 1e9:.0f} s (every process it started)"
        if not (group / "cgroup.procs").read_text().strip():
            group.rmdir()
    print(f"suite_timeline: exit {code}, wall {wall:.0f} s{cpu}; load average {load[0]:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end")
    return code


# -- show -----------------------------------------------------------------------------------------
def show(path: str, most: int) -> None:
    lines = [json.loads(line) for line in Path(path).read_text().splitlines()]
    rows = [r for r in lines if "id" in r]
    t0 = next((r["session_start"] for r in lines if "session_start" in r), min(r["start"] for r in rows))
    t1 = next((r["session_end"] for r in lines if "session_end" in r), max(r["stop"] for r in rows))
    workers: dict[str, list[dict]] = collections.defaultdict(list)
    for r in rows:
        workers[r["w"]].append(r)
    phases = collections.Counter()
    for r in rows:
        phases[r["when"]] += r["d"]
    total = sum(phases.values())
    outcomes = collections.Counter(r["o"] for r in rows if r["when"] == "call" or r["o"] != "passed")
    print(f"wall {t1 - t0:.0f} s, {len({r['id'] for r in rows})} tests, {dict(outcomes)}")
    share = total / max(1, len(workers)) / (t1 - t0)
    print(f"sum of durations {total:.0f} s (setup {phases['setup']:.0f}, call {phases['call']:.0f}, teardown "
          f"{phases['teardown']:.0f}) = {share:.0%} of wall x {len(workers)} workers")
    _concurrency(workers, t0, t1)
    for worker, mine in sorted(workers.items()):
        _idle(worker, mine, rows, t0)
    for title, key in (("files", lambda r: r["id"].split("::")[0]), ("tests", lambda r: r["id"])):
        sums = collections.Counter()
        for r in rows:
            sums[key(r)] += r["d"]
        print(f"{title}, by the sum of their phases:")
        for name, seconds in sums.most_common(most):
            print(f"  {seconds:7.1f}  {name}")


def _concurrency(workers: dict[str, list[dict]], t0: float, t1: float, step: float = 0.1) -> None:
    """How long k workers ran a test at once, for each k: the time with fewer than all of them
    busy is what the serial groups (exclusive, alone), the start and the end cost."""
    busy = collections.Counter()
    spans = [[(r["start"], r["stop"]) for r in mine] for mine in workers.values()]
    ticks = int((t1 - t0) / step)
    marks = [[False] * (ticks + 1) for _ in spans]
    for mark, mine in zip(marks, spans):
        for start, stop in mine:
            for i in range(max(0, int((start - t0) / step)), min(ticks, int((stop - t0) / step)) + 1):
                mark[i] = True
    for i in range(ticks):
        busy[sum(mark[i] for mark in marks)] += step
    print("workers busy at once: " + ", ".join(f"{k}: {busy[k]:.0f} s" for k in sorted(busy, reverse=True)))


def _idle(worker: str, mine: list[dict], rows: list[dict], t0: float) -> None:
    mine.sort(key=lambda r: r["start"])
    busy = sum(r["d"] for r in mine)
    print(f"{worker}: first test at {mine[0]['start'] - t0:.0f} s, last end at {mine[-1]['stop'] - t0:.0f} s, "
          f"busy {busy:.0f} s")
    previous = t0
    for r in mine:
        if r["start"] - previous > 5:
            others = sorted({o["id"].rsplit("/", 1)[-1][:70] for o in rows if o["w"] != worker and o["d"] > 1
                             and o["start"] < r["start"] and o["stop"] > previous})
            print(f"  idle {r['start'] - previous:5.0f} s from {previous - t0:.0f} s; others ran: {others[:3]}")
        previous = max(previous, r["stop"])


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "run":
        sys.exit(run(sys.argv[2], sys.argv[3:]))
    if len(sys.argv) >= 3 and sys.argv[1] == "show":
        try:
            show(sys.argv[2], int(sys.argv[4]) if sys.argv[3:4] == ["-n"] and len(sys.argv) > 4 else 25)
        except (OSError, ValueError, KeyError, StopIteration) as error:
            print(f"suite_timeline: {sys.argv[2]}: not a recording of `run` ({error})", file=sys.stderr)
            sys.exit(2)
        sys.exit(0)
    print("usage: suite_timeline.py run OUT.jsonl [PYTEST ARGS...] | show OUT.jsonl [-n N]", file=sys.stderr)
    sys.exit(2)
