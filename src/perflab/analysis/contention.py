"""Did another load compete with a run? Its samples' pressure stalls against their window.

Every sample records the µs some task of the machine stalled on CPU, memory and I/O
while it ran (/proc/pressure, execute/pressure.py), and the window those stalls were
counted over (``psi.window_us``, the spawn included). Summed over a run, stalls over
windows is the share of the sampled time the machine was short of that resource: at
most 100%, for any workload. Runs recorded before the window was (no
``psi.window_us``) fall back to their ``time`` metric, which a shell line's start-up
is subtracted from, so their share can exceed 100% and a workload without ``time``
gets none. Above ``STALL_SHARE`` the run is flagged: some task (another job, or the
benchmark's own threads when they outnumber the CPUs) waited for the resource, so
its times may carry that wait.
"""

from __future__ import annotations

from collections.abc import Sequence

from perflab.model.records import PRESSURE_METRIC_PREFIX, PRESSURE_WINDOW_METRIC, RunInfo
from perflab.store import Store
from perflab.store.repository import ValueGroup

STALL_SHARE = 0.10   # stalled for more than 10% of the sampled wall time
RESOURCES = ("cpu", "memory", "io")
OLD_WINDOW_METRIC = "time"   # the denominator of runs recorded without a window (s)


WANTED = {f"{PRESSURE_METRIC_PREFIX}{name}_some_us": name for name in RESOURCES}
READ = set(WANTED) | {PRESSURE_WINDOW_METRIC, OLD_WINDOW_METRIC}


def stall_shares(groups: Sequence[ValueGroup]) -> dict[str, float]:
    """Per resource, the stalled µs of a run's samples (its value groups of the READ
    metrics) over the windows they cover."""
    windows = {(g.benchmark, g.point): float(g.values.sum()) / 1e6
               for g in groups if g.metric == PRESSURE_WINDOW_METRIC}
    for g in groups:
        if g.metric == OLD_WINDOW_METRIC:
            windows.setdefault((g.benchmark, g.point), float(g.values.sum()))
    stalled: dict[str, float] = {}
    watched: set[tuple[str, str]] = set()
    for g in groups:
        if g.metric in WANTED and (g.benchmark, g.point) in windows:
            stalled[WANTED[g.metric]] = stalled.get(WANTED[g.metric], 0.0) + float(g.values.sum()) / 1e6
            watched.add((g.benchmark, g.point))
    window = sum(windows[key] for key in watched)
    return {name: seconds / window for name, seconds in stalled.items()} if window > 0 else {}


def contention_warnings(store: Store, runs: Sequence[RunInfo]) -> list[str]:
    """One line per resource that stalled beyond STALL_SHARE of a run's sampled time,
    naming the runs (the worst first when there are many)."""
    groups = store.value_groups_of_runs([run.id for run in runs], None, READ)   # one query for many runs
    shares = {run.id: (run, stall_shares(groups.get(run.id, []))) for run in runs}
    out = []
    for name in RESOURCES:
        flagged = sorted(((share[name], run) for run, share in shares.values() if share.get(name, 0) > STALL_SHARE),
                         key=lambda item: -item[0])
        if not flagged:
            continue
        named = ", ".join(f"run {run.id} ({run.label}) {100 * share:.0f}%" for share, run in flagged[:3])
        more = f" and {len(flagged) - 3} more of {len(shares)} runs" if len(flagged) > 3 else ""
        out.append(f"some task waited for {name} during more than {100 * STALL_SHARE:.0f}% of the sampled time "
                   f"(/proc/pressure/{name}): {named}{more}; another load competed, or the benchmark's own "
                   "tasks outnumbered the resource")
    return out
