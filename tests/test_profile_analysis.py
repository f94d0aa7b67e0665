"""Profile comparison: real perf profiles of a program whose second function's share changes,
plus hand-filled stores for the lkp seed's numbers and an A/A check of the FDR control."""

from __future__ import annotations

import numpy as np
import pytest

from perflab.analysis.compare import Filters, compare_runs
from perflab.analysis.profile import TEST_MIN_PCT, compare_counters, compare_profiles, folded_stacks, run_profile
from perflab.model.errors import UsageError
from perflab.model.records import Point
from perflab.model.run_request import RunRequest
from perflab.render.lkp_lines import profile_line
from perflab.store import Store

from profile_store import REPETITIONS, profiled_store


@pytest.fixture(scope="module")
def real_db(tmp_path_factory) -> str:
    return profiled_store(tmp_path_factory.mktemp("profiled"))


def _runs(store: Store, *refs: str):
    return [store.runs.resolve(r) for r in refs]


def test_the_second_function_tops_the_delta_table_with_the_right_sign(real_db):
    with Store(real_db) as store:
        profile = compare_profiles(store, _runs(store, "base", "patched"))
    top = profile.rows[:4]
    assert {(i.kind, i.symbol) for i in top} == {(k, s) for k in ("self", "children")
                                                 for s in ("hot_loop", "warm_loop")}
    for item in top:
        [delta] = item.deltas
        assert delta.significant and delta.q_value < 0.05
        if item.symbol == "warm_loop":  # 1 unit of 4 -> 3 of 6: ~25% -> ~50%
            assert delta.verdict == "up" and 15 < delta.change_points < 35
            assert 15 < item.sides[0].mean < 35 and len(item.sides[0].values) == REPETITIONS
        else:
            assert delta.verdict == "down" and -35 < delta.change_points < -15
        assert delta.ci.low <= delta.change_points <= delta.ci.high
    assert top[0].name.startswith("perf-profile.") and ".cpu-clock." in top[0].name
    sizes = [i.size for i in profile.rows]
    assert sizes == sorted(sizes, reverse=True)
    # every row has both sides (absent = 0); only rows of 0.5% or more are tested
    big = [i for i in profile.rows if np.concatenate([i.sides[0].values, i.sides[1].values]).mean() >= TEST_MIN_PCT]
    assert profile.tested == len(big) < len(profile.rows)
    assert all(np.isnan(i.deltas[0].q_value) and not i.deltas[0].significant
               for i in profile.rows if i not in big)
    # kernel noise mostly stays unflagged; a load change between the two runs is a real
    # shift of kernel shares, so allow a quarter of the other tested rows, not a count.
    # Self shares only: the loops' callers (main, __libc_start_call_main, [unknown]
    # frames) hold both loops in their children shares, which move with the loops' own
    # (a full-suite rehearsal flagged 4 of 4 other tested rows, callers' children shares among them).
    others = [i for i in big if i not in top and i.kind == "self"]
    flagged = [i for i in others if i.deltas[0].significant]
    assert len(flagged) <= max(2, len(others) // 4), [i.name for i in flagged]


def test_rule_methods_flag_the_change_without_fdr(real_db):
    with Store(real_db) as store:
        for method in ("lkp", "mmtests"):
            profile = compare_profiles(store, _runs(store, "base", "patched"), method=method)
            warm = next(i for i in profile.rows if i.kind == "self" and i.symbol == "warm_loop")
            assert warm.deltas[0].rule is not None and warm.deltas[0].rule.changed
            assert warm.deltas[0].verdict == "up" and profile.tested == 0
            assert "no FDR" in profile.rule


def test_a_run_profile_lists_self_and_children_shares(real_db):
    with Store(real_db) as store:
        [point] = run_profile(store, store.runs.resolve("patched"), top=5)
        [by_children] = run_profile(store, store.runs.resolve("patched"), order="children", top=None)
    assert point.repetitions == REPETITIONS and point.event == "cpu-clock"
    assert {s.name for s in point.symbols[:2]} == {"hot_loop", "warm_loop"}
    assert len(point.symbols) <= 5
    for share in by_children.symbols:
        assert share.children_mean >= share.self_mean - 1e-9
    assert [s.children_mean for s in by_children.symbols] == sorted(
        (s.children_mean for s in by_children.symbols), reverse=True)
    assert point.calltraces and point.calltraces[0].self_mean > 90  # the root-most frame


def test_counters_are_compared_apart_from_the_metric_table(real_db):
    with Store(real_db) as store:
        runs = _runs(store, "base", "patched")
        main = compare_runs(store, runs)
        assert {r.metric for r in main.rows} == {"time"}
        named = compare_runs(store, runs, filters=Filters.parse([], ["rusage.utime"]))
        assert {r.metric for r in named.rows} == {"rusage.utime"}
        counters = compare_counters(store, runs)
        assert [r.metric for r in counters.rows] == ["rusage.utime"]
        assert counters.rows[0].base.n == counters.rows[0].cells[0].side.n == REPETITIONS
        assert counters.rows[0].cells[0].change is not None
        assert compare_counters(store, runs, filters=Filters.parse([], ["rusage.utime"])) is None


def test_a_run_without_profile_is_one_clear_error(real_db):
    with Store(real_db) as store:
        bare = store.runs.resolve("bare")
        for call in (lambda: compare_profiles(store, [store.runs.resolve("base"), bare]),
                     lambda: run_profile(store, bare), lambda: folded_stacks(store, bare)):
            message = f"run {bare.id} has no profile; record one with --monitor perf-profile"
            with pytest.raises(UsageError, match=message):
                call()


def test_folded_stacks_sum_the_repetitions(real_db):
    with Store(real_db) as store:
        run = store.runs.resolve("base")
        stacks = folded_stacks(store, run)
        rows = store.profiles.traces(run.id, "stack")
    assert sum(stacks.values()) == pytest.approx(sum(t.value for t in rows))
    leaves = {}
    for stack, weight in stacks.items():
        leaves[stack[-1]] = leaves.get(stack[-1], 0) + weight
    assert leaves["hot_loop"] > 2 * leaves["warm_loop"]


# -- hand-filled stores -----------------------------------------------------------------------
def _fill(store: Store, label: str, reps: list[dict[str, float]]) -> int:
    run_id = store.runs.create(label=label, host="h", request=RunRequest(), environment={})
    point_id = store.samples.point_id(Point("will-it-scale", {"mode": "thread", "test": "poll2"}))
    for rep, shares in enumerate(reps):
        store.profiles.add(run_id, point_id, rep, "cycles:pp",
                           [(sym, pct, pct) for sym, pct in shares.items()], [])
    return run_id


def test_seed_003_a_symbol_new_in_the_candidate_starts_from_zero(sqlite_db):
    with Store(sqlite_db, create=True) as store:
        _fill(store, "93faf426e3", [{"__fget_light": v, "do_poll": 5.0 + d}
                                    for v, d in ((29.303, 0.1), (30.903, 0.0), (32.503, -0.1))])
        _fill(store, "0ede61d858", [{"__fget_light": v, "__get_file_rcu": w, "do_poll": 5.0 + d}
                                    for v, w, d in ((10.077, 26.3, 0.0), (10.347, 26.5, 0.1), (10.617, 26.64, -0.1))])
        profile = compare_profiles(store, _runs(store, "93faf426e3", "0ede61d858"), kinds=("self",))
    first, second, third = profile.rows
    assert first.name == "perf-profile.self.cycles-pp.__get_file_rcu"
    assert list(first.sides[0].values) == [0.0, 0.0, 0.0] and first.deltas[0].verdict == "up"
    assert second.symbol == "__fget_light" and second.deltas[0].verdict == "down"
    assert third.symbol == "do_poll" and not third.deltas[0].significant
    line = profile_line(second)
    assert line.split() == ["30.90", "±", "4%", "-20.6", "10.35", "±", "2%",
                            "perf-profile.self.cycles-pp.__fget_light"]
    assert profile_line(first).split()[:3] == ["0.00", "+26.5", "26.48"]


def test_identical_profiles_are_flagged_at_or_below_the_fdr(sqlite_db):
    """A/A: 40 reports of 30 symbols, 5 repetitions a side from one distribution."""
    rng = np.random.default_rng(7)
    centres = rng.uniform(0.5, 20, 30)
    reports_with_a_flag = 0
    with Store(sqlite_db, create=True) as store:
        for trial in range(40):
            runs = []
            for side in ("a", "b"):
                reps = [{f"sym{i}": float(max(0.0, rng.normal(c, 0.1 * c))) for i, c in enumerate(centres)}
                        for _ in range(5)]
                runs.append(store.runs.resolve(str(_fill(store, f"{side}{trial}", reps))))
            profile = compare_profiles(store, runs, kinds=("self",), q=0.05)
            reports_with_a_flag += any(i.deltas[0].significant for i in profile.rows)
    # BH at 5% under the global null bounds the chance of any flag per report by 5%
    assert reports_with_a_flag <= 6
