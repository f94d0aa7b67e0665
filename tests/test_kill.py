"""SIGKILL perflab in the middle of a sample of each workload: nothing of the sample
is left 2 s later (no process, cgroup, network namespace or server), and the next
perflab writes the run 'interrupted' (issue 16, defects 3 and 9).

Each sample runs in <cgroup2>/perflab/<perflab pid>/sample-<n> (execute/cgroups.py); the
test reads the processes there (and in session-<n>, a server's) before the kill.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from perflab.execute.cgroups import DIRECTORY, cgroup2_mount
from perflab.store.schema import runs

from conftest import PERFLAB, run_cli
from proc import cmdline, running, wait_for

MOUNT = cgroup2_mount()
pytestmark = pytest.mark.skipif(MOUNT is None or os.geteuid() != 0,
                                reason="needs root and a cgroup2 hierarchy")
GONE_WITHIN_S = 2.0


def _tree_pids(base: Path) -> dict[int, str]:
    """pid -> program name of every process in ``base`` and its sub-cgroups."""
    found = {}
    for directory, _, _ in os.walk(base):
        try:
            pids = Path(directory, "cgroup.procs").read_text().split()
        except OSError:
            continue
        for pid in map(int, pids):
            words = cmdline(pid)
            found[pid] = os.path.basename(words[0]) if words else "?"
    return found


def _netns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def _anyone_in(netns: str) -> bool:
    return any(_netns(int(p)) == netns for p in os.listdir("/proc") if p.isdigit())


CASES = {
    "command": (["-n", "1", "--", "sleep", "1000"], ["sleep"]),
    "command-setsid": (["-n", "1", "--shell", "--", "setsid sleep 1000 & exec sleep 1000"],
                       ["sleep"]),
    "command-perf-stat": (["-n", "1", "--monitor", "perf-stat", "--", "sleep", "1000"],
                          ["sleep", "perf"]),
    "hackbench": (["hackbench", "-n", "1", "-p", "groups=2", "-p", "loops=100000000"],
                   ["perf"]),
    "tbench": (["tbench", "-n", "1", "-p", "duration=100"], ["tbench", "tbench_srv"]),
    "netstream": (["netstream", "-n", "1", "-p", "duration=100"], ["iperf3"]),
    "cgroup-switch": (["cgroup-switch", "-n", "1", "-p", "loops=100000000"], ["cgroup_switch"]),
    "wis": (["wis", "-n", "1", "-p", "duration=100"], ["wis"]),
    "breakpoint": (["breakpoint-enable", "-n", "1", "-p", "repeat=100000000"], ["perf"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_sigkill_of_perflab_leaves_nothing_of_the_sample(case, tmp_path):
    args, programs = CASES[case]
    db = str(tmp_path / "perflab.db")
    env = dict(os.environ)
    env.pop("PERFLAB_DB", None)
    proc = subprocess.Popen([*PERFLAB, "--db", db, "run", "-q", *args], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    base = MOUNT / DIRECTORY / str(proc.pid)
    try:
        def started() -> dict[int, str] | None:
            pids = _tree_pids(base)
            samples = [d for d in base.glob("sample-*") if _tree_pids(d)] if base.exists() else []
            names = set(pids.values())
            return pids if samples and all(any(n.startswith(p) for n in names)
                                           for p in programs) else None

        pids = wait_for(started, 60)
        if not pids:
            proc.kill()
            pytest.fail(f"the sample never started: {proc.communicate()[1].decode()[-2000:]}")
        time.sleep(0.3)   # let it start what it starts (clients, threads)
        pids = _tree_pids(base)
        namespaces = {ns for pid in pids if (ns := _netns(pid)) and ns != _netns(os.getpid())}
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert wait_for(lambda: not base.exists(), GONE_WITHIN_S), f"{base} is left"
        left = {pid: name for pid, name in pids.items() if running(pid)}
        assert not left, f"left running: {left}"
        assert not any(_anyone_in(ns) for ns in namespaces)
    finally:
        proc.kill()
        proc.wait()

    listing = run_cli("runs", db=db, check=True).stdout   # the next perflab
    assert "interrupted" in listing
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        assert conn.execute(sa.select(runs.c.status)).scalar() == "interrupted"
    engine.dispose()


def test_a_timeout_kills_a_setsid_grandchild(tmp_path):
    marker = tmp_path / "grandchild"
    result = run_cli("run", "-n", "1", "--timeout", "0.5", "--shell", "--",
                     f"setsid sh -c 'echo $$ > {marker}; exec sleep 1000' & sleep 1000",
                     db=str(tmp_path / "perflab.db"))
    assert result.returncode == 2   # every sample timed out
    grandchild = int(marker.read_text())
    assert not running(grandchild)


def test_a_dead_perflabs_cgroups_are_removed_by_the_next(tmp_path):
    """Both perflab and its janitor killed: the next perflab sweeps the directory."""
    parent = MOUNT / DIRECTORY
    parent.mkdir(exist_ok=True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = parent / str(dead.pid)
    (stale / "sample-1").mkdir(parents=True)
    sleeper = subprocess.Popen(["sleep", "1000"])
    (stale / "sample-1" / "cgroup.procs").write_text(str(sleeper.pid))
    try:
        run_cli("run", "-n", "1", "-q", "--", "true", db=str(tmp_path / "perflab.db"), check=True)
        assert not stale.exists()
        assert sleeper.wait(5) == -signal.SIGKILL
    finally:
        sleeper.kill()
        sleeper.wait()
