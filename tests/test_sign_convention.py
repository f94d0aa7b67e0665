"""One sign convention across commands, on the same runs: every change is in % with
+ = better, and the word beside it (improvement, regression) agrees with the sign.

Eight imported runs of two commands: 'speedup' gets 20% faster from the fifth run on,
'slowdown' 25% slower. compare, verdict, history, changes and report change must all give
the faster one a positive change called an improvement, and the slower one a negative
change called a regression (ab's own text is checked in tests/test_ab.py, bisect's in
tests/test_bisect_merges.py: both print their convention, "+ = better").
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import run_cli

LEVELS = {"speedup": (0.010, 0.8), "slowdown": (0.010, 1.25)}   # base time, factor from run 5 on
WORD = {"speedup": "improvement", "slowdown": "regression"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> str:
    base = tmp_path_factory.mktemp("signs")
    db = str(base / "perflab.db")
    for run in range(8):
        results = []
        for name, (level, factor) in LEVELS.items():
            centre = level * (factor if run >= 4 else 1.0)
            times = [centre * (1 + 0.004 * ((k * 7 + run * 3) % 5 - 2)) for k in range(12)]
            results.append({"command": name, "mean": sum(times) / len(times), "stddev": 0.0, "median": 0.0,
                            "user": 0.0, "system": 0.0, "min": min(times), "max": max(times), "times": times,
                            "exit_codes": [0] * len(times)})
        path = base / f"run{run}.json"
        path.write_text(json.dumps({"results": results}))
        run_cli("import", "hyperfine", str(path), "--label", f"r{run}", db=db, check=True)
    return db


def _hyperfine(path, name: str, times: list[float]) -> None:
    path.write_text(json.dumps({"results": [{
        "command": name, "mean": sum(times) / len(times), "stddev": 0.0, "median": 0.0, "user": 0.0,
        "system": 0.0, "min": min(times), "max": max(times), "times": times, "exit_codes": [0] * len(times)}]}))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(factor=st.sampled_from([0.6, 0.8, 0.9, 1.12, 1.3, 1.7]), seed=st.integers(0, 2**31))
def test_the_sign_is_one_convention_on_any_step(tmp_path_factory, factor, seed):
    """The property, in process: on the same eight runs (a step of ``factor`` in time from
    the fifth on), compare, verdict, history, changes, report change, ab's and bisect's
    figures all have the sign of 1 - factor (+ = better = faster) and its word."""
    from perflab.analysis.bisect_measure import better_pct as bisect_pct
    from perflab.analysis.compare import compare_runs
    from perflab.analysis.history import build_history, change_report, list_changes
    from perflab.analysis.importing import import_file
    from perflab.analysis.verdict import judge
    from perflab.execute.ab_rule import decision_record
    from perflab.render.change_report import render_change_report
    from perflab.render.compare import render_comparison
    from perflab.render.history import changes_json, history_json
    from perflab.stats.sequential import SequentialTest
    from perflab.stats.sequential_ab import decide
    from perflab.store import Store

    rng = np.random.default_rng(seed)
    base = tmp_path_factory.mktemp("prop")
    want, word = ("+", "improvement") if factor < 1 else ("-", "regression")
    samples = [list(0.010 * (factor if run >= 4 else 1.0) * (1 + 0.005 * rng.standard_normal(10)))
               for run in range(8)]
    with Store(str(base / "perflab.db"), create=True) as store:
        for run, times in enumerate(samples):
            _hyperfine(base / f"r{run}.json", "step", times)
            import_file(store, "hyperfine", str(base / f"r{run}.json"), f"r{run}")
        runs = [store.runs.resolve(f"r{run}") for run in range(8)]
        compared = json.loads(render_comparison(compare_runs(store, [runs[0], runs[7]]), "json"))
        (row,) = [r for r in compared["rows"] if r["metric"] == "time"]
        figures = {"compare": row["candidates"][0]["comparison"]["change_pct"]}
        verdict = judge(store, runs[0], runs[7], metrics={"time"})
        figures["verdict"] = verdict.decisive[1].pct
        history = build_history(store)
        (series,) = [s for s in json.loads(history_json(history))["series"] if s["metric"] == "time"]
        (change,) = series["changes"]
        figures["history"] = change["change_pct"]
        listed = json.loads(changes_json(list_changes(history)))["changes"]
        figures["changes"] = next(c["change_pct"] for c in listed if c["id"] == change["id"])
        report = render_change_report(change_report(store, change["id"]))
        headline = re.search(r"perflab noticed an? ([+-][0-9.]+)% (\w+)", report)
        assert headline and headline.group(2) == word, report
        figures["report"] = float(headline.group(1))
    figures["ab"] = decision_record(decide(samples[0], samples[7], threshold_pct=1.0, final=True)).estimate_pct
    ends = SequentialTest().check_ends(samples[0], samples[7])
    figures["bisect"] = bisect_pct(ends.ratio, False)
    assert {name: _sign(value) for name, value in figures.items()} == dict.fromkeys(figures, want), figures
    assert change["kind"] == word


def _sign(value: float) -> str:
    return "+" if value > 0 else "-"


def test_every_command_gives_the_same_sign_and_word(runs):
    db = runs
    expected = {"speedup": "+", "slowdown": "-"}
    compare = json.loads(run_cli("compare", "r0", "r7", "--format", "json", db=db, check=True).stdout)
    for name in LEVELS:
        (row,) = [r for r in compare["rows"] if r["benchmark"] == name and r["metric"] == "time"]
        change = row["candidates"][0]["comparison"]
        # two separate runs: compare may call it undecided (unknown run-to-run variance), never the other way
        assert _sign(change["change_pct"]) == expected[name] and change["verdict"] in (WORD[name], "undecided")
    history = json.loads(run_cli("history", "--format", "json", "--metric", "time", db=db, check=True).stdout)
    changes = json.loads(run_cli("changes", "--format", "json", "--metric", "time", db=db, check=True).stdout)
    for name in LEVELS:
        (series,) = [s for s in history["series"] if s["benchmark"] == name]
        found = max(series["changes"], key=lambda c: abs(c["change_pct"]))
        assert _sign(found["change_pct"]) == expected[name] and found["kind"] == WORD[name], found
        listed = next(c for c in changes["changes"] if c["id"] == found["id"])
        assert listed["change_pct"] == found["change_pct"] and listed["kind"] == WORD[name]
        report = run_cli("report", "change", found["id"], db=db, check=True).stdout
        headline = re.search(r"perflab noticed an? ([+-][0-9.]+)% (\w+)", report)
        assert headline and headline.group(1)[0] == expected[name] and headline.group(2) == WORD[name], report
        assert f"{'an' if name == 'speedup' else 'a'} {WORD[name]})" in report   # the article agrees
    # verdict's line names the least favourable row: the slowdown, negative
    verdict = run_cli("verdict", "r0", "r7", "--metric", "time", db=db).stdout
    assert re.search(r"slowdown\S* time -[0-9.]+% \(\+ = better", verdict), verdict



def test_a_rerun_note_is_in_the_alerts_convention():
    """The rerun of a time 30% slower measured a rise of 28.8%: its note says -28.8%, as
    the alert says -29.9% (issue 38: it said "+28.8% ... alerted +29.9%" of a -29.9% alert)."""
    from perflab.stats.rerun import judge
    good = [0.100, 0.101, 0.099, 0.100]
    verdict = judge(good, [1.288 * g for g in good], 0.100, 0.1299)
    text = verdict.text(lower_is_better=True)
    found = re.search(r"measured ([+-][0-9.]+)% \(95% interval ([+-][0-9.]+)% \.\. ([+-][0-9.]+)%\)", text)
    assert verdict.outcome == "reproduced" and found, text
    assert float(found.group(1)) == -28.8 and float(found.group(2)) <= -28.8 <= float(found.group(3))
    assert "+28.8%" in verdict.text()   # a rate's rise is better: raw and oriented agree
