"""`perflab compare` end to end: real runs, real statistics, exit codes for gating."""

import json
import re

import pytest

from conftest import run_cli


@pytest.fixture(scope="module")
def ab_db(tmp_path_factory):
    """base: sleep 10 ms; same: sleep 10 ms again; slow: sleep 20 ms (twice as long); and
    three calibrate runs of the 10 ms sleep: its run-to-run spread is known (with nothing
    known, perflab's wide default prior decides only far larger changes)."""
    db = str(tmp_path_factory.mktemp("ab") / "perflab.db")
    for label, seconds in (("base", "0.010"), ("same", "0.010"), ("slow", "0.020")):
        run_cli("run", "-n", "12", "--label", label, "--name", "nap", "-q", "--", "sleep", seconds,
                db=db, check=True)
    run_cli("calibrate", "-k", "3", "-n", "12", "--name", "nap", "--", "sleep", "0.010", db=db, check=True)
    return db


def _cells(db, *labels):
    data = json.loads(run_cli("compare", *labels, "--format", "json", "--metric", "time",
                              db=db, check=True).stdout)
    return data


# the first user of ab_db, so it records them alone: another load competing with one side
# only (the other workers' tests) rightly leaves a row of separate runs undecided
@pytest.mark.exclusive
def test_regression_is_found_and_gates(ab_db):
    result = run_cli("compare", "base", "slow", "--metric", "time", "--fail-on", "regression",
                     "--threshold", "5%", db=ab_db)
    if result.returncode == 125:   # recorded beside another load it measured and names (CI's): not judged
        assert "--fail-on regression: undecided:" in result.stderr and "another load" in result.stderr, \
            result.stderr
        return
    assert result.returncode == 1, result.stderr
    assert "significant regression" in result.stderr and "nap" in result.stderr
    assert "*" in result.stdout  # the mmtests table marks the cell


def _names_a_load(result) -> bool:
    """Whether the output names another load it measured (beside one run, or both unequally)."""
    return "another load" in result.stdout


def _passed(result) -> None:
    """The gate passed, or (timing recorded on a shared machine) could not judge and names
    the competing load it measured: never a pass of what it could not judge."""
    honest = result.returncode == 125 and _names_a_load(result) \
        and "--fail-on regression: undecided:" in result.stderr
    assert result.returncode == 0 or honest, result.stdout + result.stderr


def test_threshold_above_the_change_passes(ab_db):
    _passed(run_cli("compare", "base", "slow", "--metric", "time", "--fail-on", "regression",
                    "--threshold", "150%", db=ab_db))


def test_identical_runs_do_not_gate(ab_db):
    # a gate names the change it cares about: two separate runs of one sleep can differ by a
    # few per cent on a loaded machine (bench/aa_calibration.py measures how often). They never
    # fail it; they pass when the spread the 3 calibrate runs measured rules a 10% regression
    # out, else (a spread of 2% with 2 degrees of freedom leaves +-11%) the gate says it could
    # not judge: the interval, which holds no change, and what would decide it, or the blocking
    # rule (drift along a run, two groups) that left it unjudged
    result = run_cli("compare", "base", "same", "--metric", "time", "--fail-on", "regression",
                     "--threshold", "10%", db=ab_db)
    if result.returncode == 125 and not _names_a_load(result):
        assert "--fail-on regression: undecided:" in result.stderr and "nap time (same)" in result.stderr
        found = re.search(r"interval \[([-+.\w]+)%, ([-+.\w]+)%\]", result.stderr)
        if found is None:   # drift or two groups that could move it across "no change": it says which
            assert "not judged" in result.stderr, result.stdout + result.stderr
            return
        low, high = (float(x) for x in found.groups())
        moved = re.search(r"moved by the ([.\w]+)% its runs' drift or two groups", result.stderr)
        if moved is not None:   # the interval clears 10%, by less than its runs' drift could move it
            assert low > -10 and low - 1.05 * float(moved.group(1)) <= -10, result.stderr
        else:
            assert low < 0 < high, result.stderr
        assert "does not rule out a regression of 10%" in result.stderr, result.stderr
        assert "record more" in result.stderr or "perflab run" in result.stderr or "calibrate" in result.stderr
    else:
        _passed(result)


