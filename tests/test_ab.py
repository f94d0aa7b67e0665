"""perflab ab: two commands interleaved until the sequential test decides."""

import json
import os
import signal
import subprocess

import pytest

from test_durability import _wait_for_samples

from conftest import PERFLAB, run_cli


def _spec(db, run="1"):
    return json.loads(run_cli("export", run, db=db, check=True).stdout)["run"]["spec"]


def test_a_clear_regression_is_decided_quickly_and_exits_1(sqlite_db):
    result = run_cli("ab", "--base", "sleep 0.01", "--cand", "sleep 0.03", "-q", db=sqlite_db)
    assert result.returncode == 1, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith("regression: cand 'sleep 0.03' vs base 'sleep 0.01'") and "95% CI" in first
    assert "error rate: at most 0.05" in result.stdout
    spec = _spec(sqlite_db)
    decision = spec["ab"]["decision"]
    # the rule (stats/sequential_ab.py): significant (the CS excludes 0) and the estimate beyond
    # the threshold; the CS itself need not clear the threshold (0.88% seen on a loaded machine)
    # the one sign convention: % with + = better, so a slower candidate is negative
    assert decision["verdict"] == "regression" and decision["ci_pct"][1] < 0 and decision["estimate_pct"] < -1.0
    assert f"{decision['estimate_pct']:+.2f}% (+ = better)" in first
    assert spec["stopped"]["rounds"] == decision["n"] < 200   # stopped early, at the decision
    assert spec["ab"]["settings"]["threshold_pct"] == 1.0
    # the run is an ordinary run of two commands: compare works inside it
    report = run_cli("compare", "1", "--metric", "time", db=sqlite_db, check=True).stdout
    assert "sleep 0.03" in report


def test_at_the_limit_an_a_a_pair_is_never_a_regression(sqlite_db):
    result = run_cli("ab", "--base", "true", "--cand", "true", "-m", "3", "-M", "4", "-q", db=sqlite_db)
    assert result.returncode in (0, 125), result.stdout + result.stderr
    decision = _spec(sqlite_db)["ab"]["decision"]
    assert decision["verdict"] in ("undecided", "no change") and decision["n"] == 4
    if result.returncode == 125:
        assert result.stdout.startswith("undecided:")


def test_ab_takes_a_shell_as_run_does(sqlite_db):
    result = run_cli("ab", "--shell=bash", "--base", "sleep 0.01 &>/dev/null", "--cand", "sleep 0.03 &>/dev/null",
                     "-q", db=sqlite_db)
    assert result.returncode == 1 and "bash syntax" not in result.stderr, result.stderr
    assert _spec(sqlite_db)["plans"][0]["workload"]["shell"].endswith("/bash")


def test_ab_accepts_a_percentage_with_or_without_the_sign(sqlite_db):
    for text in ("50%", "50"):
        result = run_cli("ab", "--base", "sleep 0.01", "--cand", "sleep 0.03", "--threshold", text, "-q",
                         db=sqlite_db)
        assert result.returncode == 1 and "beyond the 50% threshold" in result.stdout, result.stdout


@pytest.mark.parametrize("args, message", [
    (["--base", "sleep 0.01"], "ab needs two commands"),
    (["--cand", "sleep 0.01"], "ab needs two commands"),
    (["--base", "true", "--cand", "true", "-m", "10", "-M", "5"], "-M/--max-runs 5 is below -m/--min-runs 10"),
    (["--base", "true", "--cand", "true", "--threshold", "abc"], "bad --threshold 'abc'"),
    (["--base", "true", "--cand", "true", "--threshold", "0"], "--threshold must be a percentage above 0"),
    (["--base", "true", "--cand", "true", "--max-time", "x"], "bad --max-time 'x'"),
    (["--base", "sleep 0.01", "--cand", "sleep 0.01 && true"], "'&&' is shell syntax, and commands run without "
                                                               "a shell: did you mean --shell?"),
])
def test_bad_ab_input_is_one_line_exit_2(sqlite_db, args, message):
    result = run_cli("ab", *args, db=sqlite_db)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr


@pytest.mark.long   # 8-20 s: started early (tests/scheduling.py)
def test_an_interrupted_ab_resumes_with_its_rule_and_stores_the_decision(sqlite_db):
    env = dict(os.environ)
    env.pop("PERFLAB_DB", None)
    # an A/A with a 0.01% threshold cannot be decided early (no interval is that narrow), so
    # the run is still sampling when interrupted (a decidable pair could end before the signal)
    proc = subprocess.Popen([*PERFLAB, "--db", sqlite_db, "ab", "-q", "--base", "sleep 0.05", "--cand",
                             "sleep 0.05", "--threshold", "0.01%", "-M", "60"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL)
    _wait_for_samples(sqlite_db, 4)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert _spec(sqlite_db)["ab"]["decision"] is None
    run_cli("run", "-q", "--resume", "1", db=sqlite_db, check=True)
    spec = _spec(sqlite_db)
    assert spec["ab"]["decision"]["n"] <= 60 and spec["ab"]["decision"]["verdict"] in (
        "undecided", "no change", "regression", "improvement")
    assert spec["ab"]["settings"]["max_runs"] == 60


def test_ab_decides_on_the_metric_asked(sqlite_db):
    """--metric user: the test reads user CPU time (a 4x longer loop), not wall time, and the
    run remembers which; the decision says what it tested."""
    loop = "i=0; while [ $i -lt {n} ]; do i=$((i+1)); done"
    result = run_cli("ab", "--shell", "--base", loop.format(n=20000), "--cand", loop.format(n=80000),
                     "--metric", "user", "--threshold", "10%", "-q", db=sqlite_db)
    assert result.returncode == 1 and " in user CPU time: " in result.stdout.splitlines()[0], result.stdout
    assert "the CI excludes 0 and the estimate lies beyond the 10% threshold" in result.stdout
    assert _spec(sqlite_db)["ab"]["settings"]["metric"] == "user"
    bad = run_cli("ab", "--base", "true", "--cand", "true", "--metric", "rss", db=sqlite_db)
    assert bad.returncode == 2 and "--metric" in bad.stderr
