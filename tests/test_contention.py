"""The competing-load warning: CPU time and stalls outside perflab's cgroups (real runs,
under a real CPU load that the test starts and stops, and under a benchmark whose own
tasks outnumber the CPUs)."""

from __future__ import annotations

import json
import os
import shutil
from collections import defaultdict

import pytest

from perflab.analysis.contention import Z

from conftest import _die_with_parent, run_cli

pytestmark = [
    pytest.mark.skipif(not os.path.exists("/proc/pressure/cpu"), reason="no PSI on this kernel"),
    pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng not installed (install.sh installs it)"),
]
CPUS = os.cpu_count() or 1


def _samples(db: str, run: str) -> list[dict[str, float]]:
    """Per sample, metric -> value, for the ok values of a run."""
    out: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
    for s in json.loads(run_cli("export", run, db=db, check=True).stdout)["samples"]:
        if s["value"] is not None:
            out[(s["benchmark"], s["repetition"])][s["metric"]] = s["value"]
    return list(out.values())


def _shares(db: str, run_id: int) -> dict[str, float]:
    from perflab.analysis.contention import READ, outside_shares
    from perflab.store import Store
    with Store(db, create=False) as store:
        return outside_shares(store.series.value_groups(store.runs.resolve(str(run_id)).id, None, READ), CPUS)


def _load_line(db: str, run_id: int) -> str:
    lines = [line for line in run_cli("show", str(run_id), db=db, check=True).stdout.splitlines()
             if "another load" in line]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.fixture
