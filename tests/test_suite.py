"""Suite files: loading, machine-relative sweeps, errors that name the line, running."""

import json
import os
from pathlib import Path

import pytest

from perflab.model.errors import UsageError
from perflab.workloads.suite import load_suite

from conftest import run_cli

GOOD = """\
[suite]
description = "two commands"
repetitions = 3

[[benchmark]]
workload = "command"
name = "sort"
command = "seq {n} | sort -n > /dev/null"
params = { n = "1000,2000" }

[[benchmark]]
workload = "command"
name = "echo"
command = ["echo", "{k}"]
repetitions = 2
metrics = ["time"]
params = { k = "1..ncpus" }
"""


def _write(tmp_path, text, name="suite.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_load_expands_machine_variables(tmp_path):
    suite = load_suite(_write(tmp_path, GOOD), variables={"ncpus": 4})
    assert suite.description == "two commands"
    sort, echo = suite.entries
    assert sort.sweep == {"n": [1000, 2000]} and sort.repetitions == 3 and sort.line == 5
    assert echo.sweep == {"k": [1, 2, 3, 4]} and echo.repetitions == 2 and echo.metrics == ["time"]
    assert echo.line == 11


@pytest.mark.parametrize("text, line, message", [
    ('[[benchmark]]\nworkload = "nosuch"\n', 2, "unknown workload 'nosuch'"),
    ('[[benchmark]]\nworkload = "command"\ncommand = "true"\nfoo = 1\n', 4, "unknown key 'foo'"),
    ('[[benchmark]]\nworkload = "command"\ncommand = "true"\n\n[[benchmark]]\n'
     'workload = "command"\ncommand = "true"\nparams = { n = "5..1" }\n', 8, "parameter n"),
    ('[[benchmark]]\nworkload = "command"\ncommand = "true {x}"\n', 3, "unknown placeholder {x}"),
    ('[[benchmark]]\nworkload = "command"\ncommand = "true"\nrepetitions = 0\n', 4, "repetitions (-n) must be"),
    ('[[benchmark]]\nworkload = "command"\ncommand = "true"\nmetrics = ["ops"]\n', 4, "no metric 'ops'"),
    ('[suite]\nrepeat = 3\n[[benchmark]]\nworkload = "command"\ncommand = "true"\n', 2, "unknown key 'repeat'"),
    ('[suite]\ndescription = "none"\n', 1, "no [[benchmark]] entries"),
    ('[[benchmark]]\ncommand = ["true"]\n', 1, "needs workload"),
])
def test_errors_name_the_line(tmp_path, text, line, message):
    path = _write(tmp_path, text)
    with pytest.raises(UsageError) as error:
        load_suite(path)
    assert str(error.value).startswith(f"{path}:{line}: ")
    assert message in str(error.value)


def test_bad_toml(tmp_path):
    path = _write(tmp_path, "[[benchmark]\nworkload = 1\n")
    with pytest.raises(UsageError, match="not valid TOML.*line 1"):
        load_suite(path)


def test_suite_runs_as_one_run_with_several_benchmarks(tmp_path):
    db = str(tmp_path / "db")
    result = run_cli("run", str(_write(tmp_path, GOOD)), "--label", "s", db=db)
    assert result.returncode == 0, result.stderr
    samples = json.loads(run_cli("export", "s", db=db, check=True).stdout)["samples"]
    ncpus = len(os.sched_getaffinity(0))
    sort = [s for s in samples if s["benchmark"] == "sort" and s["metric"] == "time"]
    echo = [s for s in samples if s["benchmark"] == "echo"]
    assert len(sort) == 2 * 3
    assert len(echo) == ncpus * 2 and {s["metric"] for s in echo} == {"time"}  # metrics kept
    assert "sort" in result.stdout and "echo" in result.stdout


def test_bad_suite_writes_nothing(tmp_path):
    db = tmp_path / "db"
    path = _write(tmp_path, '[[benchmark]]\nworkload = "command"\ncommand = "true"\nparams = { n = "x..y" }\n')
    result = run_cli("run", str(path), db=str(db))
    assert result.returncode == 2 and f"{path}:4:" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not db.exists()


def test_suite_refuses_command_options(tmp_path):
    path = _write(tmp_path, GOOD)
    result = run_cli("run", str(path), "-p", "n=1", db=str(tmp_path / "db"))
    assert result.returncode == 2 and "cannot change a suite" in result.stderr
    result = run_cli("run", str(path), "--shell", db=str(tmp_path / "db"))
    assert result.returncode == 2 and "--shell applies to commands" in result.stderr


def test_missing_suite_file(tmp_path):
    result = run_cli("run", str(tmp_path / "nope.toml"), db=str(tmp_path / "db"))
    assert result.returncode == 2 and "cannot read suite" in result.stderr


@pytest.mark.parametrize("path", sorted((Path(__file__).parent.parent / "suites").glob("*.toml")),
                         ids=lambda p: p.name)
def test_shipped_suites_are_valid(path):
    suite = load_suite(path)
    assert suite.description and suite.entries


def test_a_suite_names_the_block_title_and_row_of_its_comparison(tmp_path):
    """mmtests' names for a sweep's blocks: title over the parameters a block holds constant,
    and the parameter that labels its rows."""
    from conftest import run_cli
    suite = tmp_path / "naps.toml"
    suite.write_text('[[benchmark]]\nworkload = "command"\nname = "nap"\ncommand = "sleep 0.00{ms}"\n'
                     'params = { ms = [1, 2], kind = ["short"] }\nrepetitions = 3\n'
                     'title = "nap-{kind}"\nrow = "ms"\n')
    db = str(tmp_path / "db")
    for label in ("a", "b"):
        run_cli("run", str(suite), "-q", "--label", label, db=db, check=True)
    text = run_cli("compare", "a", "b", "--metric", "time", db=db, check=True).stdout
    assert text.startswith("nap-short: time") and "  ms  " in text.splitlines()[1] + "  "
    bad = tmp_path / "bad.toml"
    bad.write_text('[[benchmark]]\nworkload = "command"\ncommand = "true"\nparams = { n = [1] }\nrow = "m"\n')
    result = run_cli("run", str(bad), "-q", db=db)
    assert result.returncode == 2 and "row 'm' is not a parameter of this entry (n)" in result.stderr
