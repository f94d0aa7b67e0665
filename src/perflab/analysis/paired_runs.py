"""Runs measured in interleaved pairs, read again as the pairs they were: a bisect's
samples (`paired_samples`) and an alert rerun's rounds (`rerun_rounds`).

`perflab bisect` (execute.bisect_record) stores one run per measured commit, all under
one label, and takes their samples two at a time: a pair of two commits back to back, the
order inside it drawn at random, and the bisect's own test reads those pairs. No
run-to-run variance stands between the two samples of a pair (the machine's state is
shared), so the runs of two of its commits are not "separate runs": compared as such,
their run-to-run variance would be borrowed from the host's prior and a step the bisect
decided at 100% would read undecided.

The pairs are found again from the session's samples in the order they were measured:
every sample of every run under the label, sorted by time, falls in consecutive pairs
(0, 1), (2, 3) ... each of two different runs. Where that does not hold (a classic
bisect's runs of one commit at a time), the runs are not paired here and compare judges
them as separate runs. Two commits' paired samples are the pairs that hold one of each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from perflab.model.errors import UsageError
from perflab.model.records import RunInfo
from perflab.store import Store
from perflab.store.series import ValueGroup

BISECT_BENCHMARK = "bisect"   # execute.bisect_record.BENCHMARK (execute is not imported by analysis)


@dataclass(frozen=True)
class Paired:
    """The samples of two runs measured in the same pairs, in pair order."""

    label: str
    base: np.ndarray
    new: np.ndarray

    def groups(self, base: ValueGroup, new: ValueGroup) -> tuple[ValueGroup, ValueGroup]:
        """The two runs' value groups kept to the samples of the pairs they share."""
        return (replace(base, values=self.base[np.isfinite(self.base)]),
                replace(new, values=self.new[np.isfinite(self.new)]))


def _bisect_run(run: RunInfo) -> bool:
    request = run.request
    return (request.identity.build is not None and request.target is not None
            and request.target.name == BISECT_BENCHMARK)


def paired_samples(store: Store, base: RunInfo, new: RunInfo) -> Paired | None:
    """The pairs two runs of one bisect share (see the module doc); None for runs not
    measured so, or that share no pair."""
    if base.id == new.id or base.label != new.label or base.host != new.host \
            or not (_bisect_run(base) and _bisect_run(new)):
        return None
    session = [run for run in store.runs.all(counted=False) if run.label == base.label and run.host == base.host]
    times, owners, values = [], [], []
    for run in session:
        rows = store.samples.rows(run.id).own()
        keep = [i for i, b in enumerate(rows.benchmark) if b == BISECT_BENCHMARK]
        times += rows.measured_at[keep].tolist()
        values += rows.value[keep].tolist()
        owners += [run.id] * len(keep)
    order = np.argsort(np.asarray(times), kind="stable")
    pairs = _pairs([owners[i] for i in order], [values[i] for i in order])
    if pairs is None:
        return None
    shared = [(x, y) if first == base.id else (y, x) for first, second, x, y in pairs
              if {first, second} == {base.id, new.id}]
    if not shared:
        return None
    return Paired(base.label, np.asarray([x for x, _ in shared]), np.asarray([y for _, y in shared]))


def _pairs(owners: list[int], values: list[float]) -> list[tuple[int, int, float, float]] | None:
    """(first run, second run, its value, the other's) of each pair in measured order; None
    when the samples are not pairs of two runs. A failed sample that pairs with nothing (a
    build that failed alone) is passed over; an ok one means the runs were not paired."""
    out, i = [], 0
    while i < len(owners):
        if i + 1 < len(owners) and owners[i] != owners[i + 1]:
            out.append((owners[i], owners[i + 1], values[i], values[i + 1]))
            i += 2
        elif np.isnan(values[i]):
            i += 1
        else:
            return None
    return out


# the robot's rerun rounds (analysis.alert_reruns.rounds_of): alert<ID>-<side>-<stamp>-<n>
_ROUND = re.compile(r"^(alert\d+)-(good|bad)-(\d+)-(\d+)$")


@dataclass(frozen=True)
class RerunRounds:
    """An alert rerun's runs, round by round: its runs of the last good and of the first
    bad commit, the two of a round measured back to back (ABBA ABBA ...), in round order."""

    name: str                     # alert<ID>-<stamp>
    good: tuple[RunInfo, ...]
    bad: tuple[RunInfo, ...]


def rerun_rounds(store: Store, base: RunInfo, new: RunInfo) -> RerunRounds | None:
    """The rounds of the alert rerun that ``base`` and ``new`` (one of each side) are runs
    of, read by their labels (``alert<ID>-<side>-<stamp>-<n>``: runs n = 2i - 1 and 2i are
    round i) on their host; None for any other two runs, or fewer than 2 whole rounds."""
    one, other = (_ROUND.match(run.label or "") for run in (base, new))
    if one is None or other is None or base.host != new.host or {one.group(2), other.group(2)} != {"good", "bad"} \
            or (one.group(1), one.group(3)) != (other.group(1), other.group(3)):
        return None
    alert, stamp = one.group(1), one.group(3)
    rounds: list[dict[str, RunInfo]] = []
    for n in range(1, 1000):
        side = _side(store, alert, stamp, n, base.host)
        if side is None:
            break
        if n % 2:
            rounds.append({})
        rounds[-1][side[0]] = side[1]
    whole = [r for r in rounds if len(r) == 2]
    if len(whole) < 2 or len(whole) < len(rounds) - 1:   # a round lost in the middle: not the rerun's design
        return None
    return RerunRounds(f"{alert}-{stamp}", tuple(r["good"] for r in whole), tuple(r["bad"] for r in whole))


def _side(store: Store, alert: str, stamp: str, n: int, host: str) -> tuple[str, RunInfo] | None:
    """(side, run) of a rerun's n-th run; None when it has none."""
    for side in ("good", "bad"):
        try:
            run = store.runs.resolve(f"{alert}-{side}-{stamp}-{n}")
        except UsageError:
            continue
        if run.host == host:
            return side, run
    return None
