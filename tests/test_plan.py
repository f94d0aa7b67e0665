from collections import Counter

from perflab.execute.plan import Task, remaining, schedule


def test_round_robin_interleaves_points():
    tasks = schedule(points=3, repetitions=2)
    assert [(t.point, t.repetition) for t in tasks] == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]


def test_warmups_come_first_and_are_marked():
    tasks = schedule(points=2, repetitions=1, warmup=2)
    assert [t.warmup for t in tasks] == [True, True, True, True, False, False]


def test_shuffle_keeps_every_round_complete_and_is_reproducible():
    a = schedule(points=5, repetitions=20, seed=7)
    assert a == schedule(points=5, repetitions=20, seed=7)
    assert a != schedule(points=5, repetitions=20, seed=8)
    for r in range(20):
        assert sorted(t.point for t in a if t.repetition == r) == list(range(5))
    orders = Counter(tuple(t.point for t in a if t.repetition == r) for r in range(20))
    assert len(orders) > 1  # actually shuffled


def test_remaining_skips_done_and_warms_up_only_busy_points():
    tasks = schedule(points=2, repetitions=2, warmup=1)
    left = remaining(tasks, done={(0, 0), (0, 1), (1, 0)})
    assert left == [Task(1, 0, True), Task(1, 1)]
