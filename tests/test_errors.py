"""Every user mistake: one clear line, the right exit code, nothing written."""

import os
import re
import sqlite3

import pytest

from perflab.store import Store

from conftest import run_cli


def _one_line(result):
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("perflab: error: ")
    assert "Traceback" not in result.stderr
    return lines[0]


@pytest.mark.parametrize("args, code, message", [
    (["run", "--", "no-such-program-xyz"], 2, "command not found: no-such-program-xyz"),
    (["run", "--", "./missing/tool"], 2, "command not found: ./missing/tool"),
    (["run", "-p", "size", "--", "true"], 2, "bad parameter 'size'"),
    (["run", "-p", "n=3..1", "--", "true"], 2, "is empty"),
    (["run", "--", "cat", "input-{size}.dat"], 2, "unknown placeholder {size}"),
    (["run", "--prepare", "make {target}", "--", "true"], 2, "unknown placeholder {target} in --prepare"),
    (["run", "-n", "0", "--", "true"], 2, "repetitions (-n) must be a whole number from 1 to 1,000,000, got 0"),
    (["run", "--timeout", "-1", "--", "true"], 2, "Invalid value for '--timeout': -1.0 is not in the range x>0"),
    (["run", "--cpu", "9999", "--", "true"], 2, "--cpu 9999 is not an online CPU"),
    (["run", "--cpu", "x-y", "--", "true"], 2, "bad --cpu"),
    (["run"], 2, "no command to run"),
    (["run", "-n", "x", "--", "true"], 2, "repetitions (-n) must be a whole number from 1 to 1,000,000, got 'x'"),
    (["run", "--repo", "/nonexistent", "--", "true"], 2, "--repo /nonexistent: no such directory"),
    # issue 16, defects 5 and 6
    (["run", "--timeout", "nan", "--", "true"], 2, "Invalid value for '--timeout': 'nan' is not a finite number"),
    (["run", "--timeout", "inf", "--", "true"], 2, "Invalid value for '--timeout': 'inf' is not a finite number"),
    (["run", "wis", "--duration", "nan"], 2, "Invalid value for '--duration': 'nan' is not a finite number"),
    (["run", "wis", "--duration", "inf"], 2, "Invalid value for '--duration': 'inf' is not a finite number"),
    (["run", "-p", "x=1..1e309", "--", "true"], 2, "range 1..inf:1 needs finite numbers"),
    (["run", "-p", "x=1..1000000", "--", "true"], 2,
     "the sweep has 1,000,000 points, more than 10,000"),
    (["run", "-p", "x=1..100000", "-p", "y=1..100000", "--force", "--", "true"], 2,
     "the sweep has 10,000,000,000 points, more than perflab can hold (10,000,000)"),
    (["run", "hackbench", "-p", "loops=" + "9" * 30], 2,
     "parameter loops: a 100-bit number is too large (the largest is 2**63-1)"),
    (["run", "-p", "x=1..1x", "--", "true"], 2, "cannot evaluate '1x'"),   # no SyntaxWarning
    (["run", "--", ""], 2, "empty command"),
    (["run", "--", "", "x"], 2, "empty command"),
    (["run", "--shell", "--", ""], 2, "empty command"),
    (["run", "--shell", "--", "  ", " "], 2, "empty command"),
])
def test_bad_run_arguments_write_nothing(tmp_path, args, code, message):
    db = tmp_path / "perflab.db"
    result = run_cli(*args, db=str(db))
    assert result.returncode == code, result.stderr
    assert message in _one_line(result)
    assert not db.exists()


def test_a_directory_is_not_a_command(tmp_path):
    result = run_cli("run", "--", str(tmp_path), db=str(tmp_path / "perflab.db"))
    assert result.returncode == 2
    line = _one_line(result)
    assert f"{tmp_path} is a directory, not a program" in line and "chmod" not in line


