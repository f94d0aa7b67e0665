"""The competing-load warning: pressure stalls over the window they were counted in
(real runs, under a real CPU load that the test starts and stops)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
from collections import defaultdict

import pytest

from conftest import _die_with_parent, run_cli

pytestmark = [
    pytest.mark.skipif(not os.path.exists("/proc/pressure/cpu"), reason="no PSI on this kernel"),
    pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng not installed (install.sh installs it)"),
]


def _samples(db: str, run: str) -> dict[tuple[str, int], dict[str, float]]:
    """(benchmark, repetition) -> metric -> value, for the ok values of a run."""
    out: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
    for s in json.loads(run_cli("export", run, db=db, check=True).stdout)["samples"]:
        if s["value"] is not None:
            out[(s["benchmark"], s["repetition"])][s["metric"]] = s["value"]
    return out


def _shares(db: str, run_id: int) -> dict[str, float]:
    from perflab.analysis.contention import READ, stall_shares
    from perflab.store import Store
    with Store(db, create=False) as store:
        return stall_shares(store.value_groups(store.resolve_run(str(run_id)).id, None, READ))


@pytest.fixture
def cpu_load():
    """Twice as many CPU hogs as CPUs, for at most two minutes; stopped however the test ends.
    At nice 19: they wait for the CPU whenever perflab runs (the stall is still there) and
    perflab's own processes are not slowed much."""
    hogs = subprocess.Popen(["nice", "-n", "19", "stress-ng", "--cpu", str(2 * (os.cpu_count() or 1)),
                             "--timeout", "120s", "-q"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=_die_with_parent)
    try:
        yield
    finally:
        hogs.terminate()
        try:
            hogs.wait(timeout=15)
        except subprocess.TimeoutExpired:
            hogs.kill()
            hogs.wait()


def test_stalls_are_a_share_of_their_window_for_any_workload(sqlite_db, cpu_load):
    # shell lines: their `time` has the shell's start-up taken out, the window does not
    run_cli("run", "-q", "-n", "15", "--shell", "sleep 0.002", "sleep 0.001", db=sqlite_db, check=True)
    # a built-in workload without a `time` metric (µs per op and ops/s)
    run_cli("run", "-q", "sched-pipe", "-p", "loops=5000", "-n", "3", db=sqlite_db, check=True)

    for (benchmark, _), metrics in _samples(sqlite_db, "1").items():
        window_s = metrics["psi.window_us"] / 1e6
        assert window_s >= metrics["time"], (benchmark, metrics)   # the spawn is inside the window
        for resource in ("cpu", "memory", "io"):
            assert metrics[f"psi.{resource}_some_us"] <= metrics["psi.window_us"], (benchmark, metrics)
    piped = _samples(sqlite_db, "2")
    assert piped and all("time" not in m and m["psi.window_us"] > 0 for m in piped.values())

    for run_id in (1, 2):
        shares = _shares(sqlite_db, run_id)
        assert set(shares) == {"cpu", "memory", "io"}
        assert all(0 <= share <= 1 for share in shares.values()), shares
        # the hogs outnumber the CPUs: every run, with or without `time`, is flagged
        warning = [line for line in run_cli("show", str(run_id), db=sqlite_db, check=True).stdout.splitlines()
                   if line.startswith("warning: some task waited for cpu")]
        assert len(warning) == 1, warning
        percent = re.search(rf"run {run_id} \([^)]*\) (\d+)%", warning[0])
        assert percent and int(percent.group(1)) <= 100, warning

    # the window is the runner's watch, not the benchmark's: out of comparisons unless named
    compared = run_cli("compare", "1", db=sqlite_db, check=True).stdout
    assert "psi." not in compared.split("warnings:")[0]
    named = run_cli("compare", "1", "--metric", "psi.window_us", db=sqlite_db, check=True).stdout
    assert "psi.window_us" in named


def test_a_run_recorded_without_a_window_falls_back_to_its_time(sqlite_db, cpu_load):
    run_cli("run", "-q", "-n", "10", "--shell", "sleep 0.002", "sleep 0.001", db=sqlite_db, check=True)
    with_window = _shares(sqlite_db, 1)
    samples = _samples(sqlite_db, "1")
    # as a run recorded before psi.window_us existed
    with sqlite3.connect(sqlite_db) as conn:
        for table in ("samples", "series"):
            conn.execute(f"DELETE FROM {table} WHERE metric = 'psi.window_us'")
    without = _shares(sqlite_db, 1)
    paired = [m for m in samples.values() if "time" in m and "psi.cpu_some_us" in m]
    expected = sum(m["psi.cpu_some_us"] for m in paired) / 1e6 / sum(m["time"] for m in paired)
    assert without["cpu"] == pytest.approx(expected)
    # `time` is shorter than the window (the shell's start-up is out): the old share was larger
    assert without["cpu"] > with_window["cpu"]
