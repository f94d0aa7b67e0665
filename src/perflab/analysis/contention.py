"""Did another load compete with a run? What ran outside perflab's cgroups meanwhile.

Every sample records the CPU µs used outside perflab's cgroup directory and the µs
tasks outside it stalled on memory and I/O while none inside did (execute/outside.py),
over a window (``outside.window_us``). Summed over a run: the CPU share is the outside
CPU time over the windows times the run's online CPUs (the share of the machine another
load took), the stall shares are stall over window. The benchmark's own tasks are
inside the directory, so however many threads it runs they never count. Above
``OUTSIDE_SHARE`` the run is flagged: another load competed, and its times may carry it.

The machine's busy time comes in clock ticks (10 ms at USER_HZ 100), charged whole to
whatever ran when the tick came: over a run of 8 samples of 10 ms, one tick is 5% of 2
CPUs. So the CPU share must pass ``OUTSIDE_SHARE`` by more than that resolution allows: by
``Z`` standard errors of a count of ticks (Poisson, sqrt(tick x outside µs), plus a tick for
the readings at the ends). The stall figures are in µs and need no margin.

Runs recorded before this (``psi.*`` metrics only) could not tell another load from
the benchmark's own tasks: they get no figure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from perflab.model.records import OUTSIDE_METRIC_PREFIX, OUTSIDE_WINDOW_METRIC, NotLoaded, RunInfo
from perflab.store import Store
from perflab.store.series import ValueGroup

OUTSIDE_SHARE = 0.05   # as the noise floor of the monitors' counters (lkp-tests: 5%)
Z = 1.645              # one-sided 5%: a share this far above OUTSIDE_SHARE is not the ticks' noise
TICK_US = 1e6 / 100    # /proc/stat's unit: USER_HZ, 100 on every Linux ABI perflab runs on
RESOURCES = {f"{OUTSIDE_METRIC_PREFIX}cpu_us": "cpu", f"{OUTSIDE_METRIC_PREFIX}memory_stall_us": "memory",
             f"{OUTSIDE_METRIC_PREFIX}io_stall_us": "io"}
READ = set(RESOURCES) | {OUTSIDE_WINDOW_METRIC}


@dataclass(frozen=True)
class Outside:
    """A run's outside load: shares (0..1) of CPU time and of memory/I/O stall."""

    run: RunInfo
    cpus: int
    cpu: float
    memory: float
    io: float
    cpu_error: float = 0.0   # the CPU share's standard error from tick counting

    @property
    def competed(self) -> bool:
        return self.cpu - Z * self.cpu_error > OUTSIDE_SHARE or max(self.memory, self.io) > OUTSIDE_SHARE

    def text(self) -> str:
        return (f"{_pct(self.cpu)} (+-{100 * self.cpu_error:.1f}% in clock ticks) of {self.cpus} CPUs, "
                f"memory stalls {_pct(self.memory)}, I/O stalls {_pct(self.io)}")


def same_load(base: Sequence[Outside], new: Sequence[Outside]) -> bool:
    """Whether two sides' runs are shown to have competed alike: another load competed with
    neither, or its shares on the two sides (their runs' means) are equal within
    OUTSIDE_SHARE -- for the CPU by ``Z`` standard errors of its ticks, an equivalence test
    one-sided 5% each way. Not shown, a time's difference may be the load's."""
    if not any(load.competed for load in (*base, *new)):
        return True
    if not base or not new:
        return False
    (cpu_a, memory_a, io_a, error_a), (cpu_b, memory_b, io_b, error_b) = _mean_load(base), _mean_load(new)
    return (abs(cpu_a - cpu_b) + Z * math.hypot(error_a, error_b) < OUTSIDE_SHARE
            and max(abs(memory_a - memory_b), abs(io_a - io_b)) < OUTSIDE_SHARE)


def _mean_load(side: Sequence[Outside]) -> tuple[float, float, float, float]:
    """The mean CPU, memory and I/O shares of a side's runs, and the CPU mean's tick error."""
    k = len(side)
    return (sum(load.cpu for load in side) / k, sum(load.memory for load in side) / k,
            sum(load.io for load in side) / k, math.sqrt(sum(load.cpu_error ** 2 for load in side)) / k)


