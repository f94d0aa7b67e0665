"""The CLI: compare --profile, perflab profile, perflab flamegraph, and their errors."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from conftest import run_cli
from profile_store import REPETITIONS, profiled_store


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    return profiled_store(tmp_path_factory.mktemp("cliprofile"))


def test_compare_profile_lkp_lists_the_changed_functions_first(db):
    out = run_cli("compare", "base", "patched", "--profile", "--format", "lkp", db=db, check=True).stdout
    profile_lines = [line for line in out.splitlines() if "perf-profile." in line]
    assert {line.split()[-1].rsplit(".", 1)[1] for line in profile_lines[:4]} == {"hot_loop", "warm_loop"}
    for line in profile_lines[:4]:
        change = next(tok for tok in line.split() if tok[0] in "+-" and tok[1:2].isdigit())
        assert change.startswith("+" if line.endswith("warm_loop") else "-"), line
    assert "counters: changed = Welch t-test on log values" in out  # rusage.utime, listed if it moved
    assert "Benjamini-Hochberg FDR 5% over" in out and "profile comparisons" in out


def test_compare_profile_mmtests_puts_an_lkp_table_under_the_metrics(db):
    out = run_cli("compare", "base", "patched", "--profile", db=db, check=True).stdout
    metrics, _, rest = out.partition("profile and counters (lkp style):")
    assert "Amean" in metrics and "rusage.utime" not in metrics
    assert "%change" in rest and "perf-profile.self.cpu-clock.warm_loop" in rest
    everything = run_cli("compare", "base", "patched", "--profile", "--rows", "amean,all", db=db,
                         check=True).stdout
    assert everything.count("perf-profile.") > out.count("perf-profile.")


def test_compare_profile_json_carries_verdicts_and_counters(db):
    data = json.loads(run_cli("compare", "base", "patched", "--profile", "--format", "json",
                              db=db, check=True).stdout)
    top = data["profile"][0]
    assert top["symbol"] in ("hot_loop", "warm_loop") and top["kind"] in ("self", "children")
    comparison = top["sides"][1]["comparison"]
    assert comparison["significant"] and comparison["verdict"] in ("up", "down")
    assert (comparison["change_points"] > 0) == (top["symbol"] == "warm_loop")
    assert data["profile_method"]["unit"] == "percentage points"
    assert [row["metric"] for row in data["counters"]] == ["rusage.utime"]
    assert [row["metric"] for row in data["rows"]] == ["time"]


def test_monitor_metrics_join_the_main_table_only_when_named(db):
    plain = run_cli("compare", "base", "patched", "--format", "json", db=db, check=True).stdout
    assert [r["metric"] for r in json.loads(plain)["rows"]] == ["time"]
    named = run_cli("compare", "base", "patched", "--format", "json", "--metric", "rusage.utime",
                    db=db, check=True).stdout
    assert [r["metric"] for r in json.loads(named)["rows"]] == ["rusage.utime"]


def test_profile_command_text_json_folded(db):
    text = run_cli("profile", "patched", "--top", "5", db=db, check=True).stdout
    assert "hot_loop" in text and "warm_loop" in text and "call traces (callee first)" in text
    children = run_cli("profile", "patched", "--children", db=db, check=True).stdout
    header = next(line for line in children.splitlines() if "symbol" in line)
    assert header.split() == ["children", "self", "symbol"]
    data = json.loads(run_cli("profile", "base", "--format", "json", db=db, check=True).stdout)
    [point] = data["points"]
    assert point["symbols"][0]["symbol"] == "hot_loop" and point["repetitions"] == REPETITIONS
    chosen = json.loads(run_cli("profile", "base", "--format", "json", "--event", "cpu-clock", db=db,
                                check=True).stdout)
    assert chosen == data  # the only event recorded
    folded = run_cli("profile", "base", "--format", "folded", db=db, check=True).stdout.splitlines()
    assert folded and all(line.rsplit(" ", 1)[1].isdigit() for line in folded)
    assert any(line.split(" ")[0].endswith(";hot_loop") for line in folded)


def test_flamegraph_command_writes_a_differential_svg(db, tmp_path):
    out = tmp_path / "diff.svg"
    result = run_cli("flamegraph", "base", "--vs", "patched", "-o", str(out), db=db, check=True)
    assert str(out) in result.stdout
    svg = out.read_text()
    ET.fromstring(svg)
    assert "warm_loop" in svg and "hot_loop" in svg and "Differential" in svg
    plain = tmp_path / "plain.svg"
    run_cli("flamegraph", "base", "-o", str(plain), db=db, check=True)
    ET.fromstring(plain.read_text())


@pytest.mark.parametrize("args, message", [
    (("profile", "bare"), "has no profile; record one with --monitor perf-profile"),
    (("flamegraph", "bare", "-o", "{tmp}/x.svg"), "has no profile; record one with --monitor perf-profile"),
    (("compare", "base", "bare", "--profile"), "has no profile; record one with --monitor perf-profile"),
    (("flamegraph", "base", "-o", "{tmp}/missing/x.svg"), "does not exist"),
    (("compare", "base", "patched", "--profile", "--format", "csv"), "--profile works with --format"),
    (("profile", "base", "--format", "folded", "--event", "cycles"), "has no profile of event 'cycles'"),
    (("profile", "base", "--event", "cycles"), "has no profile of event 'cycles'; it has cpu-clock"),
    (("export", "base", "-o", "{tmp}/missing/x.json"), "does not exist"),
])
def test_errors_are_one_line_exit_2(db, tmp_path, args, message):
    result = run_cli(*(a.replace("{tmp}", str(tmp_path)) for a in args), db=db)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
