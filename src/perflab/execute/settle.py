"""The pause before a run's first sample, after perflab's own burst of CPU.

A vCPU can run slower for a while after a burst of CPU (a host's quota or clock), and
perflab's start-up (its imports) is such a burst where the command's own start is not: a
run's first samples would read slow (bench/README.md, "the start-up transient"). So before
its first sample a run idles as long as this process used the CPU since it started or since
its last run ended, at most ``CAP_S``; ``--settle S`` fixes the pause instead. The pause
taken is kept in the run's environment (``settle_s``).
"""

from __future__ import annotations

import time

CAP_S = 1.0   # a start-up that burns more is not perflab's imports: do not wait on it

_idle_since_cpu = 0.0   # this process's CPU seconds when its last run ended


def pause_for(seconds: float | None) -> float:
    """The pause: ``seconds``, or (None) this process's CPU seconds since its last run, capped."""
    return min(max(time.process_time() - _idle_since_cpu, 0.0), CAP_S) if seconds is None else seconds


def settle(seconds: float | None) -> float:
    """Sleep the pause (`pause_for`); return it."""
    pause = pause_for(seconds)
    if pause > 0:
        time.sleep(pause)
    return pause


def run_ended() -> None:
    """Mark the end of a run: the next run's burst is counted from here."""
    global _idle_since_cpu
    _idle_since_cpu = time.process_time()
