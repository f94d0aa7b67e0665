"""`perflab run`'s own summary says when another load competed, as `show` and `compare` do."""

import subprocess
import sys

from conftest import run_cli


def test_the_run_summary_names_a_competing_load(sqlite_db):
    # a load of our own beside the run: a busy loop takes one of the machine's CPUs
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        result = run_cli("run", "-n", "20", "--label", "beside", "--", "sleep", "0.02", db=sqlite_db, check=True)
    finally:
        busy.kill()
        busy.wait()
    shown = run_cli("show", "beside", db=sqlite_db, check=True).stdout
    if "not measured" in shown:   # recorded without perflab's own cgroups: nothing to say
        assert "another load competed" not in result.stdout
        return
    assert "warning: another load competed" in shown, shown
    assert "warning: another load competed (outside perflab's cgroups" in result.stdout, result.stdout
