"""The load outside perflab's own cgroups while a sample ran: did another load compete?

Every sample runs inside perflab's cgroup directory (execute/cgroups.py): the sample,
its sessions (a server), the monitors and perflab itself. What ran outside it during
the sample is another load:

- CPU: the machine's busy time (/proc/stat ``cpu`` user + nice + system over every CPU)
  less the directory's ``cpu.stat`` usage_usec. /proc/stat counts in ticks (USER_HZ),
  cpu.stat in µs, so one sample's figure may be off by a tick per CPU either way (it
  can be negative); summed over a run the ticks are unbiased samples of the time.
  Interrupt and softirq time is left out on both sides: it is the benchmark's own
  loopback traffic as often as anyone else's.
- Memory and I/O: the µs some task outside stalled on them while none inside did:
  /proc/pressure's ``some total`` less the directory's {memory,io}.pressure one (a lower
  bound: time both sides stalled counts as perflab's).

Beside those a sample records the window they cover (monotonic µs between the reads).
While perflab stays in its directory from one sample to the next, a sample's window
starts at the reading that ended the previous one: the windows then tile the sampling
time and each sample costs one reading, not two (perflab's work between samples slowed
the next sample: bench/README.md). analysis/contention.py turns a run's sums into shares
and the warning.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass
from pathlib import Path

from perflab.model.records import OUTSIDE_METRIC_PREFIX, OUTSIDE_WINDOW_METRIC, Direction, MetricInfo

NOISE_FLOOR = 0.05   # as the monitors' counters (lkp-tests: 5% for what is not the performance metric)
CPU = MetricInfo(f"{OUTSIDE_METRIC_PREFIX}cpu_us", "us", Direction.LOWER, NOISE_FLOOR,
                 description="CPU µs used outside perflab's cgroups during the sample "
                             "(/proc/stat busy time less their cpu.stat usage)")
STALLS = [MetricInfo(f"{OUTSIDE_METRIC_PREFIX}{name}_stall_us", "us", Direction.LOWER, NOISE_FLOOR,
                     description=f"µs some task outside perflab's cgroups stalled on {name} and none "
                                 f"inside did (/proc/pressure/{name} less {name}.pressure)")
          for name in ("memory", "io")]
WINDOW = MetricInfo(OUTSIDE_WINDOW_METRIC, "us", Direction.LOWER, NOISE_FLOOR,
                    description="µs between the two reads around the sample: the window the "
                                "outside.* figures cover (the spawn included)")
METRICS = [CPU, *STALLS, WINDOW]
_SOME = b"some "


@dataclass(frozen=True)
class Reading:
    """Machine and own counters (µs), and when their reading began and ended (monotonic µs)."""

    machine: tuple[float, float, float]   # busy CPU, memory some, io some
    own: tuple[float, float, float]
    began_us: int
    ended_us: int


class Reader:
    """Reads the counters around each sample; ``missing`` says why there are none."""

    def __init__(self, own: Path | None, proc: str = "/proc") -> None:
        self.fds: list[int] = []
        self.missing = ""
        self._latest: Reading | None = None   # the reading the last window ended with
        self._tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
        if own is None:
            self.missing = "samples run without a cgroup of their own"
            return
        paths: list[str | Path] = [os.path.join(proc, "stat"), os.path.join(proc, "pressure", "memory"),
                 os.path.join(proc, "pressure", "io"), own / "cpu.stat", own / "memory.pressure",
                 own / "io.pressure"]
        try:
            for path in paths:
                self.fds.append(os.open(path, os.O_RDONLY | os.O_CLOEXEC))
        except OSError as error:
            self.close()
            self.missing = f"{error.filename}: {error.strerror} (a kernel without CONFIG_PSI, or psi=0?)"

    def read(self) -> Reading | None:
        if not self.fds:
            return None
        began = time.monotonic_ns()
        try:
            texts = [os.pread(fd, 4096, 0) for fd in self.fds]
            machine = (_busy_ticks(texts[0]) * self._tick_us, _some_total(texts[1]), _some_total(texts[2]))
            own = (_usage_usec(texts[3]), _some_total(texts[4]), _some_total(texts[5]))
        except (OSError, ValueError, IndexError) as error:
            self.close()
            self.missing = f"reading the load outside perflab's cgroups failed: {error}"
            return None
        return Reading(machine, own, began // 1000, time.monotonic_ns() // 1000)

    def begin(self, chained: bool) -> Reading | None:
        """The reading a sample's window starts from: with ``chained`` (nothing outside
        perflab's directory ran as perflab since), the one the last window ended with, the
        new window starting where that one ended (the windows tile, none counted twice)."""
        latest, self._latest = self._latest, None
        if chained and latest is not None:
            return dataclasses.replace(latest, began_us=latest.ended_us)
        return self.read()

    def since(self, before: Reading | None) -> dict[str, float] | None:
        """The outside CPU µs and memory/I/O stall µs since ``before`` (a ``read()``), by
        metric name, and the window they cover (from the start of the first reading to
        the end of the second)."""
        after = self._latest = self.read()
        if before is None or after is None:
            return None
        outside = [(m1 - m0) - (o1 - o0) for m0, m1, o0, o1
                   in zip(before.machine, after.machine, before.own, after.own)]
        return ({info.name: value for info, value in zip(METRICS, outside)}
                | {WINDOW.name: float(after.ended_us - before.began_us)})

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def _busy_ticks(text: bytes) -> float:
    """user + nice + system of /proc/stat's first (all CPUs) line, in ticks."""
    fields = text.split(b"\n", 1)[0].split()
    if fields[0] != b"cpu":
        raise ValueError(f"unexpected /proc/stat line {fields[:3]!r}")
    return float(int(fields[1]) + int(fields[2]) + int(fields[3]))


def _usage_usec(text: bytes) -> float:
    for line in text.split(b"\n"):
        if line.startswith(b"usage_usec "):
            return float(line.split()[1])
    raise ValueError("cpu.stat has no usage_usec")


def _some_total(text: bytes) -> float:
    line = text.split(b"\n", 1)[0]
    if not line.startswith(_SOME):
        raise ValueError(f"unexpected pressure line {line[:40]!r}")
    return float(line.rsplit(b"total=", 1)[1])
