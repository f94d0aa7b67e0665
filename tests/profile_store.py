"""A real store with real profiles: a C program profiled with perf, two variants, 5 repetitions.

Variant "base" does 3 units of work in hot_loop and 1 in warm_loop (shares ~75/25);
"patched" does 3 and 3 (~50/50): warm_loop's share goes up by ~25 points, hot_loop's
down by as much. Every repetition is ``perf record -e cpu-clock -g`` of the program,
``perf script`` into ``perf_profile.aggregate``, then ``store.profiles.add`` (symbols,
call traces, folded stacks), as the perf-profile monitor does. Beside the profile each
repetition stores the program's measured wall time (the benchmark's metric) and the
child's user time as ``rusage.utime`` (a monitor metric: a counter).

``profiled_store`` records it once per test session (whichever xdist worker asks first) and
gives each module a copy of its own: the four modules that read it used to record it each.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from perflab.execute.perf_profile import aggregate
from perflab.model.records import Direction, Measurement, MetricInfo, Point, RunStatus
from perflab.model.run_request import RunRequest
from perflab.store import Store

import services

PROG = r"""
#include <stdio.h>
#include <stdlib.h>
static volatile unsigned long sink;
__attribute__((noinline)) void hot_loop(unsigned long n)
{
    unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++)
        s += i * 2654435761u ^ (s >> 3);
    sink = s;
}
__attribute__((noinline)) void warm_loop(unsigned long n)
{
    unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++)
        s += i * 2654435761u ^ (s >> 3);
    sink = s;
}
int main(int argc, char **argv)
{
    unsigned long n = strtoul(argv[1], 0, 10);
    unsigned long warm = strtoul(argv[2], 0, 10);
    hot_loop(3 * n);
    warm_loop(warm * n);
    printf("%lu\n", sink);
    return 0;
}
"""
UNITS = 12_000_000   # ~0.1 s per unit of work at -O1
VARIANTS = {"base": 1, "patched": 3}
REPETITIONS = 5   # 3 vs 3 left a 25-point share change at q = 0.18 once in CI (Welch, FDR over the rows)
POINT = Point("twoloops", {"n": 1})


def require_perf() -> None:
    if not (shutil.which("perf") and shutil.which("cc")):
        if os.environ.get("CI"):
            pytest.fail("perf or cc missing; install.sh installs linux-perf and gcc")
        pytest.skip("perf or cc not installed")


def _profile_once(workdir: Path, warm: int, tag: str) -> tuple[float, float, object]:
    data = workdir / f"{tag}.data"
    start = time.perf_counter()
    child = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-g", "-o", str(data), "--",
                              str(workdir / "prog"), str(UNITS), str(warm)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    stderr = child.stderr.read().decode(errors="replace")
    child.stderr.close()
    if child.returncode != 0:
        pytest.skip(f"perf record failed here: {stderr.strip()[:200]}")
    script = subprocess.Popen(["perf", "script", "-i", str(data)], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, errors="replace")
    profile = aggregate(script.stdout)
    assert script.wait(timeout=60) == 0
    return wall, usage.ru_utime, profile


def build_store(workdir: Path) -> str:
    """The SQLite file of runs 1 (base) and 2 (patched), profiled for real."""
    require_perf()
    (workdir / "prog.c").write_text(PROG)
    subprocess.run(["cc", "-O1", "-fno-omit-frame-pointer", "-fno-inline", "-o", "prog", "prog.c"],
                   cwd=workdir, check=True)
    db = str(workdir / "perflab.db")
    with Store(db, create=True) as store:
        store.metrics.save(POINT.benchmark, [MetricInfo("time", "s", Direction.LOWER)])
        point_id = store.samples.point_id(POINT)
        for label, warm in VARIANTS.items():
            run_id = store.runs.create(label=label, host="test", request=RunRequest(), environment={})
            for rep in range(REPETITIONS):
                wall, utime, profile = _profile_once(workdir, warm, f"{label}{rep}")
                store.samples.add(run_id, POINT, rep, [Measurement("time", wall, "s"),
                                                       Measurement("rusage.utime", utime, "s")])
                [event] = profile.events
                symbols = [(sym, profile.self_percent.get(sym, 0.0), pct)
                           for sym, pct in profile.children_percent.items()]
                traces = [("calltrace", ";".join(t), v) for t, v in profile.calltrace_percent.items()]
                traces += [("stack", ";".join(s), n) for s, n in profile.stacks.items()]
                store.profiles.add(run_id, point_id, rep, event, symbols, traces)
            store.runs.set_status(run_id, RunStatus.COMPLETE)
            store.series.seal(run_id)
        # a run without any profile, for the error paths
        bare = store.runs.create(label="bare", host="test", request=RunRequest(), environment={})
        store.samples.add(bare, POINT, 0, [Measurement("time", 0.5, "s")])
        store.runs.set_status(bare, RunStatus.COMPLETE)
    return db


def profiled_store(directory: Path) -> str:
    """A copy in ``directory`` of the session's one ``build_store`` (recorded under the session's
    directory by the first test that asks, on any worker; the others wait for it): a test may
    write to its copy."""
    def record(register) -> str:
        assert services.directory is not None
        workdir = services.directory / "profile-store"
        shutil.rmtree(workdir, ignore_errors=True)   # what a skipped attempt left
        workdir.mkdir()
        register({"remove": [str(workdir)]})
        return build_store(workdir)

    db = str(directory / "perflab.db")
    source, copy = sqlite3.connect(services.shared("profile-store", record)), sqlite3.connect(db)
    try:
        source.backup(copy)
    finally:
        source.close()
        copy.close()
    return db