def test_several_candidates_against_one_baseline(ab_db):
    result = run_cli("compare", "base", "same", "slow", "--metric", "time", "--format", "markdown",
                     db=ab_db, check=True)
    assert "base" in result.stdout and "same" in result.stdout and "slow" in result.stdout


@pytest.mark.parametrize("fmt", ["mmtests", "lkp", "benchstat", "speedup", "markdown", "json", "csv"])
def test_every_format_renders(ab_db, fmt):
    result = run_cli("compare", "base", "slow", "--format", fmt, db=ab_db)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()


def test_compare_errors(ab_db):
    cases = [
        (["compare", "base"], "needs a baseline and at least one candidate"),
        (["compare", "base", "nosuch"], "no run with id or label 'nosuch'"),
        (["compare", "base", "slow", "--filter", "benchmark"], "bad --filter"),
        (["compare", "base", "slow", "--filter", "benchmark=other"], "nothing to compare"),
        (["compare", "base", "slow", "--threshold", "abc", "--fail-on", "regression"], "bad --threshold"),
        (["compare", "base", "slow", "--noise-floor", "x"], "bad --noise-floor 'x'"),
        (["compare", "base", "slow", "--fdr", "2"], "Invalid value for '--fdr': 2.0 is not in the range 0<x<1"),
    ]
    for args, message in cases:
        result = run_cli(*args, db=ab_db)
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (args, result.stderr)


def test_one_command_each_under_different_names_pairs_up(sqlite_db):
    # ./tool vs ./tool-new: one benchmark a run, named by its command
    for label, seconds in (("old", "0.01"), ("new", "0.02")):
        run_cli("run", "-q", "-n", "3", "--label", label, "--", "sleep", seconds, db=sqlite_db, check=True)
    data = json.loads(run_cli("compare", "old", "new", "--metric", "time", "--format", "json",
                              db=sqlite_db, check=True).stdout)
    [row] = data["rows"]
    assert row["benchmark"] == "sleep 0.01" and row["base"]["n"] == 3
    [candidate] = row["candidates"]
    assert candidate["n"] == 3 and candidate["comparison"]["change_pct"] < 0  # twice as long: worse
    assert "new's benchmark 'sleep 0.02' compared with old's 'sleep 0.01'" in data["warnings"]


def test_calibrate_measures_run_to_run_variance_and_compare_uses_it(tmp_path):
    db = str(tmp_path / "perflab.db")
    out = run_cli("calibrate", "-k", "3", "-n", "6", "--name", "nap", "--", "sleep", "0.002", db=db, check=True)
    assert "between runs (CoV)" in out.stdout and "nap" in out.stdout
    assert len([r for r in run_cli("runs", db=db, check=True).stdout.splitlines() if "calibrate" in r]) == 3
    for label in ("base", "new"):
        run_cli("run", "-n", "6", "--label", label, "--name", "nap", "-q", "--", "sleep", "0.002", db=db, check=True)
    text = run_cli("compare", "base", "new", "--metric", "time", db=db, check=True).stdout
    assert "separate runs: run-to-run spread" in text and "from replicate runs, 3 of them" in text
    # without replicates nothing is known of the host: perflab's default prior, said so with
    # the command that teaches it (docs/separate-runs.md)
    other = str(tmp_path / "other.db")
    for label in ("base", "new"):
        run_cli("run", "-n", "6", "--label", label, "--name", "nap", "-q", "--", "sleep", "0.002", db=other, check=True)
    unknown = run_cli("compare", "base", "new", db=other, check=True).stdout
    assert "default prior for wall time: teach this host with 'perflab calibrate'" in unknown
    # more runs of the same command, each under a label of its own (A/A pairs a1 b1, a2 b2,
    # ...): replicates of one another, the two compared left out
    for label in ("a2", "b2"):
        run_cli("run", "-n", "6", "--label", label, "--name", "nap", "-q", "--", "sleep", "0.002", db=other, check=True)
    text = run_cli("compare", "base", "new", "--metric", "time", db=other, check=True).stdout
    assert "from replicate runs, 2 of them" in text and "is part of the test" in text