def test_a_suite_that_is_not_utf8_is_one_line(tmp_path):
    suite = tmp_path / "bad.toml"
    suite.write_bytes(b'[[benchmark]]\nworkload = "hackbench"\n# caf\xe9 \xff\xfe\n')
    result = run_cli("run", str(suite), db=str(tmp_path / "perflab.db"))
    assert result.returncode == 2
    assert f"cannot read suite {suite}: not UTF-8 text (byte 0xe9 at offset" in _one_line(result)
    assert not (tmp_path / "perflab.db").exists()


def test_a_long_run_states_its_size_first(tmp_path):
    result = run_cli("run", "-n", "2", "-p", "x=1..500", "--", "true",
                     db=str(tmp_path / "perflab.db"), timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("perflab: 500 points x 2 repetitions = 1,000 samples\n")


def test_not_executable(tmp_path):
    script = tmp_path / "tool"
    script.write_text("#!/bin/sh\n")
    result = run_cli("run", "--", str(script), db=str(tmp_path / "db"))
    assert result.returncode == 2 and "not executable" in _one_line(result)


def test_database_that_is_not_perflabs(tmp_path):
    foreign = tmp_path / "other.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    before = foreign.read_bytes()
    for args in (["run", "--", "true"], ["runs"], ["show", "1"]):
        result = run_cli(*args, db=str(foreign))
        assert result.returncode == 2
        assert "not a perflab database" in _one_line(result)
    assert foreign.read_bytes() == before

    text = tmp_path / "README"
    text.write_text("plain text\n")
    result = run_cli("runs", db=str(text))
    assert result.returncode == 2 and "not a perflab database" in _one_line(result)


def test_newer_database_is_an_environment_problem(tmp_path):
    db = tmp_path / "perflab.db"
    run_cli("run", "-n", "1", "-q", "--", "true", db=str(db), check=True)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE perflab_meta SET value='99' WHERE key='schema_version'")
    result = run_cli("runs", db=str(db))
    assert result.returncode == 3 and "newer perflab" in _one_line(result)


def test_unwritable_database(tmp_path):
    if os.geteuid() == 0:
        target = "/proc/perflab.db"  # not creatable even for root
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        target = str(locked / "perflab.db")
    result = run_cli("run", "--", "true", db=target)
    assert result.returncode == 3
    assert re.search("cannot (create|write) the database", _one_line(result))


def test_readers_on_a_missing_database(tmp_path):
    db = tmp_path / "none.db"
    for args in (["show", "1"], ["export", "1"]):
        result = run_cli(*args, db=str(db))
        assert result.returncode == 2 and "no perflab database" in _one_line(result)
    assert not db.exists()


def test_runs_on_a_missing_or_empty_database_lists_nothing(tmp_path):
    # as `ls` of an empty directory: no runs is an empty listing, not an error
    db = tmp_path / "none.db"
    result = run_cli("runs", db=str(db))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert not db.exists()  # a listing creates no database
    empty = tmp_path / "empty.db"
    Store(str(empty), create=True).close()
    result = run_cli("runs", db=str(empty))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_unknown_run(tmp_path):
    db = str(tmp_path / "perflab.db")
    run_cli("run", "-n", "1", "-q", "--", "true", db=db, check=True)
    result = run_cli("show", "nosuchlabel", db=db)
    assert result.returncode == 2 and "no run with id or label 'nosuchlabel'" in _one_line(result)


def test_default_database_location_follows_xdg(tmp_path):
    result = run_cli("run", "-n", "1", "-q", "--", "true", env={"XDG_DATA_HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "perflab" / "perflab.db").exists()
    env_db = tmp_path / "env.db"
    import subprocess
    import sys
    subprocess.run([sys.executable, "-m", "perflab.cli.main", "run", "-n", "1", "-q", "--", "true"],
                   env=dict(os.environ, PERFLAB_DB=str(env_db)), check=True, capture_output=True)
    assert env_db.exists()


def test_export_to_an_unwritable_path(tmp_path):
    db = str(tmp_path / "perflab.db")
    run_cli("run", "-n", "1", "-q", "--", "true", db=db, check=True)
    result = run_cli("export", "1", "-o", str(tmp_path / "no" / "such" / "x.json"), db=db)
    assert result.returncode == 2 and "cannot write" in _one_line(result)