def cpu_load():
    """Twice as many CPU hogs as CPUs, for at most two minutes; stopped however the test ends."""
    import subprocess
    hogs = subprocess.Popen(["nice", "-n", "19", "stress-ng", "--cpu", str(2 * CPUS), "--timeout", "120s", "-q"],
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


def test_another_load_is_measured_and_warned_about(sqlite_db, cpu_load):
    # the benchmark sleeps: whatever CPU the machine spent meanwhile was another load's
    run_cli("run", "-q", "-n", "5", "sleep 0.1", db=sqlite_db, check=True)
    shares = _shares(sqlite_db, 1)
    assert set(shares) == {"cpu", "memory", "io", "cpu_error"}
    assert shares["cpu"] - Z * shares["cpu_error"] > 0.5, shares    # the hogs keep every CPU busy
    line = _load_line(sqlite_db, 1)
    assert line.startswith("warning: another load competed") and f"of {CPUS} CPUs" in line, line
    # the runner's watch is out of comparisons and of show's table unless named
    run_cli("run", "-q", "-n", "5", "sleep 0.1", db=sqlite_db, check=True)
    compared = run_cli("compare", "1", "2", db=sqlite_db, check=True)
    assert "outside." not in compared.stdout.split("warnings:")[0]
    assert "another load competed" in compared.stdout + compared.stderr
    assert "outside.cpu_us" not in run_cli("show", "1", db=sqlite_db, check=True).stdout.split("Machine")[1]
    named = run_cli("show", "1", "--metric", "outside.window_us", db=sqlite_db, check=True).stdout
    assert "outside.window_us" in named and " time " not in named


def test_the_benchmarks_own_tasks_are_not_another_load(sqlite_db):
    # twice as many hogs as CPUs, all the benchmark's own: they count inside, not outside
    run_cli("run", "-q", "-n", "3", "--", "stress-ng", "--cpu", str(2 * CPUS), "--timeout", "1s", "-q",
            db=sqlite_db, check=True)
    for sample in _samples(sqlite_db, "1"):
        own_us = 1e6 * (sample["user"] + sample["system"])
        capacity_us = sample["outside.window_us"] * CPUS
        assert own_us > 0.05 * capacity_us, sample   # the hogs ran (however loaded the machine)
        # own and outside add up to at most the machine; had the hogs counted outside too,
        # the sum would exceed it by their own time (the tick-counted busy time is within it)
        assert sample["outside.cpu_us"] + own_us < capacity_us + 0.5 * own_us, sample


def test_windows_tile_the_samples_and_a_hook_starts_a_new_one(sqlite_db):
    # perflab stays in its cgroups between samples, so a sample's window starts where the last
    # one ended (one reading a sample); a --prepare hook runs outside them, so after it a window
    # starts anew: the hook's 0.3 s (another load, as far as the counters know) is in none
    run_cli("run", "-q", "-n", "6", "--", "true", db=sqlite_db, check=True)
    run_cli("run", "-q", "-n", "3", "--prepare", "sleep 0.3", "--", "true", db=sqlite_db, check=True)
    chained, hooked = _samples(sqlite_db, "1"), _samples(sqlite_db, "2")
    for sample in chained + hooked:
        assert sample["outside.window_us"] >= 1e6 * sample["time"], sample   # the spawn is inside it
    assert all(sample["outside.window_us"] < 0.25e6 for sample in hooked), hooked


def test_a_chained_reading_starts_where_the_last_ended(tmp_path):
    from perflab.execute.outside import Reader
    own = tmp_path / "own"   # a directory shaped like a cgroup's, to read without one
    own.mkdir()
    (own / "cpu.stat").write_text("usage_usec 10\nuser_usec 5\nsystem_usec 5\n")
    for name in ("memory", "io"):
        (own / f"{name}.pressure").write_text("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    reader = Reader(own)
    first = reader.begin(chained=True)   # nothing to chain to yet: a new reading
    assert first is not None and reader.since(first) is not None
    ended = reader._latest.ended_us
    chained = reader.begin(chained=True)
    assert chained is not None and chained.began_us == chained.ended_us == ended
    assert reader.begin(chained=True).began_us > ended   # taken once: the next one is new
    reader.close()


def test_one_clock_tick_in_a_short_run_is_not_another_load():
    # 8 samples of 10 ms on 2 CPUs: the machine's busy time comes in 10 ms ticks, so one tick
    # charged outside is 5.2% of the run's CPU capacity: within what tick counting resolves
    import numpy as np

    from perflab.analysis.contention import Outside, outside_shares
    from perflab.store.series import ValueGroup

    def run(outside_us: float, windows: int = 8, window_us: float = 12_000.0) -> Outside:
        groups = [ValueGroup("b", "{}", "outside.cpu_us", "us", np.full(windows, outside_us / windows), 0),
                  ValueGroup("b", "{}", "outside.window_us", "us", np.full(windows, window_us), 0)]
        for name in ("memory", "io"):
            groups.append(ValueGroup("b", "{}", f"outside.{name}_stall_us", "us", np.zeros(windows), 0))
        shares = outside_shares(groups, 2)
        return Outside(None, 2, shares["cpu"], shares["memory"], shares["io"], shares["cpu_error"])  # type: ignore[arg-type]

    ticked = run(2 * 10_000.0)   # two ticks: 10.4%, a share the old rule (over 5%) flagged
    assert ticked.cpu > 0.05 and not ticked.competed
    assert run(8 * 12_000.0).competed              # another load on half the machine throughout
    assert run(10_000.0, windows=100).cpu_error < 0.01   # a longer run resolves a tick finer


def test_loads_on_two_sides_are_alike_only_when_shown_equal():
    # a verdict of separate runs is judged only when their loads are shown alike: a 2x step
    # was once called "good" against a base that ran beside 72% (+-12.5) of outside load,
    # the candidate beside 51% (+-7.5): both flagged, their difference unresolved
    from perflab.analysis.contention import Outside, same_load

    def load(cpu: float, error: float, memory: float = 0.0) -> Outside:
        return Outside(None, 2, cpu, memory, 0.0, error)  # type: ignore[arg-type]

    quiet, busy = load(0.01, 0.01), load(0.40, 0.01)
    assert same_load([quiet], [quiet]) and same_load([], [])
    assert not same_load([quiet], [busy]) and not same_load([busy], [])   # one side only, or unmeasured
    assert not same_load([load(0.722, 0.125)], [load(0.507, 0.075)])     # the ticks cannot tell
    assert same_load([busy], [load(0.41, 0.005)])                         # long runs resolve it
    assert not same_load([busy], [load(0.41, 0.005, memory=0.2)])         # memory stalls apart
    assert same_load([busy, busy], [load(0.39, 0.01)])                    # a side's runs, their mean