def test_calibrate_usage_errors(tmp_path):
    db = str(tmp_path / "perflab.db")
    for args, message in ((["-k", "1", "--", "true"], "1 is not in the range 2<=x<=10000"),
                          (["-n", "2", "--resume", "1"], "resume"),
                          (["-n", "2", "--label", "x", "--", "true"], "sets the label"), ([], "needs what to run")):
        result = run_cli("calibrate", *args, db=db)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
        assert message is None or message in result.stderr


def test_a_run_compared_with_itself_is_named(ab_db):
    result = run_cli("compare", "base", "base", "--metric", "time", db=ab_db, check=True)
    assert "is the baseline's own run" in result.stdout and "%*" not in result.stdout


def test_points_of_one_run_compare_against_one_of_them(tmp_path):
    """Seed 000 compares "patched" with "no breakpoints", points of one sweep: --base KEY=VALUE."""
    db = str(tmp_path / "perflab.db")
    # 10 ms against 50 ms: the slower point stays more than 2x slower with up to 30 ms of start-up under load
    run_cli("run", "-n", "8", "-q", "--label", "sweep", "--name", "nap", "-p", "cs=1,5",
            "--", "sleep", "0.0{cs}", db=db, check=True)
    data = json.loads(run_cli("compare", "sweep", "--base", "cs=1", "--metric", "time", "--format", "json",
                              db=db, check=True).stdout)
    assert [r["label"] for r in data["runs"]] == ["cs=1", "cs=5"]
    [row] = data["rows"]
    cell = row["candidates"][0]["comparison"]
    assert row["params"] == {} and cell["verdict"] == "regression" and cell["change_pct"] < -100
    assert not any("separate runs" in w for w in data["warnings"])  # one run: no run-to-run variance
    for args, message in ((["--base", "cs=3"], "no point with cs=3 (its cs values: 1, 5)"),
                          (["--base", "cs"], "expected KEY=VALUE"), (["sweep", "--base", "cs=1"], "name one run")):
        result = run_cli("compare", "sweep", *args, db=db)
        assert result.returncode == 2 and message in result.stderr, result.stderr


def test_primary_metric_by_default_the_others_on_request_and_the_gate_says_its_outcome(sqlite_db):
    for label in ("a", "b"):
        run_cli("run", "-q", "-n", "4", "--label", label, "--", "sleep", "0.01", db=sqlite_db, check=True)
    shown = run_cli("compare", "a", "b", "--fail-on", "regression", "--threshold", "50%", db=sqlite_db)
    blocks = [line for line in shown.stdout.splitlines() if "is better)" in line]
    assert len(blocks) == 1 and ": time (" in blocks[0], blocks          # a command's time, not user/system
    assert "other metrics not shown: system, user" in shown.stdout or \
        "other metrics not shown: user, system" in shown.stdout, shown.stdout
    # the gate says its outcome either way (a loaded machine can make one of two equal sleeps slower;
    # 4 samples of two separate runs on a host that knows nothing of its spread: undecided)
    outcome = {0: "passed: no significant regression of at least 50%", 1: "failed: ", 125: "undecided: "}
    assert f"--fail-on regression: {outcome[shown.returncode]}" in shown.stderr, shown.stderr
    every = run_cli("compare", "a", "b", "--all", db=sqlite_db, check=True).stdout
    assert sum(1 for line in every.splitlines() if "is better)" in line) == 3
    # warnings on stdout only; stderr has the gate's outcome alone (undecided: a line a row)
    assert "warning" not in shown.stderr
    assert len(shown.stderr.strip().splitlines()) == (2 if shown.returncode == 125 else 1), shown.stderr


def test_runs_that_share_no_point_say_so_in_one_line(sqlite_db):
    for label, values in (("small", "1,2"), ("large", "3,4")):
        run_cli("run", "-q", "-n", "2", "--label", label, "-p", f"n={values}", "--shell", "--", "sleep 0.00{n}",
                db=sqlite_db, check=True)
    result = run_cli("compare", "small", "large", db=sqlite_db)
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert "small and large share no point" in lines[0] and "--base KEY=VALUE" in result.stderr, lines
