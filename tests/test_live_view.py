"""The live view of `perflab ab` and of `perflab run` with several commands, on a real
terminal: the real CLI under a pseudo-terminal (os.openpty), a short real pair."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import termios
import time

from conftest import PERFLAB

_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")   # rich's colours and cursor moves
_VERDICTS = ("sampling", "improvement", "regression", "no change", "undecided")


def _in_a_terminal(*args: str, db: str, timeout: float = 120) -> tuple[int, list[str]]:
    """Run the CLI with stdin, stdout and stderr on a 200x50 pseudo-terminal; its exit
    code and every line it wrote there (escapes removed, the live view's included)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("PERFLAB_DB", "NO_COLOR", "COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    process = subprocess.Popen([*PERFLAB, "--db", db, *args], stdin=slave, stdout=slave, stderr=slave,
                               env=env, start_new_session=True)
    os.close(slave)
    written = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:   # EIO: every holder of the terminal's other end has closed it
                break
            if not chunk:
                break
            written += chunk
        else:
            raise AssertionError(f"perflab {' '.join(args)} did not end in {timeout} s")
        code = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    text = _ESCAPE.sub("", written.decode(errors="replace"))
    return code, [line.strip() for line in re.split(r"[\r\n]+", text) if line.strip()]


def _live_rows(lines: list[str], name: str) -> list[str]:
    """The live view's rows of one command: name, n, a centre with a unit, its interval."""
    row = re.compile(rf"^{re.escape(name)}: n=\d+  median [0-9.]+ (s|ms|us|µs|ns)( {{2}}95% CI \[[0-9.]+, [0-9.]+\])?$")
    return [line for line in lines if row.match(line)]


def test_ab_shows_each_command_and_the_current_decision_while_it_samples(sqlite_db):
    args = ["ab", "--base", "sleep 0.002", "--cand", "sleep 0.004", "-M", "20", "--seed", "3"]
    code, lines = _in_a_terminal(*args, db=sqlite_db)
    assert code in (0, 1, 125), lines
    for name in ("sleep 0.002", "sleep 0.004"):
        rows = _live_rows(lines, name)
        assert rows and any("95% CI [" in row for row in rows), lines
    decisions = [line for line in lines if line.startswith("decision: ")]
    assert decisions and all(line.split(": ")[1].startswith(_VERDICTS) for line in decisions), decisions
    assert any(re.search(r"[+-][0-9.]+% \(\+ = better\), 95% CI \[", line) for line in decisions), decisions
    # the answer itself stays once the view is gone
    assert any(line.startswith(_VERDICTS[1:]) and "cand 'sleep 0.004' vs base 'sleep 0.002'" in line
               for line in lines), lines

    code, quiet = _in_a_terminal(*args, "-q", db=sqlite_db)
    assert code in (0, 1, 125), quiet
    assert not _live_rows(quiet, "sleep 0.002") and not _live_rows(quiet, "sleep 0.004")
    assert not any(line.startswith("decision: ") or "━" in line for line in quiet), quiet
    assert any("cand 'sleep 0.004' vs base 'sleep 0.002'" in line for line in quiet), quiet


def test_run_of_several_commands_shows_each_ones_running_median(sqlite_db):
    code, lines = _in_a_terminal("run", "-n", "20", "sleep 0.002", "sleep 0.004", db=sqlite_db)
    assert code == 0, lines
    for name in ("sleep 0.002", "sleep 0.004"):
        assert any(row.startswith(f"{name}: n=20  median ") for row in _live_rows(lines, name)), lines
    assert not any(line.startswith("decision: ") for line in lines)   # no stop rule, no decision

    code, quiet = _in_a_terminal("run", "-q", "-n", "20", "sleep 0.002", "sleep 0.004", db=sqlite_db)
    assert code == 0, quiet
    # -q: no view, no bar, no summary; at most a warning about the machine
    assert all(line.startswith("perflab: warning: ") for line in quiet), quiet
