"""Linux pressure stall information (PSI) around a sample: did another load compete?

/proc/pressure/{cpu,memory,io} count, in ``total=`` µs, the time some runnable task
waited for that resource. The difference across one sample is the stall during it:
unlike the load average (a one-minute lag) it shows a competing load while it happens.
The files stay open and are re-read with one pread each (a few µs per sample).
Beside the stalls a sample records the window they cover (``psi.window_us``: the
monotonic time between the two reads), so a stall's share of it is at most 100%
whatever the benchmark's own metrics are.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from perflab.model.records import PRESSURE_METRIC_PREFIX, PRESSURE_WINDOW_METRIC, Direction, MetricInfo

RESOURCES = ("cpu", "memory", "io")
NOISE_FLOOR = 0.05   # as the monitors' counters (lkp-tests: 5% for what is not the performance metric)
STALLS = [MetricInfo(f"{PRESSURE_METRIC_PREFIX}{name}_some_us", "us", Direction.LOWER, NOISE_FLOOR,
                     description=f"µs some task stalled on {name} during the sample (/proc/pressure/{name})")
          for name in RESOURCES]
WINDOW = MetricInfo(PRESSURE_WINDOW_METRIC, "us", Direction.LOWER, NOISE_FLOOR,
                    description="µs between the two /proc/pressure reads around the sample: the window its "
                                "psi stalls cover (the spawn included)")
METRICS = [*STALLS, WINDOW]
_PREFIX = b"some "


@dataclass(frozen=True)
class Reading:
    """The ``some total=`` counters, and when their reading began and ended (monotonic, µs)."""

    totals: list[int]
    began_us: int
    ended_us: int


class Reader:
    """The ``some total=`` counters; ``missing`` says why there are none."""

    def __init__(self, root: str = "/proc/pressure") -> None:
        self.fds: list[int] = []
        self.missing = ""
        try:
            for name in RESOURCES:
                self.fds.append(os.open(os.path.join(root, name), os.O_RDONLY | os.O_CLOEXEC))
        except OSError as error:
            self.close()
            self.missing = f"{root}: {error.strerror} (a kernel without CONFIG_PSI, or psi=0)"

    def read(self) -> Reading | None:
        if not self.fds:
            return None
        began = time.monotonic_ns()
        try:
            totals = [_some_total(os.pread(fd, 256, 0)) for fd in self.fds]
        except (OSError, ValueError) as error:
            self.close()
            self.missing = f"reading /proc/pressure failed: {error}"
            return None
        return Reading(totals, began // 1000, time.monotonic_ns() // 1000)

    def since(self, before: Reading | None) -> dict[str, float] | None:
        """The stall of each resource since ``before`` (a ``read()``), in µs, by metric
        name, and the window they cover (``psi.window_us``: from the start of the first
        reading to the end of the second, so no stall counted between them exceeds it)."""
        after = self.read()
        if before is None or after is None:
            return None
        stalls = {info.name: float(b - a) for info, a, b in zip(STALLS, before.totals, after.totals)}
        return stalls | {WINDOW.name: float(after.ended_us - before.began_us)}

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def _some_total(text: bytes) -> int:
    line = text.split(b"\n", 1)[0]
    if not line.startswith(_PREFIX):
        raise ValueError(f"unexpected line {line[:40]!r}")
    return int(line.rsplit(b"total=", 1)[1])
