"""What this machine can actually do: which tools are installed, which perf events count.

Inside a VM the hardware counters are usually missing while software events work;
knowing that before a run turns a confusing empty column into a clear
"cycles: not supported" line in ``perflab doctor``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple


class Tool(NamedTuple):
    """An external program perflab may run, and the Debian package that provides it."""

    purpose: str
    package: str


TOOLS: Mapping[str, Tool] = MappingProxyType({
    "perf": Tool("counting events and profiling (perf stat, perf record, perf bench)",
                 "linux-perf"),
    "hackbench": Tool("scheduler and IPC workload (hackbench)", "rt-tests"),
    "cyclictest": Tool("wake-up latency workload (cyclictest)", "rt-tests"),
    "dbench": Tool("filesystem workload (dbench)", "dbench"),
    "tbench": Tool("network/scheduler workload client (tbench)", "dbench"),
    "tbench_srv": Tool("tbench server", "dbench"),
    "iperf3": Tool("network throughput workload (iperf3)", "iperf3"),
    "hyperfine": Tool("cross-checking command timings (hyperfine)", "hyperfine"),
    "stress-ng": Tool("stressors and background load (stress-ng)", "stress-ng"),
    "cc": Tool("compiling the built-in C workloads", "gcc"),
    "git": Tool("commit identity of runs, history and bisect", "git"),
})

DEFAULT_EVENTS: tuple[str, ...] = (
    "cycles", "instructions", "cache-misses", "branch-misses",
    "task-clock", "cpu-clock", "context-switches", "cpu-migrations", "page-faults",
)

PERF_MISSING = "perf not found (install linux-perf)"
NOT_SUPPORTED = "no such counter on this CPU, or the hypervisor hides it"
NOT_COUNTED = "not counted: perf could not schedule the event on a counter"


@dataclass(frozen=True)
class EventProbe:
    """Whether ``perf stat`` could count an event, and if not, why."""

    supported: bool
    reason: str | None = None


def find_tools(path: str | None = None) -> dict[str, str | None]:
    """Each tool of TOOLS mapped to its full path, or None; ``path`` overrides $PATH."""
    return {name: shutil.which(name, path=path) for name in TOOLS}


def parse_perf_stat_csv(text: str) -> dict[str, tuple[float | None, str | None]]:
    """``perf stat -x,`` output as {event: (value, None)} or {event: (None, reason)}.

    Fields are value, unit, event, run time, percentage, metric, metric unit. Event
    names may hold commas inside PMU terms ("cpu/event=0x3c,umask=0x0/"), so the name
    runs until its slashes pair up. Lines that are not counter rows (comments, error
    text) are skipped.
    """
    rows: dict[str, tuple[float | None, str | None]] = {}
    for line in text.splitlines():
        fields = line.split(",")
        if line.startswith("#") or len(fields) < 3:
            continue
        end = 3
        while ",".join(fields[2:end]).count("/") % 2 and end < len(fields):
            end += 1
        event = ",".join(fields[2:end])
        value = fields[0].strip()
        if value == "<not supported>":
            rows[event] = (None, NOT_SUPPORTED)
        elif value == "<not counted>":
            rows[event] = (None, NOT_COUNTED)
        elif value.startswith("<") and value.endswith(">"):
            rows[event] = (None, value[1:-1])
        else:
            try:
                rows[event] = (float(value), None)
            except ValueError:
                continue
    return rows


def perf_error_reason(stderr: str) -> str | None:
    """The one or two lines of a failed ``perf stat`` that say what went wrong.

    perf follows its message with usage text; that part is dropped, and the
    caret line ("\\___ parser error") is kept without its drawing.
    """
    parts: list[str] = []
    for line in stderr.splitlines():
        line = line.strip().removeprefix("\\___").strip()
        if line.startswith(("Run 'perf list'", "Usage:")):
            break
        if line:
            parts.append(line.rstrip(":"))
    return ": ".join(parts[:2]) or None


def perf_events(events: list[str] | None = None, timeout: float = 10) -> dict[str, EventProbe]:
    """Probe each event with its own ``perf stat -- true``.

    One call per event: a bad event name fails the whole perf call, and several
    events in one call may be multiplexed and show as "not counted" though they work.
    """
    wanted = list(DEFAULT_EVENTS) if events is None else events
    perf = shutil.which("perf")
    if perf is None:
        return {event: EventProbe(False, PERF_MISSING) for event in wanted}
    return {event: _probe_event(perf, event, timeout) for event in wanted}


def _probe_event(perf: str, event: str, timeout: float) -> EventProbe:
    """Count ``event`` over ``true``; supported if any row perf prints has a value.

    Any row, because perf renames or splits events (``cycles:u`` when unprivileged,
    ``cpu_core/cycles/`` and ``cpu_atom/cycles/`` on hybrid CPUs).
    """
    try:
        proc = subprocess.run([perf, "stat", "-x,", "-e", event, "--", "true"],
                              capture_output=True, text=True, errors="replace",
                              timeout=timeout, env={**os.environ, "LC_ALL": "C"})
    except subprocess.TimeoutExpired:
        return EventProbe(False, f"perf stat timed out after {timeout:g} s")
    except OSError as exc:
        return EventProbe(False, f"cannot run {perf}: {exc.strerror}")
    rows = parse_perf_stat_csv(proc.stderr)
    if proc.returncode != 0 or not rows:
        return EventProbe(False, perf_error_reason(proc.stderr)
                          or f"perf stat exited with status {proc.returncode}")
    if any(value is not None for value, _ in rows.values()):
        return EventProbe(True)
    return EventProbe(False, next(iter(rows.values()))[1])