def cpu_share_text(side: Sequence[Outside]) -> str:
    """A side's outside CPU share in words ("48.8% +-5.0% of 2 CPUs"; its runs' mean); "" unmeasured."""
    if not side:
        return ""
    cpu, _, _, error = _mean_load(side)
    return f"{_pct(cpu)} +-{100 * error:.1f}% of {side[0].cpus} CPUs"


def _pct(share: float) -> str:
    return f"{100 * max(share, 0.0):.1f}%"


def outside_shares(groups: Sequence[ValueGroup], cpus: int) -> dict[str, float]:
    """Per resource, the outside figures of a run's samples (its value groups of the
    READ metrics) as a share of the windows they cover, and ``cpu_error`` the CPU share's
    standard error from tick counting; empty when none were recorded."""
    window = sum(float(g.values.sum()) for g in groups if g.metric == OUTSIDE_WINDOW_METRIC)
    if window <= 0:
        return {}
    shares = dict.fromkeys(RESOURCES.values(), 0.0)
    for g in groups:
        if g.metric in RESOURCES:
            shares[RESOURCES[g.metric]] += float(g.values.sum()) / window
    capacity = window * max(cpus, 1)
    shares["cpu_error"] = math.sqrt(TICK_US * max(shares["cpu"] * window, 0.0) + TICK_US ** 2) / capacity
    shares["cpu"] /= max(cpus, 1)
    return shares


def outside_loads(store: Store, runs: Sequence[RunInfo],
                  read: Mapping[int, Sequence[ValueGroup]] | None = None) -> list[Outside]:
    """The outside load of each run that recorded it, one query for many runs; ``read``:
    the runs' groups of the READ metrics a caller read already (a change report's, of its
    test case), no query."""
    groups = store.series.value_groups_of_runs([run.id for run in runs], None, READ) if read is None else read
    measured = [run for run in runs if groups.get(run.id)]
    # a long history's runs come without their environment: read it for those measured
    light = [run for run in measured if isinstance(run.environment, NotLoaded)]
    detailed = store.runs.with_details(light) if light else {}
    out = []
    for run in measured:
        environment = detailed[run.id].environment if run.id in detailed else run.environment
        cpu = (environment or {}).get("cpu")
        online = cpu.get("online_count") if isinstance(cpu, dict) else None
        cpus = int(online) if isinstance(online, (int, float, str)) and online else 1
        shares = outside_shares(groups[run.id], cpus)
        if shares:
            out.append(Outside(run, cpus, shares["cpu"], shares["memory"], shares["io"], shares["cpu_error"]))
    return out


def contention_line(store: Store, run: RunInfo) -> str:
    """One line for `show`: how much another load competed (a warning beyond OUTSIDE_SHARE)."""
    found = outside_loads(store, [run])
    if not found:
        return "another load: not measured (the run was recorded without perflab's own cgroups)"
    load = found[0]
    if load.competed:
        return (f"warning: another load competed (over {100 * OUTSIDE_SHARE:g}%): {load.text()} "
                "outside perflab's cgroups")
    return f"another load (outside perflab's cgroups): {load.text()}"


def contention_warnings(store: Store, runs: Sequence[RunInfo],
                        read: Mapping[int, Sequence[ValueGroup]] | None = None) -> list[str]:
    """One line naming the runs another load competed with beyond OUTSIDE_SHARE (the worst
    first); ``read`` as ``outside_loads``'."""
    flagged = sorted((load for load in outside_loads(store, runs, read) if load.competed),
                     key=lambda load: -max(load.cpu, load.memory, load.io))
    if not flagged:
        return []
    named = "; ".join(f"run {load.run.id} ({load.run.label}) {load.text()}" for load in flagged[:3])
    more = f"; and {len(flagged) - 3} more of {len(runs)} runs" if len(flagged) > 3 else ""
    return [f"another load competed (outside perflab's cgroups, over {100 * OUTSIDE_SHARE:g}%): {named}{more}"]
