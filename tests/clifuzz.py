"""Running the perflab CLI in-process for the bad-input tests: exit code and stderr of
``perflab.cli.main.main(argv)`` as a user sees them, and any other exception (a traceback)
raised to the test."""

from __future__ import annotations

import contextlib
import io
import warnings
from dataclasses import dataclass

from perflab.cli.main import main


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stderr.strip().splitlines()


def invoke(argv: list[str]) -> Outcome:
    """``perflab ARGV`` in this process: any exception but SystemExit escapes (a traceback),
    and so does any Python warning (a numpy RuntimeWarning the user would see)."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with (warnings.catch_warnings(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err),
          contextlib.redirect_stdout(out)):
        warnings.simplefilter("error")
        try:
            main(list(argv))
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    return Outcome(code, out.getvalue(), err.getvalue())


def assert_one_line_refusal(argv: list[str], outcome: Outcome, codes: tuple[int, ...] = (2, 3)) -> None:
    """A bad invocation: exit 2 or 3, and one line on stderr that says so."""
    assert outcome.code in codes, (argv, outcome)
    assert len(outcome.lines) == 1 and outcome.lines[0].startswith("perflab: error: "), (argv, outcome.stderr)
    assert "Traceback" not in outcome.stderr
