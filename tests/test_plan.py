import tracemalloc
from collections import Counter
from itertools import islice

from perflab.execute.plan import Task, remaining, schedule, with_next


def test_round_robin_interleaves_points():
    tasks = list(schedule(points=3, repetitions=2))
    assert [(t.point, t.repetition) for t in tasks] == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]


def test_warmups_come_first_and_are_marked():
    tasks = list(schedule(points=2, repetitions=1, warmup=2))
    assert [t.warmup for t in tasks] == [True, True, True, True, False, False]


def test_shuffle_keeps_every_round_complete_and_is_reproducible():
    a = list(schedule(points=5, repetitions=20, seed=7))
    assert a == list(schedule(points=5, repetitions=20, seed=7))
    assert a != list(schedule(points=5, repetitions=20, seed=8))
    for r in range(20):
        assert sorted(t.point for t in a if t.repetition == r) == list(range(5))
    orders = Counter(tuple(t.point for t in a if t.repetition == r) for r in range(20))
    assert len(orders) > 1  # actually shuffled


def test_remaining_skips_done_and_warms_up_only_busy_points():
    tasks = schedule(points=2, repetitions=2, warmup=1)
    left = remaining(tasks, done={(0, 0), (0, 1), (1, 0)})
    assert list(left) == [Task(1, 0, True), Task(1, 1)]
    assert len(left) == 2 and left.busy() == [1]


def test_a_resumed_shuffled_run_replays_the_order_of_the_rounds_it_still_has():
    whole = list(schedule(points=4, repetitions=6, warmup=1, seed=3))
    done = {(t.point, t.repetition) for t in whole[4:4 + 9]}   # 9 measured samples were recorded
    left = remaining(schedule(points=4, repetitions=6, warmup=1, seed=3), done)
    measured = [t for t in whole if not t.warmup and (t.point, t.repetition) not in done]
    assert [t for t in left if not t.warmup] == measured
    assert len(left) == len(list(left)) == 4 + 24 - 9


def test_a_huge_schedule_is_walked_without_being_held():
    # -n 1,000,000 over 10,000 points: 10^10 tasks, counted and begun without a list of them
    tracemalloc.start()
    tasks = schedule(points=10_000, repetitions=1_000_000, warmup=1)
    assert len(tasks) == 10_000 * 1_000_001
    first = list(islice(tasks, 25_000))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert first[10_000] == Task(0, 0) and first[-1] == Task(4_999, 1)
    assert peak < 20_000_000   # O(points) + the 25,000 kept here, not O(points x repetitions)


def test_with_next_pairs_each_task_with_the_following_one():
    tasks = list(schedule(points=2, repetitions=2))
    assert list(with_next(schedule(points=2, repetitions=2))) == list(zip(tasks, [*tasks[1:], None]))
