"""Several commands in one run: interleaved rounds, shuffle, resume, stop limits, exports,
--shell, pressure stalls, and compare inside the run."""

import json
import os
import signal

import pytest

from perflab.execute.runner import Runner, StopLimits
from perflab.execute.targets import plans_for
from perflab.formats.importers import parse_file
from perflab.model.run_request import Identity, RunOptions, RunRequest, Target
from perflab.render.progress import NullProgress
from perflab.store import Store
from test_durability import _start, _wait_for_samples

from conftest import run_cli


def _export(db, run="1"):
    return json.loads(run_cli("export", run, db=db, check=True).stdout)


def _times(db, run="1"):
    return [s for s in _export(db, run)["samples"] if s["metric"] == "time"]


def test_quoted_commands_alternate_inside_every_round(sqlite_db):
    run_cli("run", "-q", "-n", "4", "true", "sleep 0.001", db=sqlite_db)  # one argv: the words are one command
    run_cli("run", "-q", "-n", "4", "sleep 0.002", "sleep 0.001", db=sqlite_db, check=True)
    order = [(s["benchmark"], s["repetition"]) for s in _times(sqlite_db, "2")]
    assert order == [(b, r) for r in range(4) for b in ("sleep 0.002", "sleep 0.001")]
    spec = _export(sqlite_db, "2")["run"]["spec"]
    assert spec["interleaved"] is True and [p["workload"]["argv"] for p in spec["plans"]] == [
        ["sleep", "0.002"], ["sleep", "0.001"]]


def test_shuffle_is_balanced_per_round_and_recorded(sqlite_db):
    run_cli("run", "-q", "-n", "6", "--seed", "3", "-p", "k=1,2", "-c", "true {k}", "-c", "echo {k}",
            "--command-name", "t", "--command-name", "e", db=sqlite_db, check=True)
    rows = _times(sqlite_db)
    units = {("t", 1), ("t", 2), ("e", 1), ("e", 2)}
    rounds = [[(s["benchmark"], s["params"]["k"]) for s in rows if s["repetition"] == r] for r in range(6)]
    assert all(sorted(r) == sorted(units) for r in rounds)      # every unit once per round
    assert len({tuple(r) for r in rounds}) > 1                   # and the order changes
    plans = _export(sqlite_db)["run"]["spec"]["plans"]
    assert {p["options"]["seed"] for p in plans} == {3}


def test_resume_of_an_interrupted_several_command_run(sqlite_db):
    proc = _start(sqlite_db, "-q", "-n", "40", "sleep 0.03", "sleep 0.02")
    _wait_for_samples(sqlite_db, 6)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    run_cli("run", "-q", "--resume", "1", db=sqlite_db, check=True)
    rows = _times(sqlite_db)
    for name in ("sleep 0.03", "sleep 0.02"):
        assert sorted(s["repetition"] for s in rows if s["benchmark"] == name) == list(range(40))


def test_max_time_stops_at_a_round_end_and_says_why(sqlite_db):
    result = run_cli("run", "-M", "1000", "-m", "2", "--max-time", "1s", "sleep 0.01", "sleep 0.02",
                     db=sqlite_db, check=True)
    assert "stopped after" in result.stderr and "--max-time 1 s reached" in result.stderr
    rows = _times(sqlite_db)
    counts = {name: sum(s["benchmark"] == name for s in rows) for name in ("sleep 0.01", "sleep 0.02")}
    assert counts["sleep 0.01"] == counts["sleep 0.02"] >= 2 and counts["sleep 0.01"] < 1000
    stopped = _export(sqlite_db)["run"]["spec"]["stopped"]
    assert stopped["rounds"] == counts["sleep 0.01"] and "max-time" in stopped["reason"]


