"""The order of samples: warm-ups, then rounds in which every point runs once.

Interleaving points round by round means a slow drift of the machine (thermal, a
background job) spreads over all points instead of biasing the one that ran last.
``--shuffle`` randomises the order inside each round (a randomised block design), with
the seed recorded so a resumed or repeated run replays the same order. Several commands
of one run share one schedule: each (command, point) is one of its "points" here (see
runner.Runner._work).
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Task:
    point: int        # index into the run's list of points
    repetition: int   # 0-based; warm-ups count separately
    warmup: bool = False


def schedule(points: int, repetitions: int, warmup: int = 0,
             seed: int | None = None) -> list[Task]:
    """Every task of a run in execution order."""
    rng = random.Random(seed) if seed is not None else None
    tasks: list[Task] = []
    for rounds, is_warmup in ((warmup, True), (repetitions, False)):
        for repetition in range(rounds):
            order = list(range(points))
            if rng is not None:
                rng.shuffle(order)
            tasks.extend(Task(point, repetition, is_warmup) for point in order)
    return tasks


def remaining(tasks: list[Task], done: set[tuple[int, int]]) -> list[Task]:
    """Tasks still to run when resuming; warm-ups only for points that still have work."""
    measured = [t for t in tasks if not t.warmup and (t.point, t.repetition) not in done]
    busy = {t.point for t in measured}
    return [t for t in tasks if t.warmup and t.point in busy] + measured
