"""Did another load compete with a run? Its samples' pressure stalls against their wall time.

Every sample records the µs some task of the machine stalled on CPU, memory and I/O
while it ran (/proc/pressure, execute/pressure.py). Summed over a run and divided by
the run's summed wall time of those samples, it is the share of the sampled time the
machine was short of that resource. Above ``STALL_SHARE`` the run is flagged: some
task (another job, or the benchmark's own threads when they outnumber the CPUs) waited
for the resource, so its times may carry that wait.
"""

from __future__ import annotations

from perflab.model.records import RunInfo
from perflab.store import Store

STALL_SHARE = 0.10   # stalled for more than 10% of the sampled wall time
RESOURCES = ("cpu", "memory", "io")


def contention_warnings(store: Store, run: RunInfo) -> list[str]:
    """One line per resource that stalled beyond STALL_SHARE of the run's sampled time."""
    wanted = {f"psi.{name}_some_us" for name in RESOURCES}
    groups = store.value_groups(run.id, None, wanted | {"time"})
    walls = {(g.benchmark, g.point): float(g.values.sum()) for g in groups if g.metric == "time"}
    stalled: dict[str, float] = {}
    wall = 0.0
    seen: set[tuple[str, str]] = set()
    for g in groups:
        if g.metric in wanted and (g.benchmark, g.point) in walls:
            stalled[g.metric] = stalled.get(g.metric, 0.0) + float(g.values.sum()) / 1e6
            if (g.benchmark, g.point) not in seen:
                seen.add((g.benchmark, g.point))
                wall += walls[(g.benchmark, g.point)]
    out = []
    for name in RESOURCES:
        seconds = stalled.get(f"psi.{name}_some_us", 0.0)
        if wall > 0 and seconds / wall > STALL_SHARE:
            out.append(f"run {run.id} ({run.label}): some task waited for {name} during {100 * seconds / wall:.0f}% "
                       f"of the sampled time (/proc/pressure/{name}; flagged above {100 * STALL_SHARE:.0f}%): "
                       "another load competed, or the benchmark's own tasks outnumbered the resource")
    return out
