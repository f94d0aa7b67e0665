"""`--db` names a database file or URL, or is refused in one line (exit 2), creating nothing."""

import os

import pytest

from conftest import run_cli


@pytest.mark.parametrize(("db", "message"), [
    ("", "--db needs a database file or URL; leave it out for the default"),
    ("::::", "bad --db '::::': neither a file path nor a URL"),
    ("sqlite:", "bad --db 'sqlite:': neither a file path nor a URL"),
])
def test_a_db_that_is_neither_a_path_nor_a_url_is_refused(tmp_path, db, message):
    for args in (["runs"], ["run", "-q", "-n", "1", "--", "true"]):
        result = subprocess_in(tmp_path, "--db", db, *args)
        assert result.returncode == 2 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert os.listdir(tmp_path) == []   # no file of that name, no default store written there


def test_a_db_in_a_missing_directory_is_named_by_runs(tmp_path):
    missing = tmp_path / "nonexistent" / "dir" / "x.db"
    result = run_cli("runs", db=str(missing))
    assert result.returncode == 2 and f"no such directory {missing.parent}" in result.stderr, result.stderr
    assert not missing.parent.exists()
    # a missing file in a directory that exists is a store with no runs yet, as before
    assert run_cli("runs", db=str(tmp_path / "new.db")).returncode == 0


def subprocess_in(cwd, *args):
    import subprocess
    import sys
    env = dict(os.environ, XDG_DATA_HOME=str(cwd / "xdg-unused"))
    env.pop("PERFLAB_DB", None)
    return subprocess.run([sys.executable, "-m", "perflab.cli.main", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