def test_a_stop_rule_sees_every_round_in_order(sqlite_db):
    seen = []

    def rule(samples):
        seen.append({key[0]: len(values) for key, values in samples.items()})
        return "three rounds" if len(seen) == 3 else None

    plans = plans_for(Target(commands=("true", "sleep 0")), sweep={}, options=RunOptions(repetitions=50),
                      repetitions=None)
    with Store(sqlite_db, create=True) as store:
        runner = Runner(store, plans, NullProgress(), lambda text: None, stop=StopLimits(rule=rule))
        run_id = runner.start(RunRequest(identity=Identity(label="rule")))
        assert seen == [{"true": n, "sleep 0": n} for n in (1, 2, 3)]
        assert store.runs.resolve(str(run_id)).request.stopped.reason == "three rounds"
        assert all(len(values) == 3 for values in runner.samples.values())


def test_exports_read_back_equal_the_stored_samples(sqlite_db, tmp_path):
    paths = {fmt: tmp_path / f"r.{fmt}" for fmt in ("json", "csv", "md")}
    run_cli("run", "-q", "-n", "3", "-p", "size=1,2", "-c", "sleep 0.00{size}", "-c", "true {size}",
            "--export-json", str(paths["json"]), "--export-csv", str(paths["csv"]),
            "--export-markdown", str(paths["md"]), db=sqlite_db, check=True)
    stored = {}
    for s in _times(sqlite_db):
        stored.setdefault((s["benchmark"], s["params"]["size"]), []).append(s["value"])
    parsed = parse_file("hyperfine", paths["json"])
    back = {(b.point.benchmark, b.point.params["size"]): [next(m.value for m in rep if m.metric == "time")
                                                        for rep in b.repetitions] for b in parsed.benchmarks}
    assert back == stored
    raw = json.loads(paths["json"].read_text())["results"]
    assert set(raw[0]) >= {"command", "mean", "stddev", "median", "user", "system", "min", "max", "times",
                           "exit_codes", "parameters"}
    assert raw[0]["parameters"] == {"size": "1"} and raw[0]["exit_codes"] == [0, 0, 0]
    assert paths["csv"].read_text().splitlines()[0] == \
        "command,mean,stddev,median,user,system,min,max,parameter_size"
    table = paths["md"].read_text().splitlines()
    assert table[0] == "| Command | Mean [ms] | Min [ms] | Max [ms] | Relative |" and len(table) == 6
    assert sum(line.endswith("| 1.00 |") for line in table) == 1


def test_shell_takes_a_shell_and_warns_of_bash_syntax_under_sh(sqlite_db):
    result = run_cli("run", "-n", "1", "--shell", "--", "sleep 0.01 &>/dev/null", db=sqlite_db)
    assert "uses bash syntax '&>'" in result.stderr and "--shell=bash" in result.stderr
    # dash backgrounds the sleep: the sample times about the shell's own start-up, and when
    # it is no longer than the measured start-up it is invalid, so the run fails honestly
    assert result.returncode == 0 or (result.returncode == 2 and "nothing is left to time" in result.stderr), \
        result.stderr
    result = run_cli("run", "-q", "-n", "1", "--shell=bash", "--", "sleep 0.01 &>/dev/null", db=sqlite_db,
                     check=True)
    assert "bash syntax" not in result.stderr
    plan = _export(sqlite_db, "2")["run"]["spec"]["plans"][0]
    assert plan["workload"]["shell"].endswith("/bash") and plan["shell_overhead"][0] > 0
    assert _times(sqlite_db, "2")[0]["value"] >= 0.005   # bash waits for the sleep; dash would not
    assert "prepare" in run_cli("run", "--help").stdout.split("--prepare", 1)[1][:200]


@pytest.mark.skipif(not os.path.exists("/proc/pressure/cpu"), reason="no PSI on this kernel")
def test_the_outside_load_is_recorded_per_sample(sqlite_db):
    run_cli("run", "-q", "-n", "3", "sleep 0.01", "true 1", db=sqlite_db, check=True)
    samples = _export(sqlite_db)["samples"]
    for metric in ("outside.cpu_us", "outside.memory_stall_us", "outside.io_stall_us", "outside.window_us"):
        values = [s["value"] for s in samples if s["metric"] == metric]
        assert len(values) == 6, metric
    assert all(s["value"] > 0 for s in samples if s["metric"] == "outside.window_us")
    # one line says how much another load competed, a warning only beyond its share
    text = run_cli("show", "1", db=sqlite_db, check=True).stdout
    assert "2 commands interleaved" in text
    line = [line for line in text.splitlines() if "another load" in line]
    assert len(line) == 1, line
    assert line[0].startswith(("another load (outside perflab's cgroups): ",
                               "warning: another load competed")), line
    assert f"of {os.cpu_count()} CPUs" in line[0], line


