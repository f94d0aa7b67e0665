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

import pytest

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

