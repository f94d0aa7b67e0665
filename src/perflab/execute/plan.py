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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Task:
    point: int        # index into the run's list of points
    repetition: int   # 0-based; warm-ups count separately
    warmup: bool = False


@dataclass(frozen=True)
class Schedule:
    """Every task of a run in execution order, made as it is walked: memory is O(points),
    whatever the repetitions (``-n 1000000`` holds no list of a million rounds).

    ``done`` holds the (point, repetition) pairs recorded already (--resume): they are
    skipped, and warm-ups run only for points that still have work.
    """

    points: int
    repetitions: int
    warmup: int = 0
    seed: int | None = None
    done: frozenset[tuple[int, int]] = frozenset()

    def busy(self) -> list[int]:
        """The points with a measured repetition still to run."""
        recorded: dict[int, int] = {}
        for point, repetition in self.done:
            if 0 <= point < self.points and 0 <= repetition < self.repetitions:
                recorded[point] = recorded.get(point, 0) + 1
        return [p for p in range(self.points) if recorded.get(p, 0) < self.repetitions]

    def __len__(self) -> int:
        busy = set(self.busy())
        recorded = sum(1 for p, r in self.done if p in busy and 0 <= r < self.repetitions)
        return (self.warmup + self.repetitions) * len(busy) - recorded

    def __bool__(self) -> bool:
        return bool(self.busy())

    def __iter__(self) -> Iterator[Task]:
        # one generator draws every round's order in turn, as the run first drew them, so
        # a resumed run replays the same order for the rounds it still has to run
        rng = random.Random(self.seed) if self.seed is not None else None
        busy = set(self.busy())
        for rounds, is_warmup in ((self.warmup, True), (self.repetitions, False)):
            for repetition in range(rounds):
                order = list(range(self.points))
                if rng is not None:
                    rng.shuffle(order)
                for point in order:
                    if point in busy and (is_warmup or (point, repetition) not in self.done):
                        yield Task(point, repetition, is_warmup)


def schedule(points: int, repetitions: int, warmup: int = 0,
             seed: int | None = None) -> Schedule:
    """Every task of a run in execution order (generated lazily, see Schedule)."""
    return Schedule(points, repetitions, warmup, seed)


def remaining(tasks: Schedule, done: set[tuple[int, int]]) -> Schedule:
    """Tasks still to run when resuming; warm-ups only for points that still have work."""
    return replace(tasks, done=frozenset(tasks.done | done))


def with_next(tasks: Iterable[Task]) -> Iterator[tuple[Task, Task | None]]:
    """Each task with the one after it (None after the last): a round ends where the
    next task's repetition differs."""
    walk = iter(tasks)
    current = next(walk, None)
    while current is not None:
        following = next(walk, None)
        yield current, following
        current = following
