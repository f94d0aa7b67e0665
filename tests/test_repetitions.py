"""-n, a suite's ``repetitions`` and a RunRequest's are one check with one message
(model.limits.check_repetitions): every path a count enters by says the same line, exit 2."""

import json
import os

import pytest

from perflab.model.errors import UsageError
from perflab.model.limits import MAX_REPETITIONS, check_repetitions, parse_repetitions
from perflab.model.run_request import RunOptions, RunRequest, Target

from conftest import run_cli

REFUSAL = f"repetitions (-n) must be a whole number from 1 to {MAX_REPETITIONS:,}, got "


def _suite(tmp_path, count: str) -> str:
    path = tmp_path / "suite.toml"
    path.write_text(f'[[benchmark]]\nworkload = "command"\ncommand = "true"\nrepetitions = {count}\n')
    return str(path)


def _request(tmp_path, count: int, *, in_options: bool) -> str:
    """A fleet worker's job document (what `perflab submit` queues) with a count set by hand."""
    document = RunRequest(target=Target(words=("true",), after_dashdash=True)).to_json()
    if in_options:
        document["options"]["repetitions"] = count
    else:
        document["repetitions"] = count
    path = tmp_path / "request.json"
    path.write_text(json.dumps(document))
    return str(path)


@pytest.mark.parametrize("count, shown", [("0", "0"), (str(MAX_REPETITIONS + 1), str(MAX_REPETITIONS + 1)),
                                          ("-3", "-3")])
def test_every_path_refuses_a_count_with_the_same_line(tmp_path, sqlite_db, count, shown):
    paths = {
        "run -n": ["run", "-n", count, "--", "true"],
        "run -r": ["run", "-r", count, "--", "true"],
        "submit -n": ["submit", "--host", "h", "-n", count, "--", "true"],
        "suite file": ["run", _suite(tmp_path, count)],
        "fleet request": ["run", "--request", _request(tmp_path, int(count), in_options=False)],
    }
    for path, args in paths.items():
        result = run_cli(*args, db=sqlite_db)
        where = f"{tmp_path / 'suite.toml'}:4: " if path == "suite file" else ""
        assert (result.returncode, result.stderr) == (2, f"perflab: error: {where}{REFUSAL}{shown}\n"), path
    options = run_cli("run", "--request", _request(tmp_path, int(count), in_options=True), db=sqlite_db)
    assert (options.returncode, options.stderr) == (2, f"perflab: error: {REFUSAL}{shown}\n")
    assert not os.path.exists(sqlite_db)   # refused before any store was made


def test_text_that_is_no_count_is_refused_with_the_same_words(tmp_path, sqlite_db):
    for text, shown in (("abc", "'abc'"), ("1.5", "'1.5'"), ("", "''"), ("9" * 5000, "9" * 20)):
        result = run_cli("run", "-n", text, "--", "true", db=sqlite_db)
        assert result.returncode == 2 and result.stderr.startswith(f"perflab: error: {REFUSAL}{shown}"), text
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    suite = run_cli("run", _suite(tmp_path, '"7"'), db=sqlite_db)   # TOML text is not a count
    assert suite.returncode == 2 and suite.stderr.endswith(f"{REFUSAL}'7'\n")


def test_the_model_and_the_cli_share_one_check():
    for value in (0, -1, MAX_REPETITIONS + 1):
        with pytest.raises(UsageError) as typed:
            check_repetitions(value)
        with pytest.raises(UsageError) as typed_text:
            parse_repetitions(str(value))
        with pytest.raises(UsageError) as options:
            RunOptions(repetitions=value)
        with pytest.raises(UsageError) as request:
            RunRequest(repetitions=value)
        assert str(typed.value) == str(typed_text.value) == str(options.value) == str(request.value)
    assert check_repetitions(MAX_REPETITIONS) == parse_repetitions(f" {MAX_REPETITIONS:_} ") == MAX_REPETITIONS
    for value in (True, 2.0, "3", None):
        with pytest.raises(UsageError, match="whole number"):
            check_repetitions(value)