def test_compare_inside_one_run_against_the_first_or_a_reference(sqlite_db):
    run_cli("run", "-q", "-n", "6", "sleep 0.01", "sleep 0.03", "true 1", db=sqlite_db, check=True)
    report = json.loads(run_cli("compare", "1", "--metric", "time", "--format", "json",
                                db=sqlite_db, check=True).stdout)
    text = json.dumps(report)
    assert "sleep 0.03" in text and "true 1" in text
    result = run_cli("compare", "1", "--reference", "sleep 0.03", "--metric", "time", db=sqlite_db, check=True)
    assert result.stdout.index("sleep 0.03") < result.stdout.index("sleep 0.01")
    bad = run_cli("compare", "1", "--reference", "nosuch", db=sqlite_db)
    assert bad.returncode == 2 and "has no command 'nosuch'" in bad.stderr


@pytest.mark.parametrize("args, message", [
    (["-m", "5", "-M", "3", "sleep 0.01", "sleep 0.02"], "-M/--max-runs 3 is below -m/--min-runs 5"),
    (["-n", "3", "-M", "3", "sleep 0.01", "sleep 0.02"], "not both"),
    (["--max-time", "soon", "sleep 0.01", "sleep 0.02"], "bad --max-time 'soon'"),
    (["--command-name", "a", "sleep 0.01", "sleep 0.02"], "1 --command-name for 2 commands"),
    (["sleep 0.01", "sleep 0.01"], "two commands are named 'sleep 0.01'"),
    (["-c", "true", "--", "false"], "not both"),
    (["--", "sleep 0.01 &>/dev/null"], "did you mean --shell -- 'sleep 0.01 &>/dev/null'?"),
    # a quoted line is split into words without a shell: its shell syntax would reach the program
    (["-n", "3", "sleep 0.01 && true"], "'sleep 0.01 && true': '&&' is shell syntax, and commands run "
                                        "without a shell: did you mean --shell?"),
    (["sleep 0.01", "sleep 0.01 | cat"], "'|' is shell syntax"),
    (["-c", "true", "-c", "make -j4 >log"], "'>' is shell syntax"),
    (["cd /tmp", "true 1"], "command not found: cd: the shell builtin 'cd' needs a shell: did you mean --shell?"),
    (["LC_ALL=C sort x"], "the variable assignment 'LC_ALL=C' needs a shell: did you mean --shell?"),
])
def test_bad_several_command_input_is_one_line_exit_2(sqlite_db, args, message):
    result = run_cli("run", *args, db=sqlite_db)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert not os.path.exists(sqlite_db)   # refused before the database is touched


def test_shell_syntax_inside_quotes_is_an_argument_and_a_typo_is_not_a_shell_matter(sqlite_db):
    # a quoted '|' is grep's pattern, not a pipe: the line runs without a shell
    run_cli("run", "-q", "-n", "1", "grep -c '|' /dev/null", "true 1", "--ignore-failure", db=sqlite_db,
            check=True)
    assert {s["benchmark"] for s in _times(sqlite_db, "1")} == {"grep -c '|' /dev/null", "true 1"}
    result = run_cli("run", "-n", "1", "no-such-tool-xyz --fast", db=sqlite_db)
    assert result.returncode == 2 and "--shell" not in result.stderr
    assert result.stderr.strip() == \
        "perflab: error: command not found: no-such-tool-xyz (check the name, or give a path)"
    # with --shell the same line is the shell's
    run_cli("run", "-q", "-n", "1", "--shell", "sleep 0.001 && true", "sleep 0.002", db=sqlite_db, check=True)


def test_without_the_files_the_outside_reader_says_why_once(tmp_path):
    from perflab.execute.outside import Reader
    for reader in (Reader(tmp_path, proc=str(tmp_path / "no-proc")), Reader(None)):
        assert reader.read() is None and reader.since(None) is None
        assert reader.missing
